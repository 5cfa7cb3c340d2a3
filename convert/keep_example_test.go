package convert_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/convert"
)

// A Go rule for a field only the spoke has, kept in the preserved
// annotation with Keep and put back with Restore: what spokeOnly does,
// written by hand.
func ExampleObject_Keep() {
	debug := convert.MustPath("spec.debug")
	r, err := convert.Funcs("debug",
		func(o *convert.Object) error { // v1alpha1 -> v1: the hub has no debug
			raw, ok, err := o.Delete(debug)
			if err != nil || !ok {
				return err
			}
			return o.Keep(debug, raw) // owned by v1alpha1, the version left
		},
		func(o *convert.Object) error { // v1 -> v1alpha1
			raw, ok, err := o.Restore(debug) // what v1alpha1 kept
			if err != nil || !ok {
				return err
			}
			if _, set, _ := o.Get(debug); set {
				return nil // an edit made through v1 wins
			}
			return o.Set(debug, raw)
		})
	if err != nil {
		panic(err)
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{r}}}})
	if err != nil {
		panic(err)
	}
	hub, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"debug":true}}`), "example.com/v1")
	fmt.Println(string(hub))
	back, _ := c.Convert(nil, hub, "example.com/v1alpha1")
	fmt.Println(string(back))
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"fields\":{\"/spec/debug\":true}}}"}},"spec":{"size":1}}
	// {"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"debug":true}}
}
