package rules_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/convert/rules"
)

func ExampleLoad() {
	c, err := rules.Load("conversion.yaml", []byte(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - rename: {from: spec.replicas, to: spec.size}
`))
	if err != nil {
		panic(err)
	}
	out, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"replicas":3}}`), "example.com/v1")
	fmt.Println(c.Versions(), string(out))
	// Output:
	// [v1 v1alpha1] {"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":3}}
}

func ExampleLoad_error() {
	_, err := rules.Load("conversion.yaml", []byte(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - enum: {from: spec.mode, values: {Fast: Performance, Quick: Performance}}
`))
	fmt.Println(err)
	// Output:
	// conversion.yaml:10:66: spec.spokes[0].rules[0].enum.values.Quick: hub value "Performance" is also the image of another spoke value (line 10); the mapping must be one-to-one to be inverted
}
