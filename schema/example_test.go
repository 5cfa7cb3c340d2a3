package schema_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/schema"
)

func Example() {
	crd, err := schema.LoadFile("../examples/widget/crd.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	v := crd.Version("v1alpha1")
	n, err := v.Lookup("spec.replicas")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n.Type, n.ValueValidation.Format, *n.ValueValidation.Minimum)
	fmt.Println(crd.Pos(crd.SchemaPointer(v, []string{"spec", "replicas"})))

	obj, _ := schema.DecodeObject([]byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":-1,"colour":"red"}}`))
	for _, p := range v.Validate(obj) {
		fmt.Println(p)
	}
	// Output:
	// integer int32 0
	// ../examples/widget/crd.yaml:36
	// spec.colour: unknown field, the API server would prune it
	// spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0
}
