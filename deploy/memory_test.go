package deploy_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/bench"
	"github.com/hubspoke/hubspoke/bench/widgetgen"
	"github.com/hubspoke/hubspoke/pki"
)

// BenchmarkResidentMemory measures the memory model behind Resources: the
// slim webhook binary, built here, serves three reviews of N Widgets, and
// the benchmark reports its peak resident set (VmHWM) in MiB, and the peak
// over the idle process divided by the review's size: without a
// GOMEMLIMIT, and with one that binds (16 MiB plus three times the review),
// under which the collector works harder -- the factor Resources sizes
// pods with, as a pod's GOMEMLIMIT binds only when reviews press on it.
//
//	go test -run '^$' -bench ResidentMemory -benchtime 1x ./deploy/
func BenchmarkResidentMemory(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/PID/status")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "hubspoke-webhook")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/hubspoke-webhook").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		b.Fatal(err)
	}
	kp, err := ca.Issue(pki.CertOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		b.Fatal(err)
	}
	if err := kp.WriteFiles(dir); err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, n := range []int{1000, 10000, 40000} {
		objs, err := widgetgen.Generate(n, widgetgen.Options{Seed: 1, Version: "v1alpha1"})
		if err != nil {
			b.Fatal(err)
		}
		body := bench.ReviewBody("mem", "example.com/v1", objs)
		for _, limited := range []bool{false, true} {
			b.Run(fmt.Sprintf("objects=%d/gomemlimit=%v", n, limited), func(b *testing.B) {
				var env []string
				if limited {
					env = append(env, "GOMEMLIMIT="+strconv.Itoa(16<<20+3*len(body)))
				}
				var peak, idle float64
				for range b.N {
					i, p := serveAndMeasure(b, bin, dir, env, pool, body)
					idle, peak = idle+i, peak+p
				}
				idle, peak = idle/float64(b.N), peak/float64(b.N)
				b.ReportMetric(peak/(1<<20), "peak-rss-MiB")
				b.ReportMetric(idle/(1<<20), "idle-rss-MiB")
				b.ReportMetric((peak-idle)/float64(len(body)), "over-idle/review")
			})
		}
	}
}

// serveAndMeasure starts the webhook, reads its idle resident set, sends
// the review three times and returns the idle and the peak resident set.
func serveAndMeasure(b *testing.B, bin, certDir string, env []string, pool *x509.CertPool, body []byte) (idle, peak float64) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--rules", "../examples/widget/conversion.yaml", "--cert-dir", certDir,
		"--addr", addr, "--shutdown-delay", "0s", "--log-level", "error")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	url := "https://" + addr
	for start := time.Now(); ; {
		if resp, err := client.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > 10*time.Second {
			b.Fatal("the webhook did not get ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
	idle = procStatus(b, cmd.Process.Pid, "VmRSS")
	for range 3 {
		resp, err := client.Post(url+"/convert", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n < int64(len(body)/2) {
			b.Fatalf("review: HTTP %d, %d bytes", resp.StatusCode, n)
		}
	}
	return idle, procStatus(b, cmd.Process.Pid, "VmHWM")
}

// procStatus returns a field of /proc/PID/status in bytes.
func procStatus(b *testing.B, pid int, field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
