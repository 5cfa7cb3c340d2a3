package check_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

func Example() {
	crd, err := schema.LoadFile("../examples/widget/crd.yaml")
	if err != nil {
		panic(err)
	}
	rs, err := rules.ParseFile("../examples/widget/conversion.yaml")
	if err != nil {
		panic(err)
	}
	conv, err := rs.Converter()
	if err != nil {
		panic(err)
	}
	report := check.Static(crd, rs)
	report.Merge(check.Laws(context.Background(), crd, conv, check.Options{Objects: 50, Seed: 1}))
	_ = report.WriteText(os.Stdout)
	// Output:
	// ok: 0 errors, 0 warnings (14 static checks, 4 law runs on 200 generated objects, seed 1, v1 objects valid 50/50 (100.0%), v1alpha1 objects valid 50/50 (100.0%))
}

// The API server's treatment of a converted object: a null in a
// non-nullable field without a default is dropped, an unknown field is
// pruned, defaults are applied; check compares objects after it.
func ExampleCoerce() {
	crd, err := schema.Load("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              note: {type: string}
              mode: {type: string, default: Fast}
`))
	if err != nil {
		panic(err)
	}
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "a"},
		"spec":     map[string]any{"note": nil, "unknown": int64(1)}}
	if err := check.Coerce(crd.Version("v1"), obj); err != nil {
		panic(err)
	}
	b, _ := json.Marshal(obj)
	fmt.Println(string(b))
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"a"},"spec":{"mode":"Fast"}}
}
