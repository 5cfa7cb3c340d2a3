package doctor_test

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

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
	// The API server's answer to reads through v1alpha1, as a cluster gives it.
	widgets := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "example.com", Version: v, Resource: "widgets"}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets("v1"): "WidgetList", widgets("v1alpha1"): "WidgetList"})
	dyn.PrependReactor("*", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: ` +
			`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": service "widget-webhook" not found`))
	})
	clients := doctor.Clients{
		Kube:       fake.NewClientset(),
		Extensions: apiextfake.NewClientset(crd),
		Dynamic:    dyn,
	}
	report, err := doctor.Run(context.Background(), clients, "widgets.example.com", doctor.Options{})
	if err != nil {
		panic(err)
	}
	for _, f := range report.Findings {
		if f.Severity != doctor.SeverityError {
			continue
		}
		if f.Explanation != nil { // the API server's error, translated
			fmt.Printf("%s (%s)\n", f.Check, f.Explanation.ID)
		} else {
			fmt.Println(f.Check)
		}
	}
	fmt.Println("first:", report.Cause().Check)
	// Output:
	// crd.caBundle
	// service
	// conversion.live (service-not-found)
	// first: crd.caBundle
}
