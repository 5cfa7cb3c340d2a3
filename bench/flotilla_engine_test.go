package bench_test

import "testing"

// BenchmarkFlotilla converts 1000 Flotillas with the rules alone, one op a
// batch, for profiles of the engine's work on rules inside list items
// (BenchmarkFlotillaSpeedup's hubspoke side without the baseline's
// garbage collection in its turns).
func BenchmarkFlotilla(b *testing.B) {
	c := flotillaRules(b)
	for _, d := range flotillaDirections {
		objs := flotillas(b, d.from, 1000)
		b.Run("dir="+d.name+"/batch=1000", func(b *testing.B) {
			benchBatch(b, c, objs, totalBytes(objs), d.to)
		})
	}
}
