package testcert_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/pki"
)

func TestWriteLoopback(t *testing.T) {
	dir := t.TempDir()
	certPEM := testcert.WriteLoopback(t, dir)
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("returned PEM holds no certificate")
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}

// TestIssue: the options reach pki (a chosen window, names, usage) and the
// certificate chains to the CA.
func TestIssue(t *testing.T) {
	ca := testcert.CA(t, "test CA")
	if ca.Cert.Subject.CommonName != "test CA" {
		t.Errorf("CA named %q", ca.Cert.Subject.CommonName)
	}
	// Expired two days ago: it chains to the CA within its own window.
	expired := testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{"x"}, NotBefore: time.Now().Add(-72 * time.Hour), NotAfter: time.Now().Add(-48 * time.Hour)})
	if err := pki.Verify([]*x509.Certificate{expired.Cert}, []*x509.Certificate{ca.Cert}, "x", expired.Cert.NotBefore.Add(time.Second)); err != nil {
		t.Errorf("expired certificate within its window: %v", err)
	}
	// Not yet valid: from an hour on, for an hour.
	notBefore := time.Now().Add(time.Hour).Truncate(time.Second)
	kp := testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{"widgets.default.svc"}, NotBefore: notBefore, NotAfter: notBefore.Add(time.Hour)})
	if !kp.Cert.NotBefore.Equal(notBefore) || kp.Cert.DNSNames[0] != "widgets.default.svc" {
		t.Errorf("certificate for %v from %s, want widgets.default.svc from %s", kp.Cert.DNSNames, kp.Cert.NotBefore, notBefore)
	}
	roots := []*x509.Certificate{ca.Cert}
	if err := pki.Verify([]*x509.Certificate{kp.Cert}, roots, "widgets.default.svc", time.Now()); err == nil {
		t.Error("valid now, want not yet valid")
	}
	err := pki.Verify([]*x509.Certificate{kp.Cert}, roots, "widgets.default.svc", notBefore.Add(time.Minute))
	if err != nil {
		t.Error(err)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the failure and ends
// the goroutine, as testing's does.
type fatalRecorder struct {
	testing.TB
	failure string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatal(args ...any) {
	r.failure = fmt.Sprint(args...)
	runtime.Goexit()
}

// TestIssueFails: pki's refusal fails the test, with pki's message.
func TestIssueFails(t *testing.T) {
	r := &fatalRecorder{TB: t}
	done := make(chan bool)
	go func() {
		defer close(done)
		testcert.Issue(r, testcert.CA(t, "test CA"), pki.CertOptions{})
		t.Error("Issue returned after pki refused the options")
	}()
	<-done
	if !strings.Contains(r.failure, "needs at least one DNS name or IP address") {
		t.Errorf("failure %q, want pki's error", r.failure)
	}
}

// TestChain: a leaf of the intermediate verifies against the root with
// the intermediate served, and not without it.
func TestChain(t *testing.T) {
	root, inter := testcert.Chain(t, "test root", "test intermediate")
	leaf := testcert.Issue(t, inter, pki.CertOptions{DNSNames: []string{"x.default.svc"}})
	roots := x509.NewCertPool()
	roots.AddCert(root.Cert)
	inters := x509.NewCertPool()
	inters.AddCert(inter.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, DNSName: "x.default.svc"}); err != nil {
		t.Errorf("with the intermediate: %v", err)
	}
	var ua x509.UnknownAuthorityError
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "x.default.svc"}); !errors.As(err, &ua) {
		t.Errorf("without the intermediate: %v, want unknown authority", err)
	}
}
