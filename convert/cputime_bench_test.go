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

// BenchmarkWidgetCPU reports the CPU time per converted Widget, which a
// busy machine disturbs far less than wall-clock time.
func BenchmarkWidgetCPU(b *testing.B) {
	objs, err := widgetgen.Generate(1000, widgetgen.Options{Version: "v1alpha1"})
	if err != nil {
		b.Fatal(err)
	}
	c, err := rules.LoadFile("../examples/widget/conversion.yaml")
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 1<<14)
	start := cpuNow()
	n := 0
	for b.Loop() {
		for _, o := range objs {
			if dst, err = c.Convert(dst[:0], o, "example.com/v1"); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(cpuNow()-start)/float64(n), "cpu-ns/object")
}
