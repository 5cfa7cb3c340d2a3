package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/pki"
)

func TestEndpoints(t *testing.T) {
	ca := newCA(t, "ca")
	dir := t.TempDir()
	crt, key, _ := ca.issueFor(t, false, 5*time.Hour)
	writeSecretVolume(t, dir, 1, crt, key)
	ts := start(t, Options{CertDir: dir}, nil)
	c := client(ca.pem, nil, true)
	if err := convert(c, ts.url); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		path       string
		wantStatus int
		wantBody   string // prefix
	}{
		{"/healthz", 200, "ok\n"},
		{"/readyz", 200, "ok\n"},
		{"/convert", 405, "method GET is not allowed"},
		{"/nope", 404, "404 page not found"},
	}
	for _, tc := range rows {
		status, body, err := get(c, ts.url+tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if status != tc.wantStatus || !strings.HasPrefix(body, tc.wantBody) {
			t.Errorf("GET %s = %d %q, want %d %q...", tc.path, status, body, tc.wantStatus, tc.wantBody)
		}
	}
	status, body, err := get(c, ts.url+"/metrics")
	if err != nil || status != 200 {
		t.Fatalf("GET /metrics = %d, %v", status, err)
	}
	for _, want := range []string{
		MetricCertExpiry + " ",
		`hubspoke_conversion_reviews_total{crd="Widget.example.com",from_version="v1alpha1",result="success",to_version="v1"} 1`,
		`hubspoke_conversion_objects_total{crd="Widget.example.com",from_version="v1alpha1",result="success",to_version="v1"} 2`,
		`hubspoke_conversion_review_duration_seconds_count{crd="Widget.example.com"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The expiry gauge holds the leaf's NotAfter (now+5h).
	exp := gathered(t, ts, MetricCertExpiry, "")
	if d := time.Until(time.Unix(int64(exp), 0)); d < 4*time.Hour || d > 6*time.Hour {
		t.Errorf("%s = %v, %v from now; want about 5h", MetricCertExpiry, exp, d)
	}
}

// gathered returns the value of the named gauge or counter, the one with
// label result=result when result is not empty.
func gathered(t *testing.T, ts *testServer, name, result string) float64 {
	t.Helper()
	mfs, err := ts.reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := result == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetName() == "result" && l.GetValue() == result
			}
			if match {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("metric %s{result=%q} not found", name, result)
	return 0
}

// TestNoPlaintextNoOldTLS checks that conversions need TLS 1.2 or later.
func TestNoPlaintextNoOldTLS(t *testing.T) {
	ca := newCA(t, "ca")
	ts := start(t, Options{CertDir: newCertDir(t, ca)}, nil)
	plain := &http.Client{Timeout: 10 * time.Second}
	resp, err := plain.Post(strings.Replace(ts.url, "https://", "http://", 1)+"/convert", "application/json", strings.NewReader(testReview))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plaintext request got %d, want 400 from the TLS listener", resp.StatusCode)
		}
	}
	old := client(ca.pem, nil, false)
	old.Transport.(*http.Transport).TLSClientConfig.MinVersion = tls.VersionTLS10
	old.Transport.(*http.Transport).TLSClientConfig.MaxVersion = tls.VersionTLS11
	if err := convert(old, ts.url); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1 client: err = %v, want a protocol version error", err)
	}
}

// TestCertRotationUnderLoad swaps the Secret volume's certificate several
// times while clients, with and without keep-alive, convert in a loop:
// every request must succeed and new handshakes must see each new
// certificate.
func TestCertRotationUnderLoad(t *testing.T) {
	ca := newCA(t, "ca")
	dir := t.TempDir()
	crt, key, _ := ca.issue(t, false)
	writeSecretVolume(t, dir, 1, crt, key)
	ts := start(t, Options{CertDir: dir, CertReloadInterval: 5 * time.Millisecond}, nil)

	const workers, maxPerWorker, rotations = 4, 2000, 5
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client(ca.pem, nil, w%2 == 0) // half reconnect every time
			for range maxPerWorker {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				sent.Add(1)
				if err := convert(c, ts.url); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	addr := strings.TrimPrefix(ts.url, "https://")
	for gen := 2; gen <= rotations+1; gen++ {
		crt, key, serial := ca.issue(t, false)
		writeSecretVolume(t, dir, gen, crt, key)
		if err := waitServedSerial(ctx, ca.pem, addr, serial); err != nil {
			t.Fatalf("rotation %d: %v", gen, err)
		}
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed during rotation; first: %v", failed.Load(), sent.Load(), firstErr.Load())
	}
	if sent.Load() == 0 {
		t.Error("no requests sent")
	}
	t.Logf("%d requests, %d rotations, 0 failures", sent.Load(), rotations)
	if got := gathered(t, ts, MetricCertReloads, "success"); got < rotations {
		t.Errorf("%s{result=success} = %v, want >= %d", MetricCertReloads, got, rotations)
	}
}

// waitServedSerial polls new handshakes until the server presents the
// certificate with the given serial.
func waitServedSerial(ctx context.Context, roots []byte, addr string, serial *big.Int) error {
	c := client(roots, nil, false)
	cfg := c.Transport.(*http.Transport).TLSClientConfig
	cfg.ServerName = "localhost"
	var last *big.Int
	for {
		conn, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		last = conn.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber
		conn.Close()
		if last.Cmp(serial) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still serving serial %v: %w", last, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestShutdownUnderLoad cancels the server while clients convert in a
// loop; every request sent before readiness was seen to go false must
// succeed, and Run must return nil.
func TestShutdownUnderLoad(t *testing.T) {
	for _, keepAlive := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepAlive=%v", keepAlive), func(t *testing.T) {
			ca := newCA(t, "ca")
			ts := start(t, Options{
				CertDir:       newCertDir(t, ca),
				ShutdownDelay: time.Second, // far longer than the probe loop takes to see 503
				ShutdownGrace: 10 * time.Second,
			}, versionSetter{delay: 2 * time.Millisecond})

			const workers, maxPerWorker = 6, 3000
			var notReady atomic.Bool
			var sentBefore, okBefore, failedBefore atomic.Int64
			var firstErr atomic.Value
			started := make(chan struct{}, workers)
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := client(ca.pem, nil, keepAlive)
					for i := range maxPerWorker {
						if notReady.Load() {
							return
						}
						sentBefore.Add(1)
						if err := convert(c, ts.url); err != nil {
							failedBefore.Add(1)
							firstErr.CompareAndSwap(nil, err.Error())
						} else {
							okBefore.Add(1)
						}
						if i == 10 {
							started <- struct{}{}
						}
					}
				}()
			}
			for range workers {
				<-started // every worker is in its loop
			}
			// Watch readiness the way a kubelet would, but often.
			probe := client(ca.pem, nil, true)
			probeDone := make(chan struct{})
			go func() {
				defer close(probeDone)
				for {
					status, _, err := get(probe, ts.url+"/readyz")
					if err != nil || status != 200 {
						notReady.Store(true)
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
			}()
			if err := ts.stop(t); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
			<-probeDone
			wg.Wait()
			if failedBefore.Load() != 0 {
				t.Errorf("%d of %d requests sent before readiness went false failed; first: %v", failedBefore.Load(), sentBefore.Load(), firstErr.Load())
			}
			if okBefore.Load() == 0 {
				t.Error("no request succeeded")
			}
			t.Logf("%d requests sent before not-ready succeeded", okBefore.Load())
		})
	}
}

// TestShutdownGraceExceeded: a request that outlives the grace period makes
// Run return an error instead of hanging.
func TestShutdownGraceExceeded(t *testing.T) {
	ca := newCA(t, "ca")
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	ts := start(t, Options{
		CertDir:       newCertDir(t, ca),
		ShutdownDelay: -1,
		ShutdownGrace: 50 * time.Millisecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
		}),
	}, nil)
	c := client(ca.pem, nil, true)
	go func() { _ = convert(c, ts.url) }()
	<-entered
	err := ts.stop(t)
	if err == nil || !strings.Contains(err.Error(), "in-flight requests outlived the shutdown grace period of 50ms") {
		t.Errorf("Run = %v, want a grace period error", err)
	}
}

func TestClientCA(t *testing.T) {
	ca := newCA(t, "serving-ca")
	clientCA, otherCA := newCA(t, "client-ca"), newCA(t, "other-ca")
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	must(t, os.WriteFile(caFile, clientCA.pem, 0o644))
	ts := start(t, Options{CertDir: newCertDir(t, ca), ClientCAFile: caFile, CertReloadInterval: 5 * time.Millisecond}, nil)

	pair := func(ca *testCA) *tls.Certificate {
		crt, key, _ := ca.issue(t, true)
		c, err := tls.X509KeyPair(crt, key)
		must(t, err)
		return &c
	}
	good, other := pair(clientCA), pair(otherCA)

	t.Run("verified client", func(t *testing.T) {
		if err := convert(client(ca.pem, good, false), ts.url); err != nil {
			t.Error(err)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		c := client(ca.pem, nil, false)
		err := convert(c, ts.url)
		if want := "status 403: a client certificate signed by the client CA is required\n"; err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if status, _, err := get(c, ts.url+path); err != nil || status != 200 {
				t.Errorf("GET %s without a client certificate = %d, %v; want 200", path, status, err)
			}
		}
	})
	t.Run("certificate from another CA", func(t *testing.T) {
		err := convert(client(ca.pem, other, false), ts.url)
		// The server refuses the handshake: the client reads its alert.
		if err == nil || !strings.Contains(err.Error(), "remote error: tls: bad certificate") {
			t.Errorf("err = %v, want the server's bad-certificate alert", err)
		}
	})
	t.Run("CA reloaded", func(t *testing.T) {
		must(t, os.WriteFile(caFile+".tmp", otherCA.pem, 0o644))
		must(t, os.Rename(caFile+".tmp", caFile))
		deadline := time.Now().Add(10 * time.Second)
		for convert(client(ca.pem, other, false), ts.url) != nil {
			if time.Now().After(deadline) {
				t.Fatal("the new client CA was not picked up within 10s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := convert(client(ca.pem, good, false), ts.url); err == nil {
			t.Error("a certificate of the replaced CA is still accepted")
		}
	})
}

func TestRunErrors(t *testing.T) {
	ca := newCA(t, "ca")
	good := newCertDir(t, ca)
	mismatched := t.TempDir()
	crt, _, _ := ca.issue(t, false)
	_, key, _ := ca.issue(t, false)
	must(t, os.WriteFile(filepath.Join(mismatched, CertFileName), crt, 0o644))
	must(t, os.WriteFile(filepath.Join(mismatched, KeyFileName), key, 0o600))
	notPEM := filepath.Join(t.TempDir(), "ca.crt")
	must(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o644))
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer busy.Close()
	h := http.NotFoundHandler()
	rows := []struct {
		name string
		opts Options
		want string
	}{
		{name: "no handler", opts: Options{CertDir: good}, want: "server: Options.Handler is nil"},
		{name: "no cert dir", opts: Options{Handler: h}, want: "server: Options.CertDir is empty"},
		{name: "missing files", opts: Options{Handler: h, CertDir: t.TempDir()}, want: "server: reading certificate: open "},
		{name: "mismatched key", opts: Options{Handler: h, CertDir: mismatched}, want: "server: loading " + filepath.Join(mismatched, CertFileName) + " and " + filepath.Join(mismatched, KeyFileName) + ": tls: private key does not match public key"},
		{name: "client CA not PEM", opts: Options{Handler: h, CertDir: good, ClientCAFile: notPEM}, want: "server: client CA file " + notPEM + " holds no PEM certificate"},
		{name: "missing client CA", opts: Options{Handler: h, CertDir: good, ClientCAFile: notPEM + ".missing"}, want: "server: reading client CA: open "},
		{name: "address in use", opts: Options{Handler: h, CertDir: good, Addr: busy.Addr().String()}, want: "server: listen tcp " + busy.Addr().String() + ": bind: address already in use"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := Run(ctx, tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Run = %v\nwant %s...", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	var o Options
	o.defaults()
	got := []time.Duration{o.ReadHeaderTimeout, o.ReadTimeout, o.WriteTimeout, o.IdleTimeout, o.ShutdownDelay, o.ShutdownGrace, o.CertReloadInterval}
	want := []time.Duration{10 * time.Second, 30 * time.Second, 35 * time.Second, 120 * time.Second, 5 * time.Second, 20 * time.Second, 10 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	// The API server's webhook client gives up after 30s and keeps idle
	// connections 90s: reads must fit, and we must not close idle
	// connections before it does.
	if o.ReadTimeout > 30*time.Second || o.WriteTimeout < 30*time.Second || o.IdleTimeout <= 90*time.Second {
		t.Errorf("timeouts do not fit the API server's client: %+v", o)
	}
	if o.Addr != ":8443" || o.ConvertPath != "/convert" {
		t.Errorf("addr %q path %q", o.Addr, o.ConvertPath)
	}
}

// TestCertRenewedWithTheSameKey: cert-manager with rotationPolicy: Never
// renews a certificate with the key it had, so only tls.crt changes; the
// server must serve the new certificate.
func TestCertRenewedWithTheSameKey(t *testing.T) {
	ca := newCA(t, "ca")
	dir := t.TempDir()
	crt, key, _ := ca.issue(t, false)
	writeSecretVolume(t, dir, 1, crt, key)
	ts := start(t, Options{CertDir: dir, CertReloadInterval: 5 * time.Millisecond}, nil)

	kp, err := pki.ParseKeyPair(crt, key)
	must(t, err)
	tmpl := *kp.Cert
	tmpl.SerialNumber = big.NewInt(424242)
	tmpl.NotAfter = kp.Cert.NotAfter.Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca.ca.Cert, kp.Key.Public(), ca.ca.Key)
	must(t, err)
	renewed := pki.EncodeCertificates(mustParseCert(t, der))
	writeSecretVolume(t, dir, 2, renewed, key) // the same key file, byte for byte

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := waitServedSerial(ctx, ca.pem, strings.TrimPrefix(ts.url, "https://"), tmpl.SerialNumber); err != nil {
		t.Fatalf("the certificate renewed with the same key is not served: %v", err)
	}
	if got := gathered(t, ts, MetricCertReloads, "success"); got < 1 {
		t.Errorf("%s{result=success} = %v, want 1", MetricCertReloads, got)
	}
}

func mustParseCert(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	must(t, err)
	return c
}

// TestReadyCheckAndHandlers: /readyz follows ReadyCheck, and Handlers are
// served without the client certificate /convert requires.
func TestReadyCheckAndHandlers(t *testing.T) {
	ca := newCA(t, "ca")
	dir := newCertDir(t, ca)
	clientCA := filepath.Join(t.TempDir(), "client-ca.crt")
	must(t, os.WriteFile(clientCA, ca.pem, 0o644))
	var loaded atomic.Bool
	ts := start(t, Options{
		CertDir:      dir,
		ClientCAFile: clientCA,
		ReadyCheck: func() error {
			if !loaded.Load() {
				return errors.New("loading Conversion objects")
			}
			return nil
		},
		Handlers: map[string]http.Handler{"/conversions/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "served "+r.URL.Path)
		})},
	}, nil)
	c := client(ca.pem, nil, true)
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/readyz", "not ready: loading Conversion objects\n", 503},
		{"/conversions/a", "served /conversions/a", 200},
	} {
		status, body, err := get(c, ts.url+tc.path)
		if err != nil || status != tc.status || body != tc.want {
			t.Errorf("GET %s = %d %q %v, want %d %q", tc.path, status, body, err, tc.status, tc.want)
		}
	}
	loaded.Store(true)
	if status, body, err := get(c, ts.url+"/readyz"); err != nil || status != 200 || body != "ok\n" {
		t.Errorf("GET /readyz once loaded = %d %q %v", status, body, err)
	}
}
