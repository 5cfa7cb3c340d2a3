package convert_test

import (
	"fmt"
	"time"

	"github.com/hubspoke/hubspoke/convert"
)

func Example() {
	rename, _ := convert.Rename(convert.MustPath("spec.replicas"), convert.MustPath("spec.size"))
	timeout, _ := convert.Duration(convert.MustPath("spec.timeoutSeconds"), convert.MustPath("spec.timeout"), time.Second, convert.RoundReject)
	c, err := convert.New(convert.Definition{
		Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{rename, timeout}}},
	})
	if err != nil {
		panic(err)
	}
	in := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","resourceVersion":"7"},"spec":{"replicas":3,"timeoutSeconds":90,"note":1.50e3}}`)
	hub, err := c.Convert(nil, in, "example.com/v1")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(hub))
	back, _ := c.Convert(nil, hub, "example.com/v1alpha1")
	fmt.Println(string(back) == string(in))
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"7"},"spec":{"size":3,"timeout":"1m30s","note":1.50e3}}
	// true
}

func ExampleHubOnly() {
	paused, _ := convert.HubOnly(convert.MustPath("spec.paused"), nil)
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{paused}}}})
	spoke, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{},"spec":{"paused":true}}`), "example.com/v1alpha1")
	fmt.Println(string(spoke))
	hub, _ := c.Convert(nil, spoke, "example.com/v1")
	fmt.Println(string(hub))
	// Output:
	// {"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/paused\":true}}}"}},"spec":{}}
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{},"spec":{"paused":true}}
}

func ExampleError() {
	lm, _ := convert.ListToMap(convert.MustPath("spec.endpoints"), convert.MustPath("spec.endpoints"), "name", convert.KeyString, convert.OrderKeep)
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{lm}}}})
	_, err := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"endpoints":[{"name":"web"},{"name":"web"}]}}`), "example.com/v1")
	fmt.Println(err)
	// Output:
	// object ns/w (example.com/v1alpha1 -> example.com/v1) at /spec/endpoints/1: rule listToMap spec.endpoints (key name): duplicate key name="web" (also at index 0); a map cannot hold both, so nothing is overwritten
}

func ExampleFuncs() {
	// Go code on the raw object API, for what rules cannot express.
	double, _ := convert.Funcs("double-size",
		func(o *convert.Object) error {
			var n int
			if ok, err := o.Decode(convert.MustPath("spec.size"), &n); !ok || err != nil {
				return err
			}
			return o.Encode(convert.MustPath("spec.size"), n*2)
		},
		func(o *convert.Object) error {
			var n int
			if ok, err := o.Decode(convert.MustPath("spec.size"), &n); !ok || err != nil {
				return err
			}
			return o.Encode(convert.MustPath("spec.size"), n/2)
		})
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{double}}}})
	hub, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"size":2}}`), "example.com/v1")
	fmt.Println(string(hub))
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":4}}
}

// Keys holding ~ or / are escaped in JSON pointers, as RFC 6901 says.
func ExampleEscapePointerToken() {
	fmt.Println("/metadata/annotations/" + convert.EscapePointerToken("example.com/a~b"))
	key, err := convert.UnescapePointerToken("example.com~1a~0b")
	fmt.Println(key, err)
	// Output:
	// /metadata/annotations/example.com~1a~0b
	// example.com/a~b <nil>
}

func ExampleMissing() {
	// A *bool in the spoke, a bool in the hub: unset is false.
	enabled, _ := convert.Missing(convert.MustPath("spec.enabled"), []byte("false"), nil)
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{enabled}}}})
	for _, in := range []string{`{}`, `{"enabled":false}`} {
		hub, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{},"spec":`+in+`}`), "example.com/v1")
		fmt.Println(string(hub))
		back, _ := c.Convert(nil, hub, "example.com/v1alpha1")
		fmt.Println(string(back))
	}
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{},"spec":{"enabled":false}}
	// {"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{},"spec":{}}
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"presence\":{\"/spec/enabled\":true}}}"}},"spec":{"enabled":false}}
	// {"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{},"spec":{"enabled":false}}
}

func ExampleQuantity() {
	memory, _ := convert.Quantity(convert.QuantitySpec{From: convert.MustPath("spec.memory"), To: convert.MustPath("spec.memoryBytes"),
		Spoke: convert.QuantityString, Hub: convert.QuantityInteger})
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{memory}}}})
	for _, q := range []string{`"50Gi"`, `"1024Mi"`} {
		hub, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{},"spec":{"memory":`+q+`}}`), "example.com/v1")
		fmt.Println(string(hub))
	}
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{},"spec":{"memoryBytes":53687091200}}
	// {"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"exact\":{\"/spec/memory\":{\"value\":\"1024Mi\",\"as\":1073741824}}}}"}},"spec":{"memoryBytes":1073741824}}
}
