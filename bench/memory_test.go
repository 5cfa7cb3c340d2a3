package bench_test

import (
	"bytes"
	"net/http"
	"runtime"
	"testing"

	"github.com/hubspoke/hubspoke/bench"
)

// TestReviewPeakMemory serves one review of 10,000 Widgets (about 32 MB)
// through a freshly built hubspoke handler (cold pools), in process, and
// holds the peak growth of heap objects over the idle heap, sampled every
// 100µs, under three times the request's size. It also reports the bytes
// allocated, which bound the peak from above.
func TestReviewPeakMemory(t *testing.T) {
	body := bench.ReviewBody("mem", "example.com/v1", widgets(t, "v1alpha1", 10000, 0))
	h, err := newHandler("hubspoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	w := &discardWriter{}
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := readHeap()
	stop := sampleHeap()
	h.ServeHTTP(w, req)
	peak := stop() - base
	runtime.ReadMemStats(&after)
	if w.code != http.StatusOK || w.n < len(body)/2 {
		t.Fatalf("review failed: HTTP %d, %d bytes", w.code, w.n)
	}
	ratio := float64(peak) / float64(len(body))
	t.Logf("request %.1f MB, peak heap growth %.1f MB (%.2fx), allocated %.1f MB (%.2fx)", float64(len(body))/1e6,
		float64(peak)/1e6, ratio, float64(after.TotalAlloc-before.TotalAlloc)/1e6, float64(after.TotalAlloc-before.TotalAlloc)/float64(len(body)))
	if ratio >= 3 {
		t.Errorf("peak heap growth %.2f times the request, want under 3", ratio)
	}
}
