package convert_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
	"github.com/hubspoke/hubspoke/convert/rules"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWidgetCPU reports the CPU time per converted Widget, in each
// direction, which a busy machine disturbs far less than wall-clock time.
func BenchmarkWidgetCPU(b *testing.B) {
	c, err := rules.LoadFile("../examples/widget/conversion.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []struct{ from, to string }{{"v1alpha1", "example.com/v1"}, {"v1", "example.com/v1alpha1"}} {
		objs, err := widgetgen.Generate(1000, widgetgen.Options{Version: d.from})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("from="+d.from, func(b *testing.B) {
			dst := make([]byte, 0, 1<<14)
			start := cpuNow()
			n := 0
			for b.Loop() {
				for _, o := range objs {
					if dst, err = c.Convert(dst[:0], o, d.to); err != nil {
						b.Fatal(err)
					}
					n++
				}
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(n), "cpu-ns/object")
		})
	}
}
