package suggest_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/suggest"
)

// A CRD whose v1 renamed v1alpha1's replicas: the suggestion, as init
// prints it.
func ExampleSuggest() {
	crd, err := schema.LoadFile("../examples/widget/crd.yaml")
	if err != nil {
		panic(err)
	}
	res, err := suggest.Suggest(crd, suggest.Options{})
	if err != nil {
		panic(err)
	}
	for _, s := range res.Spokes {
		for _, r := range s.Rules {
			fmt.Printf("%s: %s %s -> %s (TODO: %s)\n", s.Version, r.Kind, r.From, r.To, r.TODO)
		}
	}
	// Output:
	// v1alpha1: rename spec.replicas -> spec.size (TODO: a guess from the shape alone: confirm it)
}
