package crconvert_test

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/crconvert"
)

// Run an operator's existing typed conversion (WidgetV1alpha1 implements
// conversion.Convertible, WidgetV1 conversion.Hub) inside hubspoke.
func ExampleRule() {
	r, err := crconvert.Rule("widget-typed",
		func() conversion.Convertible { return &WidgetV1alpha1{} },
		func() conversion.Hub { return &WidgetV1{} })
	if err != nil {
		panic(err)
	}
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{r}}}})
	out, err := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","resourceVersion":"3"},"spec":{"replicas":2}}`), "example.com/v1")
	fmt.Println(string(out), err)
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"3"},"spec":{"size":2},"status":{}} <nil>
}
