package bench_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/bench"
	_ "github.com/hubspoke/hubspoke/convert/celenv" // the Fleet example's cel rule
	"github.com/hubspoke/hubspoke/internal/convwatch"
	"github.com/hubspoke/hubspoke/review"
)

// conversionObject reads an example's rule file as the Conversion object
// of group (its CRD in another group, so that a hundred can be served).
func conversionObject(tb testing.TB, example, group string, gen int64) *unstructured.Unstructured {
	tb.Helper()
	data, err := os.ReadFile("../examples/" + example + "/conversion.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		tb.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		tb.Fatal(err)
	}
	if group != "" {
		if err := unstructured.SetNestedField(u.Object, group, "spec", "group"); err != nil {
			tb.Fatal(err)
		}
		u.SetName(strings.Split(u.GetName(), ".")[0] + "." + group)
	}
	u.SetGeneration(gen)
	u.SetUID(types.UID("uid-" + u.GetName()))
	u.SetCreationTimestamp(metav1.Now())
	return u
}

// servedConversions starts a watcher over objs with a fake API server and
// returns the handler, the watcher and the client.
func servedConversions(tb testing.TB, objs ...k8sruntime.Object) (*review.Handler, *convwatch.Watcher, *dynamicfake.FakeDynamicClient, time.Duration) {
	tb.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(),
		map[schema.GroupVersionResource]string{v1alpha1.GroupVersionResource: v1alpha1.ListKind}, objs...)
	h, err := review.NewHandler(review.Options{Replaceable: true})
	if err != nil {
		tb.Fatal(err)
	}
	w, err := convwatch.New(convwatch.Options{Client: client, Handler: h})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); w.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	for w.Ready() != nil {
		select {
		case <-w.Changed():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return h, w, client, time.Since(start)
}

// BenchmarkReloadLatency: does a reload pause serving? Two clients send
// one-object reviews (the API server's case for a GET or a write) to a
// webhook serving 100 Conversions; each op measures their latency for
// 1000 reviews in steady state, then for as long as the Conversion they
// use is reloaded 100 times (a new generation each, loaded and swapped in by the
// watcher as in serve --watch-conversions). It reports p50 and p99 of
// both, and reload-p99-x, the p99 during reloads over the steady p99 (the
// target: at most 2).
func BenchmarkReloadLatency(b *testing.B) {
	objs := []k8sruntime.Object{conversionObject(b, "widget", "", 1)}
	for i := range 99 {
		objs = append(objs, conversionObject(b, "fleet", fmt.Sprintf("g%02d.example.com", i), 1))
	}
	h, w, client, _ := servedConversions(b, objs...)
	body := bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", 1, 0))
	const clients, perClient = 2, 500
	// measure runs the clients for perClient reviews each, and on until
	// during (when given) returns.
	measure := func(during func()) []time.Duration {
		var mu sync.Mutex
		var all []time.Duration
		var wg sync.WaitGroup
		var finished atomic.Bool
		finished.Store(during == nil)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for i := 0; i < perClient || !finished.Load(); i++ {
					start := time.Now()
					code := serveOnce(h, body)
					mine = append(mine, time.Since(start))
					if code != http.StatusOK {
						b.Errorf("review: HTTP %d", code)
						return
					}
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			}()
		}
		if during != nil {
			during()
			finished.Store(true)
		}
		wg.Wait()
		slices.Sort(all)
		return all
	}
	gen := int64(1)
	reload := func() {
		for range 100 {
			gen++
			u := conversionObject(b, "widget", "", gen)
			want := gen
			if _, err := client.Resource(v1alpha1.GroupVersionResource).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
				b.Error(err)
				return
			}
			for {
				ch := w.Changed()
				if served(w, "widgets.example.com") == want {
					break
				}
				<-ch
			}
		}
	}
	var steady, reloading []time.Duration
	var reloadTime time.Duration
	for b.Loop() {
		steady = append(steady, measure(nil)...)
		start := time.Now()
		reloading = append(reloading, measure(reload)...)
		reloadTime += time.Since(start)
	}
	slices.Sort(steady)
	slices.Sort(reloading)
	q := func(d []time.Duration, p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(q(steady, 0.5), "steady-p50-µs")
	b.ReportMetric(q(steady, 0.99), "steady-p99-µs")
	b.ReportMetric(q(reloading, 0.5), "reload-p50-µs")
	b.ReportMetric(q(reloading, 0.99), "reload-p99-µs")
	b.ReportMetric(q(reloading, 0.99)/q(steady, 0.99), "reload-p99-x")
	b.ReportMetric(float64(reloadTime.Microseconds())/float64(100*b.N), "µs/reload")
	b.ReportMetric(float64(len(reloading))/float64(b.N), "reviews-during-reloads")
}

func served(w *convwatch.Watcher, name string) int64 {
	for _, c := range w.Served().Conversions {
		if c.Name == name {
			return c.Generation
		}
	}
	return 0
}

func serveOnce(h http.Handler, body []byte) int {
	req, _ := http.NewRequest(http.MethodPost, "/convert", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	w := &discardWriter{}
	h.ServeHTTP(w, req)
	return w.code
}

// BenchmarkServe100Conversions: a webhook serving 100 Conversions for 100
// CRDs: the time from start to ready (every Conversion listed, loaded and
// swapped in) and the heap it holds per CRD (the informer's objects, the
// compiled rules, the handler's entries), for the Widget example's rules
// (one rename) and the Fleet example's (every rule form, CEL included).
func BenchmarkServe100Conversions(b *testing.B) {
	for _, example := range []string{"widget", "fleet"} {
		b.Run(example, func(b *testing.B) {
			var objs []k8sruntime.Object
			for i := range 100 {
				objs = append(objs, conversionObject(b, example, fmt.Sprintf("g%03d.example.com", i), 1))
			}
			var startup time.Duration
			var perCRD float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, w, _, took := servedConversions(b, objs...)
				runtime.GC()
				runtime.ReadMemStats(&after)
				if n := len(w.Served().Conversions); n != 100 {
					b.Fatalf("%d conversions served", n)
				}
				startup += took
				perCRD += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / 100
				runtime.KeepAlive(w)
			}
			b.ReportMetric(float64(startup.Milliseconds())/float64(b.N), "startup-ms")
			b.ReportMetric(perCRD/float64(b.N)/1024, "heap-KiB/CRD")
		})
	}
}
