package bench_test

import (
	"bytes"
	"fmt"
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
// on one review of 1 Widget (batch=1: what the API server sends for a
// write or a GET) and of 1000 (batch=1000, 3.2 MB), v1alpha1 -> v1,
// against the floor of the same body: strict validation with
// github.com/goccy/go-json's Valid plus a copy of the bytes into a reused
// output buffer. Each op is a turn of each, handler then floor,
// -speedup-batches times (times 1000 at batch=1, so that a turn is long
// enough to time), so both see the same load; it reports each one's time
// per review and floor-x, the handler's time over the floor's (targets:
// at most 1.3 at one object, 1.5 at 1000).
func BenchmarkHandlerFloor(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			repeat := *speedupBatches
			if n == 1 {
				repeat *= 1000
			}
			handlerFloor(b, bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", n, 0)), repeat)
		})
	}
}

func handlerFloor(b *testing.B, body []byte, repeat int) {
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
			for range repeat {
				f()
			}
			spent[i] += time.Since(start)
		}
	}
	reviews := float64(b.N) * float64(repeat)
	b.ReportMetric(float64(spent[0].Nanoseconds())/1000/reviews, "handler-µs/review")
	b.ReportMetric(float64(spent[1].Nanoseconds())/1000/reviews, "floor-µs/review")
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "floor-x")
	runtime.KeepAlive(out)
}
