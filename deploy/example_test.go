package deploy_test

import (
	"fmt"
	"log"
	"os"

	"github.com/hubspoke/hubspoke/deploy"
)

// Render the Widget example's deployment and list what it holds, in apply
// order. deploy.WriteYAML writes the same objects as YAML documents.
func Example() {
	in, err := deploy.LoadInputs([]string{"../examples/widget/crd.yaml"}, []string{"../examples/widget/conversion.yaml"}, os.ReadFile)
	if err != nil {
		log.Fatal(err)
	}
	objs, err := deploy.Render(in, deploy.Options{Certs: deploy.CertManager})
	if err != nil {
		log.Fatal(err)
	}
	ms, err := deploy.Unstructured(objs)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range ms {
		fmt.Println(m["kind"], m["metadata"].(map[string]any)["name"])
	}
	// Output:
	// Namespace hubspoke-system
	// ServiceAccount hubspoke-webhook
	// Issuer hubspoke-webhook-selfsigned
	// Certificate hubspoke-webhook-ca
	// Issuer hubspoke-webhook-ca
	// Certificate hubspoke-webhook
	// ConfigMap hubspoke-webhook-rules
	// Service hubspoke-webhook
	// Deployment hubspoke-webhook
	// PodDisruptionBudget hubspoke-webhook
	// CustomResourceDefinition widgets.example.com
}

// The memory a pod requests and is limited to, for reviews of up to 32 MiB.
func ExampleResources() {
	s := deploy.Resources(32 << 20)
	fmt.Printf("request %d Mi, limit %d Mi, GOMEMLIMIT %d bytes\n", s.MemoryRequest>>20, s.MemoryLimit>>20, s.GoMemLimit)
	// Output: request 160 Mi, limit 288 Mi, GOMEMLIMIT 271790892 bytes
}
