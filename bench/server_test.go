package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
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
	serverRoleEnv    = "HUBSPOKE_BENCH_SERVER"            // hubspoke or controller-runtime
	serverCertDirEnv = "HUBSPOKE_BENCH_CERT_DIR"          // holds tls.crt and tls.key
	serverCPUEnv     = "HUBSPOKE_BENCH_SERVER_CPU"        // the CPU the server runs on, if set
	serverProfileEnv = "HUBSPOKE_BENCH_SERVER_CPUPROFILE" // where the server writes a CPU profile, if set
	// connections is the number of concurrent client connections.
	connections = 8
)

var serverProfile = flag.String("server-cpuprofile", "", "BenchmarkServer*: each server process writes a CPU profile of its whole life to `file`.ROLE.pprof")

var splitCores = flag.Bool("split-cores", true, "BenchmarkServer: run the server on a CPU of its own, the load generator on the others")

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
	if cpu := os.Getenv(serverCPUEnv); cpu != "" {
		n, err := strconv.Atoi(cpu)
		if err == nil {
			_, err = pinThreads([]int{n})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench server: pin to cpu", cpu+":", err)
			return 1
		}
		runtime.GOMAXPROCS(1)
	}
	if path := os.Getenv(serverProfileEnv); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench server: cpu profile:", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
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
	addr  string // host:port
	pid   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startServer re-executes the test binary as role's server, on CPU cpu
// alone unless cpu is negative, and waits for its address. It is stopped
// when tb ends.
func startServer(tb testing.TB, role, certDir string, cpu int) *benchServer {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverRoleEnv+"="+role, serverCertDirEnv+"="+certDir)
	if cpu >= 0 {
		cmd.Env = append(cmd.Env, serverCPUEnv+"="+strconv.Itoa(cpu))
	}
	if *serverProfile != "" {
		cmd.Env = append(cmd.Env, serverProfileEnv+"="+*serverProfile+"."+role+".pprof")
	}
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
	s.addr = addr
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
//
// The load generator runs on the same machine, so it is kept lean, as wrk
// is: each connection writes a request prepared once and reads the answer
// with http.ReadResponse, without net/http's Transport. And unless
// -split-cores=false, the server process gets the last CPU to itself
// (GOMAXPROCS 1) and the load generator the others, as if they ran on
// separate machines: sharing the cores, the load generator's own cost per
// request (about as much as hubspoke's server) caps the rate of a fast
// server and hides the difference between the servers.
func BenchmarkServer(b *testing.B) {
	serverCPU := splitCPUs(b)
	certDir := b.TempDir()
	pool := selfSigned(b, certDir)
	bodies := map[int][]byte{}
	for _, n := range []int{1, 1000} {
		bodies[n] = bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", n, 0))
	}
	for _, role := range servers {
		b.Run("server="+role, func(b *testing.B) {
			srv := startServer(b, role, certDir, serverCPU)
			for _, n := range []int{1, 1000} {
				b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
					loadServer(b, srv, pool, bodies[n], n)
				})
			}
		})
	}
}

func loadServer(b *testing.B, srv *benchServer, pool *x509.CertPool, body []byte, objects int) {
	conns := openLoad(b, srv, pool, body, protoHTTP1)
	cpu0 := cpuTime(b, srv.pid)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	elapsed, lat, err := conns.send(b.N)
	b.StopTimer()
	cpu := cpuTime(b, srv.pid) - cpu0
	if err != nil {
		b.Fatal(err)
	}
	reqs := float64(b.N)
	b.ReportMetric(reqs/elapsed.Seconds(), "req/s")
	b.ReportMetric(reqs*float64(objects)/elapsed.Seconds(), "objects/s")
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(cpu)/reqs, "server-cpu-ms/req")
}

// BenchmarkServerSpeedup measures the headline ratios on a noisy machine:
// each op sends the same number of reviews to hubspoke's server and then
// to controller-runtime's (5,000 reviews of 1 Widget, or 16 of 1000), over
// 8 keep-alive HTTP/1.1 connections (proto=http1.1) or as 8 concurrent
// streams of one HTTP/2 connection negotiated with ALPN h2, as
// kube-apiserver's webhook client does (proto=h2), so both see the same
// conditions. It reports each
// one's requests/s and their ratio (speedup-x, hubspoke over
// controller-runtime), and each server process's CPU time per review and
// their ratio (cpu-x). -server-cpuprofile=FILE profiles the servers. Cores are split as in BenchmarkServer; each turn
// starts once the other server is idle.
//
//	go test -run '^$' -bench BenchmarkServerSpeedup -benchtime 10x ./bench/
func BenchmarkServerSpeedup(b *testing.B) {
	serverCPU := splitCPUs(b)
	certDir := b.TempDir()
	pool := selfSigned(b, certDir)
	var srvs []*benchServer
	for _, role := range servers {
		srvs = append(srvs, startServer(b, role, certDir, serverCPU))
	}
	for _, batch := range []struct {
		proto             string
		objects, requests int
	}{{protoHTTP1, 1, 5000}, {protoH2, 1, 5000}, {protoHTTP1, 1000, 16}, {protoH2, 1000, 16}} {
		body := bench.ReviewBody("bench", "example.com/v1", widgets(b, "v1alpha1", batch.objects, 0))
		b.Run(fmt.Sprintf("proto=%s/batch=%d", batch.proto, batch.objects), func(b *testing.B) {
			var load [2]loadConns
			for i, srv := range srvs {
				load[i] = openLoad(b, srv, pool, body, batch.proto)
			}
			var spent, cpu [2]time.Duration
			for b.Loop() {
				for i := range load {
					// Both servers share a CPU: let the other one's
					// leftover work (controller-runtime's garbage
					// collection, mostly) finish first.
					b.StopTimer()
					waitIdle(b, srvs[1-i].pid)
					cpu0 := cpuTime(b, srvs[i].pid)
					b.StartTimer()
					elapsed, _, err := load[i].send(batch.requests)
					if err != nil {
						b.Fatalf("%s: %v", servers[i], err)
					}
					spent[i] += elapsed
					b.StopTimer()
					cpu[i] += cpuTime(b, srvs[i].pid) - cpu0
					b.StartTimer()
				}
			}
			reqs := float64(batch.requests * b.N)
			b.ReportMetric(reqs/spent[0].Seconds(), "hubspoke-req/s")
			b.ReportMetric(reqs/spent[1].Seconds(), "controller-runtime-req/s")
			b.ReportMetric(spent[1].Seconds()/spent[0].Seconds(), "speedup-x")
			// The server's own CPU time per review: when the load
			// generator, not the server, bounds the rate (HTTP/2 through
			// net/http's client is costly), this ratio is the servers'.
			b.ReportMetric(float64(cpu[0].Microseconds())/reqs, "hubspoke-cpu-µs/req")
			b.ReportMetric(float64(cpu[1].Microseconds())/reqs, "controller-runtime-cpu-µs/req")
			b.ReportMetric(cpu[1].Seconds()/cpu[0].Seconds(), "cpu-x")
		})
	}
}

// waitIdle waits, up to two seconds, until process pid has used no CPU
// for 50 ms.
func waitIdle(tb testing.TB, pid int) {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		before := cpuTime(tb, pid)
		time.Sleep(50 * time.Millisecond)
		if cpuTime(tb, pid) == before {
			return
		}
	}
}

// splitCPUs pins this process to all CPUs but the last, for the duration
// of the benchmark, and returns the last, for the server; or -1, leaving
// everything as it is, with -split-cores=false or a single CPU.
func splitCPUs(b *testing.B) int {
	if !*splitCores || runtime.NumCPU() < 2 {
		return -1
	}
	serverCPU := runtime.NumCPU() - 1
	var others []int
	for c := range serverCPU {
		others = append(others, c)
	}
	restore, err := pinThreads(others)
	if err != nil {
		b.Fatalf("pin the load generator to cpus %v: %v (run with -split-cores=false)", others, err)
	}
	b.Cleanup(func() {
		if err := restore(); err != nil {
			b.Error(err)
		}
	})
	return serverCPU
}

// loadConns are the load generator's senders to one server: HTTP/1.1
// connections, or streams of one HTTP/2 connection.
type loadConns []sender

// sender sends the review again and again and checks each answer.
type sender interface {
	roundTrip() error
}

// Protocols of the load generator.
const (
	// protoHTTP1 is 8 keep-alive HTTP/1.1 connections, one request at a
	// time on each.
	protoHTTP1 = "http1.1"
	// protoH2 is what kube-apiserver's webhook client negotiates with a
	// server that offers it (ALPN h2): one HTTP/2 connection per webhook
	// host, the concurrent reviews as streams on it; here 8 at once.
	protoH2 = "h2"
)

// openLoad opens the connections to srv over proto and warms them (and
// the server's pools) with one review each. They are closed when tb ends.
func openLoad(tb testing.TB, srv *benchServer, pool *x509.CertPool, body []byte, proto string) loadConns {
	tb.Helper()
	conns := make(loadConns, connections)
	var h2 *http.Transport
	if proto == protoH2 {
		h2 = &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}},
			ForceAttemptHTTP2: true,
		}
		tb.Cleanup(h2.CloseIdleConnections)
	}
	for i := range conns {
		var c sender
		if h2 != nil {
			c = &h2Stream{client: &http.Client{Transport: h2}, url: "https://" + srv.addr + "/convert", body: body}
		} else {
			lc, err := dialLoad(srv.addr, pool, body)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { lc.Close() })
			c = lc
		}
		if err := c.roundTrip(); err != nil {
			tb.Fatal(err)
		}
		conns[i] = c
	}
	return conns
}

// h2Stream sends reviews as streams of the one HTTP/2 connection of its
// transport, as kube-apiserver's webhook client does (net/http's HTTP/2
// client, ALPN h2).
type h2Stream struct {
	client *http.Client
	url    string
	body   []byte
	resp   bytes.Buffer
}

func (s *h2Stream) roundTrip() error {
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(s.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("send review: %w", err)
	}
	s.resp.Reset()
	_, err = s.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read review response: %w", err)
	}
	if resp.ProtoMajor != 2 {
		return fmt.Errorf("the server answered over %s, not HTTP/2", resp.Proto)
	}
	if resp.StatusCode != http.StatusOK || !succeeded(s.resp.Bytes()) {
		return fmt.Errorf("review failed: HTTP %d: %.300s", resp.StatusCode, s.resp.Bytes())
	}
	return nil
}

// send sends n reviews spread over the connections and returns how long
// that took and the sorted latencies.
func (conns loadConns) send(n int) (time.Duration, []time.Duration, error) {
	var (
		wg      sync.WaitGroup
		next    atomic.Int64
		mu      sync.Mutex
		lat     = make([]time.Duration, 0, n)
		firstEr error
	)
	start := time.Now()
	for _, c := range conns {
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				err := c.roundTrip()
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
	slices.Sort(lat)
	return elapsed, lat, firstEr
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

// loadConn is one keep-alive HTTPS connection of the load generator: it
// sends the same review again and again and checks each answer.
type loadConn struct {
	conn *tls.Conn
	br   *bufio.Reader
	req  []byte // the whole HTTP request, written at once
	resp bytes.Buffer
}

func dialLoad(addr string, pool *x509.CertPool, body []byte) (*loadConn, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	head := fmt.Sprintf("POST /convert HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	return &loadConn{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), req: append([]byte(head), body...)}, nil
}

// roundTrip sends the review and reads the answer, which must be a
// successful review.
func (c *loadConn) roundTrip() error {
	if _, err := c.conn.Write(c.req); err != nil {
		return fmt.Errorf("send review: %w", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return fmt.Errorf("read review response: %w", err)
	}
	c.resp.Reset()
	_, err = c.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read review response: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !succeeded(c.resp.Bytes()) {
		return fmt.Errorf("review failed: HTTP %d: %.300s", resp.StatusCode, c.resp.Bytes())
	}
	return nil
}

// succeeded tells whether a ConversionReview response says "Success". The
// result follows the converted objects in both servers' answers; looking
// only at the answer's ends keeps a 3 MB answer from costing the load
// generator a scan.
func succeeded(resp []byte) bool {
	const ends = 512
	success := []byte(`"status":"Success"`)
	if len(resp) <= 2*ends {
		return bytes.Contains(resp, success)
	}
	return bytes.Contains(resp[:ends], success) || bytes.Contains(resp[len(resp)-ends:], success)
}

func (c *loadConn) Close() error { return c.conn.Close() }

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
