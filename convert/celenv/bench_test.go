package celenv_test

import (
	"testing"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
	"github.com/hubspoke/hubspoke/convert/rules"
)

// BenchmarkCEL converts 1000 realistic Widgets (the bench/ fixture, ~3 KB
// each) whose spec.replicas becomes the string spec.size, with the
// built-in intToString rule and with the same conversion as a cel rule,
// beside a plain rename (the engine's floor for a rule touching that
// field). ns/op is per 1000 objects. A cel rule evaluates both of its
// expressions per object (the inverse checks the value comes back).
func BenchmarkCEL(b *testing.B) {
	objs, err := widgetgen.Generate(1000, widgetgen.Options{Version: "v1alpha1"})
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, o := range objs {
		size += len(o)
	}
	for _, tt := range []struct{ name, rule string }{
		{"rule=rename", "    - rename: {from: spec.replicas, to: spec.size}\n"},
		{"rule=intToString", "    - intToString: {from: spec.replicas, to: spec.size}\n"},
		{"rule=cel", "    - cel: {from: spec.replicas, to: spec.size, toHub: string(self), fromHub: int(self)}\n"},
		{"rule=cel-struct", "    - cel: {from: spec.replicas, to: spec.size, toHub: '{\"count\": self, \"unit\": dyn(\"pods\")}', fromHub: int(self.count)}\n"},
	} {
		c, err := rules.Load("bench.yaml", []byte(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
`+tt.rule))
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, 0, 1<<14)
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, o := range objs {
					if dst, err = c.Convert(dst[:0], o, "example.com/v1"); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
