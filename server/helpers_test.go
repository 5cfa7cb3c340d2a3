package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/review"
)

// testCA is a certificate authority generated in-test, by package pki.
type testCA struct {
	ca  *pki.CA
	pem []byte
}

func newCA(t testing.TB, name string) *testCA {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca: ca, pem: ca.CertPEM}
}

// issue returns a PEM certificate and key for loopback, serving or client,
// and the certificate's serial number.
func (ca *testCA) issue(t testing.TB, client bool) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	return ca.issueFor(t, client, 0)
}

// issueFor is issue with a certificate valid for d from now (0: pki's
// default).
func (ca *testCA) issueFor(t testing.TB, client bool, d time.Duration) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	var notAfter time.Time
	if d > 0 {
		notAfter = time.Now().Add(d)
	}
	usage := pki.ServerAuth
	if client {
		usage |= pki.ClientAuth
	}
	kp, err := ca.ca.Issue(pki.CertOptions{
		DNSNames: []string{"localhost", "hubspoke-webhook.hubspoke-system.svc"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
		Usage:    usage,
		NotAfter: notAfter,
	})
	if err != nil {
		t.Fatal(err)
	}
	return kp.CertPEM, kp.KeyPEM, kp.Cert.SerialNumber
}

// writeSecretVolume lays out tls.crt and tls.key the way the kubelet
// updates a Secret volume: files in a timestamped directory, ..data a
// symlink to it swapped by an atomic rename, tls.crt -> ..data/tls.crt.
func writeSecretVolume(t testing.TB, dir string, gen int, crt, key []byte) {
	t.Helper()
	ts := fmt.Sprintf("..gen_%d", gen)
	must(t, os.Mkdir(filepath.Join(dir, ts), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ts, CertFileName), crt, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, ts, KeyFileName), key, 0o600))
	tmp := filepath.Join(dir, "..data_tmp")
	must(t, os.Symlink(ts, tmp))
	must(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	for _, name := range []string{CertFileName, KeyFileName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); os.IsNotExist(err) {
			must(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
		}
	}
	if gen > 1 {
		must(t, os.RemoveAll(filepath.Join(dir, fmt.Sprintf("..gen_%d", gen-1))))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// versionSetter converts test Widgets by rewriting their leading
// apiVersion; delay slows each conversion down.
type versionSetter struct{ delay time.Duration }

func (versionSetter) Group() string      { return "example.com" }
func (versionSetter) Kind() string       { return "Widget" }
func (versionSetter) Versions() []string { return []string{"v1", "v1alpha1"} }
func (v versionSetter) Convert(dst, obj []byte, to string) ([]byte, error) {
	if v.delay > 0 {
		time.Sleep(v.delay)
	}
	_, rest, _ := bytes.Cut(obj, []byte(`",`))
	dst = append(dst, `{"apiVersion":"`+to+`",`...)
	return append(dst, rest...), nil
}

const testReview = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"uid-1","desiredAPIVersion":"example.com/v1","objects":[` +
	`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a","namespace":"default"},"spec":{"replicas":1}},` +
	`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"b","namespace":"default"},"spec":{"replicas":2}}]}}`

const testResponse = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"uid-1","convertedObjects":[` +
	`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","namespace":"default"},"spec":{"replicas":1}},` +
	`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b","namespace":"default"},"spec":{"replicas":2}}],"result":{"status":"Success"}}}`

// testServer is a running Run on loopback.
type testServer struct {
	url    string
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// start runs the server with a fresh registry and a review handler unless
// opts has a Handler; it waits until the server accepts connections.
func start(t testing.TB, opts Options, conv review.Converter) *testServer {
	t.Helper()
	reg := prometheus.NewRegistry()
	if opts.Handler == nil {
		if conv == nil {
			conv = versionSetter{}
		}
		h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}, Registerer: reg})
		must(t, err)
		opts.Handler = h
	}
	if opts.ShutdownDelay == 0 {
		opts.ShutdownDelay = -1 // no drain delay unless a test wants one
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	opts.Listener = ln
	opts.Registerer = reg
	ready := make(chan net.Addr, 1)
	opts.OnReady = func(a net.Addr) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- Run(ctx, opts) }()
	select {
	case a := <-ready:
		ts.url = "https://" + a.String()
	case err := <-ts.done:
		cancel()
		t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready after 10s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-ts.done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10s")
		}
	})
	return ts
}

// stop cancels the server and returns Run's result.
func (ts *testServer) stop(t testing.TB) error {
	t.Helper()
	ts.cancel()
	select {
	case err := <-ts.done:
		ts.done <- err // for the cleanup
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop within 20s")
		return nil
	}
}

// client trusts roots and presents cert, if any.
func client(roots []byte, cert *tls.Certificate, keepAlive bool) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(roots)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 8},
		Timeout:   30 * time.Second,
	}
}

// convert posts testReview and checks the answer.
func convert(c *http.Client, url string) error {
	resp, err := c.Post(url+"/convert", "application/json", strings.NewReader(testReview))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || string(b) != testResponse {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}

func get(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// newCertDir returns a Secret-volume cert dir holding a serving
// certificate from ca.
func newCertDir(t testing.TB, ca *testCA) string {
	dir := t.TempDir()
	crt, key, _ := ca.issue(t, false)
	writeSecretVolume(t, dir, 1, crt, key)
	return dir
}
