package jsonscan

import (
	"encoding/json"
	"testing"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
)

// BenchmarkWidgets validates 1000 generated Widgets (about 3 KB each, the
// objects of the engine's benchmarks) with Document and, for reference,
// with encoding/json.Valid. The scanner's stop bits are computed in each
// op, as the engine computes them for each object.
func BenchmarkWidgets(b *testing.B) {
	objs, err := widgetgen.Generate(1000, widgetgen.Options{Seed: 1, Version: "v1alpha1"})
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, o := range objs {
		size += len(o)
	}
	b.Run("impl=jsonscan", func(b *testing.B) {
		var s Scanner
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, o := range objs {
				s.Reset(o)
				if err := s.Document(EnvelopeDepth); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("impl=encoding-json", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			for _, o := range objs {
				if !json.Valid(o) {
					b.Fatal("invalid")
				}
			}
		}
	})
}
