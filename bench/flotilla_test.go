package bench_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/crflotilla"
)

// Flotillas: rules inside list items. Each object has 20 ships; the rules
// rename a field in every ship (spec.ships[*].img -> image) and reshape one
// field (a cron string split into its five fields). The baseline is the same
// conversion written as typed controller-runtime Go (internal/crflotilla).

var flotillaDirections = []struct {
	name, from, to string
}{
	{name: "v1alpha1-to-v1", from: "v1alpha1", to: "example.com/v1"},
	{name: "v1-to-v1alpha1", from: "v1", to: "example.com/v1alpha1"},
}

func flotillaRules(tb testing.TB) *convert.Converter {
	tb.Helper()
	c, err := rules.Load("flotilla.yaml", []byte(crflotilla.Rules))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func flotillaTyped(tb testing.TB) *crflotilla.Converter {
	tb.Helper()
	c, err := crflotilla.NewConverter()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// flotillas generates n objects of version (v1alpha1 or v1), deterministic.
// Their metadata and status are those of the Widgets of the other
// benchmarks (labels, annotations, owner references, finalizers, managed
// fields, conditions), as the API server sends objects to a webhook.
func flotillas(tb testing.TB, version string, n int) [][]byte {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, uint64(n)))
	like := widgets(tb, "v1", n, 0)
	engines := []string{"Diesel", "Electric", "Hybrid"}
	objs := make([][]byte, n)
	for i := range objs {
		ships := make([]any, 20)
		for j := range ships {
			s := map[string]any{"name": fmt.Sprintf("ship-%02d", j), "engine": engines[r.IntN(3)], "crew": 1 + r.IntN(400)}
			img := fmt.Sprintf("registry.example.com/fleet/ship-%d:%d.%d", r.IntN(1000), r.IntN(10), r.IntN(10))
			if version == "v1" {
				s["image"] = img
			} else {
				s["img"] = img
			}
			ships[j] = s
		}
		cronF := []string{fmt.Sprint(r.IntN(60)), fmt.Sprint(r.IntN(24)), "*", "*", "1-5"}
		var sched any = fmt.Sprintf("%s %s %s %s %s", cronF[0], cronF[1], cronF[2], cronF[3], cronF[4])
		if version == "v1" {
			sched = map[string]any{"minute": cronF[0], "hour": cronF[1], "dayOfMonth": cronF[2], "month": cronF[3], "dayOfWeek": cronF[4]}
		}
		w := decodeJSON(tb, like[i]).(map[string]any)
		o := map[string]any{
			"apiVersion": "example.com/" + version, "kind": "Flotilla",
			"metadata": w["metadata"],
			"spec":     map[string]any{"ships": ships, "schedule": sched},
			"status":   w["status"],
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			tb.Fatal(err)
		}
		if objs[i], err = yaml.YAMLToJSON(b); err != nil {
			tb.Fatal(err)
		}
	}
	return objs
}

// TestFlotillaEquivalence: the rules and the typed Go give semantically
// equal objects, both ways, so the benchmark compares the same work.
func TestFlotillaEquivalence(t *testing.T) {
	hs, cr := flotillaRules(t), flotillaTyped(t)
	for _, d := range flotillaDirections {
		t.Run(d.name, func(t *testing.T) {
			for i, o := range flotillas(t, d.from, 100) {
				got, err := hs.Convert(nil, o, d.to)
				if err != nil {
					t.Fatalf("object %d: hubspoke: %v", i, err)
				}
				want, err := cr.Convert(nil, o, d.to)
				if err != nil {
					t.Fatalf("object %d: controller-runtime: %v", i, err)
				}
				if diff := cmp.Diff(decodeJSON(t, want), decodeJSON(t, got)); diff != "" {
					t.Fatalf("object %d differs (-controller-runtime +hubspoke):\n%s", i, diff)
				}
			}
		})
	}
}

// BenchmarkFlotillaSpeedup converts 1000 Flotillas with the rules and with
// the typed controller-runtime conversion, interleaved in the same run, and
// reports both throughputs and their ratio (speedup-x; the target is 20),
// and the ratio of their CPU times (cpu-speedup-x), steadier on a busy
// machine.
func BenchmarkFlotillaSpeedup(b *testing.B) {
	impls := []converter{flotillaRules(b), flotillaTyped(b)}
	for _, d := range flotillaDirections {
		objs := flotillas(b, d.from, 1000)
		b.Run("dir="+d.name+"/batch=1000", func(b *testing.B) {
			var spent, cpu [2]time.Duration
			buf := make([]byte, 0, 2*totalBytes(objs))
			var err error
			for b.Loop() {
				for i, c := range impls {
					start, cpu0 := time.Now(), processCPU(b)
					for range *speedupBatches {
						buf = buf[:0]
						for _, o := range objs {
							if buf, err = c.Convert(buf, o, d.to); err != nil {
								b.Fatal(err)
							}
						}
					}
					spent[i] += time.Since(start)
					cpu[i] += processCPU(b) - cpu0
				}
			}
			objects := float64(len(objs)) * float64(b.N) * float64(*speedupBatches)
			b.ReportMetric(objects/spent[0].Seconds(), "hubspoke-objects/s")
			b.ReportMetric(objects/spent[1].Seconds(), "controller-runtime-objects/s")
			b.ReportMetric(spent[1].Seconds()/spent[0].Seconds(), "speedup-x")
			// CPU time (all threads, the garbage collector's included)
			// hardly depends on what else the machine runs.
			b.ReportMetric(cpu[1].Seconds()/cpu[0].Seconds(), "cpu-speedup-x")
		})
	}
}
