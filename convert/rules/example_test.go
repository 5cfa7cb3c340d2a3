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
    - enum: {from: spec.mode, values: {Fast: Performance}, hubValues: {Performance: Fast}}
`))
	fmt.Println(err)
	// Output:
	// conversion.yaml:10:85: spec.spokes[0].rules[0].enum.hubValues.Performance: hub value "Performance" is not hub-only: spoke value "Fast" maps to it
}
