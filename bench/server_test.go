package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/hubspoke/hubspoke/bench"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/crwidget"
	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/server"
)

const (
	serverRoleEnv    = "HUBSPOKE_BENCH_SERVER"   // hubspoke or controller-runtime
	serverCertDirEnv = "HUBSPOKE_BENCH_CERT_DIR" // holds tls.crt and tls.key
	// connections is the number of concurrent client connections.
	connections = 8
)

// servers are the two webhook handlers under comparison.
var servers = []string{"hubspoke", "controller-runtime"}

// newHandler returns the ConversionReview handler of an implementation.
// hubspoke's handler registers its metrics on reg when reg is not nil.
func newHandler(role string, reg prometheus.Registerer) (http.Handler, error) {
	switch role {
	case "hubspoke":
		c, err := rules.LoadFile(widgetRules)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", widgetRules, err)
		}
		return review.NewHandler(review.Options{Converters: []review.Converter{c}, Registerer: reg})
	case "controller-runtime":
		s, err := crwidget.NewScheme()
		if err != nil {
			return nil, err
		}
		return crconversion.NewWebhookHandler(s, crconversion.NewRegistry()), nil
	default:
		return nil, fmt.Errorf("unknown server %q", role)
	}
}

// serveMain runs in a re-executed test binary: it serves role's handler
// with hubspoke's server package (HTTPS on a loopback port, metrics on),
// prints "listening ADDR" and serves until its standard input is closed.
// Both implementations run behind the same server, so only the handlers
// differ.
func serveMain(role string) int {
	reg := prometheus.NewRegistry()
	h, err := newHandler(role, reg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	err = server.Run(ctx, server.Options{
		Listener:      ln,
		CertDir:       os.Getenv(serverCertDirEnv),
		Handler:       h,
		Registerer:    reg,
		ShutdownDelay: -1,
		OnReady:       func(addr net.Addr) { fmt.Printf("listening %s\n", addr) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	return 0
}

// benchServer is a server subprocess.
type benchServer struct {
	url   string
	pid   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startServer re-executes the test binary as role's server and waits for
// its address. It is stopped when tb ends.
func startServer(tb testing.TB, role, certDir string) *benchServer {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverRoleEnv+"="+role, serverCertDirEnv+"="+certDir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s server: %v", role, err)
	}
	s := &benchServer{pid: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	tb.Cleanup(func() {
		stdin.Close()
		waited := make(chan struct{})
		go func() { cmd.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-waited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		tb.Fatalf("%s server did not start: %q, %v", role, line, err)
	}
	s.url = "https://" + addr + "/convert"
	return s
}

// cpuTime returns the user+system CPU time of process pid so far.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("read server cpu time: %v", err)
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15, in clock ticks (USER_HZ = 100).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		tb.Fatalf("parse /proc/%d/stat: %v", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir as
// tls.crt and tls.key.
func selfSigned(tb testing.TB, dir string) *x509.CertPool {
	tb.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(testcert.WriteLoopback(tb, dir))
	return pool
}

// BenchmarkServer sends ConversionReviews of 1 and 1000 Widgets
// (v1alpha1 -> v1) over loopback HTTPS from 8 concurrent HTTP/1.1
// connections to hubspoke's review handler and to controller-runtime's
// conversion webhook handler, each in its own server process. One op is one
// request; b.N requests are spread over the 8 connections, so the run is
// bounded by -benchtime. It reports requests/s, objects/s, p50 and p99
// latency and the server process's CPU time per request.
func BenchmarkServer(b *testing.B) {
	certDir := b.TempDir()
	pool := selfSigned(b, certDir)
	bodies := map[int][]byte{}
	for _, n := range []int{1, 1000} {
		bodies[n] = bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", n, 0))
	}
	for _, role := range servers {
		b.Run("server="+role, func(b *testing.B) {
			srv := startServer(b, role, certDir)
			tr := &http.Transport{
				TLSClientConfig:     &tls.Config{RootCAs: pool},
				MaxConnsPerHost:     connections,
				MaxIdleConnsPerHost: connections,
				DisableCompression:  true,
				TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1: one request per connection at a time
			}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
			for _, n := range []int{1, 1000} {
				b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
					loadServer(b, client, srv, bodies[n], n)
				})
			}
		})
	}
}

func loadServer(b *testing.B, client *http.Client, srv *benchServer, body []byte, objects int) {
	// Warm the connections and the server's pools.
	var wg sync.WaitGroup
	for range connections {
		wg.Go(func() {
			if _, err := post(client, srv.url, body, nil); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}

	var (
		next    atomic.Int64
		mu      sync.Mutex
		lat     = make([]time.Duration, 0, b.N)
		firstEr error
	)
	cpu0 := cpuTime(b, srv.pid)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	start := time.Now()
	for range connections {
		wg.Go(func() {
			var buf bytes.Buffer
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				_, err := post(client, srv.url, body, &buf)
				mine = append(mine, time.Since(t0))
				if err != nil {
					mu.Lock()
					firstEr = orFirst(firstEr, err)
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime(b, srv.pid) - cpu0
	if firstEr != nil {
		b.Fatal(firstEr)
	}
	slices.Sort(lat)
	reqs := float64(b.N)
	b.ReportMetric(reqs/elapsed.Seconds(), "req/s")
	b.ReportMetric(reqs*float64(objects)/elapsed.Seconds(), "objects/s")
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(cpu)/reqs, "server-cpu-ms/req")
}

func orFirst(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// post sends one review and checks the answer is a successful review.
func post(client *http.Client, url string, body []byte, buf *bytes.Buffer) (int, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("post review: %w", err)
	}
	defer resp.Body.Close()
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, fmt.Errorf("read review response: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte(`"status":"Success"`)) {
		return 0, fmt.Errorf("review failed: HTTP %d: %.300s", resp.StatusCode, buf.Bytes())
	}
	return buf.Len(), nil
}

// discardWriter is an http.ResponseWriter that counts and drops the
// response, as writing it to a connection would.
type discardWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *discardWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

// heapObjects is the runtime/metrics sample of bytes in heap objects (live
// and not yet swept).
const heapObjects = "/memory/classes/heap/objects:bytes"

// BenchmarkReviewPeakMemory serves one ConversionReview of 10,000 Widgets
// (about 32 MB) per op with a freshly built handler (cold pools), in
// process, and samples the heap every 100µs while it runs. It reports the
// peak growth of heap objects over the idle heap, as bytes and relative to
// the request body's size, at the default GOGC.
func BenchmarkReviewPeakMemory(b *testing.B) {
	body := bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", 10000, 0))
	for _, role := range servers {
		b.Run("server="+role, func(b *testing.B) {
			var peakSum float64
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				h, err := newHandler(role, nil)
				if err != nil {
					b.Fatal(err)
				}
				req, err := http.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				w := &discardWriter{}
				runtime.GC()
				runtime.GC()
				base := readHeap()
				stop := sampleHeap()
				b.StartTimer()
				h.ServeHTTP(w, req)
				b.StopTimer()
				peakSum += float64(stop() - base)
				if w.code != http.StatusOK || w.n < len(body)/2 {
					b.Fatalf("review failed: HTTP %d, %d bytes", w.code, w.n)
				}
				b.StartTimer()
			}
			peak := peakSum / float64(b.N)
			b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
			b.ReportMetric(peak/float64(len(body)), "peak/request")
		})
	}
}

func readHeap() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap samples heap objects bytes until stop is called; stop returns
// the highest sample.
func sampleHeap() (stop func() uint64) {
	peak := new(atomic.Uint64)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: heapObjects}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		if v := readHeap(); v > peak.Load() {
			peak.Store(v)
		}
		return peak.Load()
	}
}
