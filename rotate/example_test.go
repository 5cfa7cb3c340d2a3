package rotate_test

import (
	"context"
	"fmt"
	"log"
	"os"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/rotate"
)

// A dry run of a CA rotation. The clients here are client-go's fakes
// holding what `hubspoke deploy --certs hubspoke` renders; against a
// cluster, build them from a rest.Config.
func Example() {
	in, err := deploy.LoadInputs([]string{"../examples/widget/crd.yaml"}, []string{"../examples/widget/conversion.yaml"}, os.ReadFile)
	if err != nil {
		log.Fatal(err)
	}
	objs, err := deploy.Render(in, deploy.Options{Certs: deploy.Hubspoke})
	if err != nil {
		log.Fatal(err)
	}
	var core, ext []runtime.Object
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Secret:
			core = append(core, o)
		case *apiextv1.CustomResourceDefinition:
			ext = append(ext, o)
		}
	}
	res, err := rotate.Rotate(context.Background(),
		rotate.Clients{Core: fake.NewClientset(core...), APIExtensions: apiextfake.NewClientset(ext...)},
		rotate.Options{Namespace: deploy.DefaultNamespace, Name: deploy.DefaultName, ForceCA: true, DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range res.Steps {
		fmt.Println(s.Name)
	}
	// Output:
	// new-ca
	// add-ca
	// switch-serving
	// drop-old-ca
}
