package convert_test

import (
	"encoding/json"
	"testing"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
	"github.com/hubspoke/hubspoke/convert/rules"
)

// BenchmarkWidget converts realistic ~3 KB Widgets (the bench/ fixture) one
// at a time; the floor is json.Valid plus a copy of the same bytes.
func BenchmarkWidget(b *testing.B) {
	objs, err := widgetgen.Generate(1000, widgetgen.Options{Version: "v1alpha1"})
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, o := range objs {
		size += len(o)
	}
	c, err := rules.LoadFile("../examples/widget/conversion.yaml")
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 1<<14)
	b.Run("impl=hubspoke", func(b *testing.B) {
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
	b.Run("impl=floor", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, o := range objs {
				if !json.Valid(o) {
					b.Fatal("invalid")
				}
				dst = append(dst[:0], o...)
			}
		}
	})
}
