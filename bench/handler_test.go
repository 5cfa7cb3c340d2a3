package bench_test

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/hubspoke/hubspoke/bench"
)

// BenchmarkHandlerFloor measures hubspoke's whole ConversionReview handler
// in process — request body in, response out, the self-check included —
// on one review of 1000 Widgets (v1alpha1 -> v1), against the floor of the
// same body: strict validation with github.com/goccy/go-json's Valid plus a
// copy of the bytes into a reused output buffer. Each op is a turn of each,
// handler then floor, -speedup-batches times, so both see the same load;
// it reports each one's time per review and floor-x, the handler's time
// over the floor's (the target is at most 1.5).
func BenchmarkHandlerFloor(b *testing.B) {
	body := bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", 1000, 0))
	h, err := newHandler("hubspoke", nil)
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "/convert", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	rd := bytes.NewReader(body)
	w := &discardWriter{}
	serve := func() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		req.ContentLength = int64(len(body))
		w.code, w.n = 0, 0
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK || w.n < len(body)/2 {
			b.Fatalf("review failed: HTTP %d, %d bytes", w.code, w.n)
		}
	}
	out := make([]byte, 0, len(body))
	floor := func() {
		if !gojson.Valid(body) {
			b.Fatal("go-json: the body is not valid")
		}
		out = append(out[:0], body...)
	}
	serve() // warm the pools
	var spent [2]time.Duration
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		for i, f := range []func(){serve, floor} {
			start := time.Now()
			for range *speedupBatches {
				f()
			}
			spent[i] += time.Since(start)
		}
	}
	reviews := float64(b.N) * float64(*speedupBatches)
	b.ReportMetric(float64(spent[0].Microseconds())/reviews, "handler-µs/review")
	b.ReportMetric(float64(spent[1].Microseconds())/reviews, "floor-µs/review")
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "floor-x")
	runtime.KeepAlive(out)
}
