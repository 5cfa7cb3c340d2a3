package bench_test

import (
	"fmt"
	"testing"
)

// TestAllocsDoNotGrowWithUntouchedFields holds the engine to its promise:
// converting a Widget allocates as many times whether its spec has 10 or
// 1000 fields that no rule touches.
func TestAllocsDoNotGrowWithUntouchedFields(t *testing.T) {
	c := hubspokeConverter(t)
	allocs := map[int]float64{}
	for _, extra := range []int{10, 1000} {
		obj := widgets(t, "v1alpha1", 1, extra)[0]
		buf := make([]byte, 0, 2*len(obj))
		var err error
		allocs[extra] = testing.AllocsPerRun(200, func() {
			if buf, err = c.Convert(buf[:0], obj, "example.com/v1"); err != nil {
				panic(fmt.Sprintf("convert: %v", err))
			}
		})
	}
	if allocs[1000] > allocs[10] {
		t.Errorf("allocations grow with untouched fields: %v allocs/op with 10 extra spec fields, %v with 1000", allocs[10], allocs[1000])
	}
}
