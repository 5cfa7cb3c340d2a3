package doctor_test

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hubspoke/hubspoke/doctor"
)

// Run takes client-go clients (doctor.NewClients builds them from a
// rest.Config); here fakes hold a CRD whose webhook Service was never
// created. The report's first error is the cause to fix first.
func ExampleRun() {
	port := int32(443)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true}, {Name: "v1", Served: true, Storage: true}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte("not a PEM"),
						Service: &apiextensionsv1.ServiceReference{Namespace: "default", Name: "widget-webhook", Port: &port}}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"},
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
	}
	clients := doctor.Clients{
		Kube:       fake.NewClientset(),
		Extensions: apiextfake.NewClientset(crd),
		Dynamic:    dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
	}
	report, err := doctor.Run(context.Background(), clients, "widgets.example.com", doctor.Options{})
	if err != nil {
		panic(err)
	}
	for _, f := range report.Findings {
		if f.Severity == doctor.SeverityError {
			fmt.Printf("%s: %s\n", f.Check, f.Message)
		}
	}
	fmt.Println("first:", report.Cause().Check)
	// Output:
	// crd.caBundle: caBundle holds no PEM certificate
	// service: Service default/widget-webhook, named in clientConfig.service, does not exist
	// first: crd.caBundle
}
