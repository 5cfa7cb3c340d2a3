package convert_test

import (
	"strings"
	"testing"
)

// TestAllocationsDoNotGrowWithUntouchedFields: fields no rule touches cost
// no allocation, however many there are.
func TestAllocationsDoNotGrowWithUntouchedFields(t *testing.T) {
	c := fuzzConverter(t)
	mk := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","labels":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"l` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `":"v"`)
		}
		b.WriteString(`}},"spec":{"replicas":3`)
		for i := range n {
			b.WriteString(`,"f` + strings.Repeat("y", i) + `":{"a":[1,2,"s\"t"]}`)
		}
		b.WriteString(`},"status":{}}`)
		return []byte(b.String())
	}
	small, large := mk(5), mk(500)
	dst := make([]byte, 0, 1<<20)
	allocs := func(in []byte) float64 {
		return testing.AllocsPerRun(200, func() {
			if _, err := c.Convert(dst[:0], in, "example.com/v1"); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b := allocs(small), allocs(large)
	if b > a {
		t.Errorf("allocations grow with untouched fields: %v for 5 fields, %v for 500", a, b)
	}
}

func BenchmarkConvertSmall(b *testing.B) {
	c := fuzzConverter(b)
	in := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3,"x":1},"status":{}}`)
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Convert(dst[:0], in, "example.com/v1"); err != nil {
			b.Fatal(err)
		}
	}
}
