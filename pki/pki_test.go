package pki_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hubspoke/hubspoke/pki"
)

func newCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestNewCA(t *testing.T) {
	ca := newCA(t, "test CA")
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid {
		t.Error("CA certificate is not a CA")
	}
	if c.MaxPathLen != 0 || !c.MaxPathLenZero {
		t.Errorf("path length: %d (zero %v), want 0", c.MaxPathLen, c.MaxPathLenZero)
	}
	if c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Error("CA may not sign certificates")
	}
	if c.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("key algorithm %v, want ECDSA", c.PublicKeyAlgorithm)
	}
	if len(c.SubjectKeyId) == 0 {
		t.Error("no subject key id")
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if got := c.NotAfter.Sub(c.NotBefore); got < pki.DefaultCAValidity || got > pki.DefaultCAValidity+pki.Backdate+time.Minute {
		t.Errorf("validity %v, want about %v", got, pki.DefaultCAValidity)
	}
}

func TestIssueService(t *testing.T) {
	ca := newCA(t, "test CA")
	kp, err := ca.IssueService("hubspoke-system", "widgets", pki.CertOptions{
		DNSNames: []string{"localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"widgets", "widgets.hubspoke-system", "widgets.hubspoke-system.svc",
		"widgets.hubspoke-system.svc.cluster.local", "localhost"}
	if diff := cmp.Diff(want, kp.Cert.DNSNames); diff != "" {
		t.Errorf("DNS names (-want +got):\n%s", diff)
	}
	if kp.Cert.Subject.CommonName != "widgets.hubspoke-system.svc" {
		t.Errorf("common name %q", kp.Cert.Subject.CommonName)
	}
	if kp.Cert.IsCA {
		t.Error("serving certificate is a CA")
	}
	if diff := cmp.Diff([]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, kp.Cert.ExtKeyUsage); diff != "" {
		t.Errorf("extended key usage (-want +got):\n%s", diff)
	}
	roots := []*x509.Certificate{ca.Cert}
	now := time.Now()
	for _, name := range append(want, "127.0.0.1") {
		if err := pki.Verify([]*x509.Certificate{kp.Cert}, roots, name, now); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"other.hubspoke-system.svc", "widgets.default.svc", "10.0.0.1"} {
		if err := pki.Verify([]*x509.Certificate{kp.Cert}, roots, name, now); err == nil {
			t.Errorf("%s: verified, want a name mismatch", name)
		}
	}
	other := newCA(t, "other CA")
	if err := pki.Verify([]*x509.Certificate{kp.Cert}, []*x509.Certificate{other.Cert}, pki.ServiceServerName("hubspoke-system", "widgets"), now); err == nil {
		t.Error("verified against another CA")
	}
}

func TestIssueErrors(t *testing.T) {
	ca := newCA(t, "test CA")
	now := time.Now()
	for _, tc := range []struct {
		name string
		opts pki.CertOptions
		want string
	}{
		{"no names", pki.CertOptions{}, "server certificate needs at least one DNS name or IP address"},
		{"server and client, no names", pki.CertOptions{CommonName: "x", Usage: pki.ServerAuth | pki.ClientAuth}, "server certificate needs at least one DNS name"},
		{"client without a user", pki.CertOptions{Usage: pki.ClientAuth, Organization: []string{"system:masters"}}, "client certificate needs a CommonName"},
		{"unknown usage", pki.CertOptions{DNSNames: []string{"x"}, Usage: 4}, "unknown usage 0x4"},
		{"CommonNameOnly without a CommonName", pki.CertOptions{CommonNameOnly: true}, "CommonNameOnly certificate needs a CommonName"},
		{"CommonNameOnly with a DNS name", pki.CertOptions{CommonName: "x", DNSNames: []string{"x"}, CommonNameOnly: true}, "neither DNS names nor IP addresses"},
		{"CommonNameOnly with an IP", pki.CertOptions{CommonName: "x", IPs: []net.IP{net.IPv4(10, 0, 0, 1)}, CommonNameOnly: true}, "neither DNS names nor IP addresses"},
		{"inverted validity", pki.CertOptions{DNSNames: []string{"x"}, NotBefore: now, NotAfter: now.Add(-time.Hour)}, "is not after NotBefore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ca.Issue(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestUsage: each Usage gives its extended key usages, and a certificate
// verifies for exactly those; a client certificate carries the user and
// groups the Kubernetes API server reads from it.
func TestUsage(t *testing.T) {
	ca := newCA(t, "test CA")
	server, client := x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth
	for _, tc := range []struct {
		name     string
		opts     pki.CertOptions
		wantEKU  []x509.ExtKeyUsage
		wantCN   string
		wantOrgs []string
	}{
		{"default is server", pki.CertOptions{DNSNames: []string{"x"}}, []x509.ExtKeyUsage{server}, "x", nil},
		{"server and client", pki.CertOptions{DNSNames: []string{"x"}, Usage: pki.ServerAuth | pki.ClientAuth}, []x509.ExtKeyUsage{server, client}, "x", nil},
		{"client only, no names", pki.CertOptions{CommonName: "admin", Organization: []string{"system:masters", "team"}, Usage: pki.ClientAuth},
			[]x509.ExtKeyUsage{client}, "admin", []string{"system:masters", "team"}},
		{"client only, CommonName from the DNS name", pki.CertOptions{DNSNames: []string{"node-1"}, Usage: pki.ClientAuth}, []x509.ExtKeyUsage{client}, "node-1", nil},
		{"server with an organization", pki.CertOptions{DNSNames: []string{"x"}, Organization: []string{"example"}}, []x509.ExtKeyUsage{server}, "x", []string{"example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := ca.Issue(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantEKU, kp.Cert.ExtKeyUsage); diff != "" {
				t.Errorf("extended key usage (-want +got):\n%s", diff)
			}
			if kp.Cert.Subject.CommonName != tc.wantCN {
				t.Errorf("common name %q, want %q", kp.Cert.Subject.CommonName, tc.wantCN)
			}
			// DER sorts the members of the organizations' SET.
			if diff := cmp.Diff(tc.wantOrgs, kp.Cert.Subject.Organization, cmpopts.SortSlices(strings.Compare)); diff != "" {
				t.Errorf("organization (-want +got):\n%s", diff)
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca.Cert)
			for _, u := range []x509.ExtKeyUsage{server, client} {
				_, err := kp.Cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{u}})
				if want := slices.Contains(tc.wantEKU, u); (err == nil) != want {
					t.Errorf("verify for usage %v: %v, want success %v", u, err, want)
				}
			}
		})
	}
}

// TestClientCertificateTLS: a client-only certificate authenticates a
// client to a server that requires client certificates from the CA, as
// the sandbox's admin certificate does to kube-apiserver, and the server
// sees the user and groups.
func TestClientCertificateTLS(t *testing.T) {
	ca := newCA(t, "test CA")
	serving, err := ca.Issue(pki.CertOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := ca.Issue(pki.CertOptions{CommonName: "admin", Organization: []string{"system:masters"}, Usage: pki.ClientAuth})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.TLS.PeerCertificates[0]
		io.WriteString(w, c.Subject.CommonName+" "+strings.Join(c.Subject.Organization, ","))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving.TLSCertificate()}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin.TLSCertificate()}}}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if got, want := string(body), "admin system:masters"; got != want {
		t.Errorf("server saw %q, want %q", got, want)
	}
}

// TestCommonNameOnly: the legacy certificate has no subject alternative
// names, and Go's client refuses it with the error users meet.
func TestCommonNameOnly(t *testing.T) {
	ca := newCA(t, "test CA")
	kp, err := ca.Issue(pki.CertOptions{CommonName: "widgets.default.svc", CommonNameOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(kp.Cert.DNSNames) != 0 || len(kp.Cert.IPAddresses) != 0 || kp.Cert.Subject.CommonName != "widgets.default.svc" {
		t.Errorf("names %v %v, common name %q", kp.Cert.DNSNames, kp.Cert.IPAddresses, kp.Cert.Subject.CommonName)
	}
	err = pki.Verify([]*x509.Certificate{kp.Cert}, []*x509.Certificate{ca.Cert}, "widgets.default.svc", time.Now())
	if err == nil || !strings.Contains(err.Error(), "relies on legacy Common Name field") {
		t.Errorf("err = %v, want the legacy Common Name refusal", err)
	}
}

// TestValidityWindow: a chosen window is the certificate's, to the second,
// and a certificate not yet valid is refused as such.
func TestValidityWindow(t *testing.T) {
	ca := newCA(t, "test CA")
	notBefore := time.Now().Add(24 * time.Hour).Truncate(time.Second).UTC()
	notAfter := notBefore.Add(48 * time.Hour)
	kp, err := ca.Issue(pki.CertOptions{DNSNames: []string{"x"}, NotBefore: notBefore.Add(time.Millisecond), NotAfter: notAfter})
	if err != nil {
		t.Fatal(err)
	}
	if !kp.Cert.NotBefore.Equal(notBefore) || !kp.Cert.NotAfter.Equal(notAfter) {
		t.Errorf("validity %s to %s, want %s to %s", kp.Cert.NotBefore, kp.Cert.NotAfter, notBefore, notAfter)
	}
	err = pki.Verify([]*x509.Certificate{kp.Cert}, []*x509.Certificate{ca.Cert}, "x", time.Now())
	var inv x509.CertificateInvalidError
	if !errors.As(err, &inv) || inv.Reason != x509.Expired || !strings.Contains(err.Error(), "not yet valid") {
		t.Errorf("err = %v, want not yet valid", err)
	}
}

func TestNewKey(t *testing.T) {
	key, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		t.Fatalf("key %T, want ECDSA P-256", key)
	}
	other, err := pki.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if ec.Equal(other) {
		t.Error("two keys are equal")
	}
}

func TestExpired(t *testing.T) {
	now := time.Now()
	ca, err := pki.NewCA(pki.CAOptions{NotBefore: now.Add(-72 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.Issue(pki.CertOptions{DNSNames: []string{"x"}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	err = pki.Verify([]*x509.Certificate{kp.Cert}, []*x509.Certificate{ca.Cert}, "x", now)
	var inv x509.CertificateInvalidError
	if !errors.As(err, &inv) || inv.Reason != x509.Expired {
		t.Errorf("err = %v, want expired", err)
	}
	if err := pki.Verify([]*x509.Certificate{kp.Cert}, []*x509.Certificate{ca.Cert}, "x", now.Add(-36*time.Hour)); err != nil {
		t.Errorf("within validity: %v", err)
	}
}

func TestExpiresWithin(t *testing.T) {
	ca := newCA(t, "test CA")
	notAfter := time.Date(2030, 1, 31, 0, 0, 0, 0, time.UTC)
	kp, err := ca.Issue(pki.CertOptions{DNSNames: []string{"x"}, NotBefore: notAfter.Add(-90 * 24 * time.Hour), NotAfter: notAfter})
	if err != nil {
		t.Fatal(err)
	}
	month := 30 * 24 * time.Hour
	for _, tc := range []struct {
		name string
		now  time.Time
		d    time.Duration
		want bool
	}{
		{"well before", notAfter.Add(-2 * month), month, false},
		{"just outside the window", notAfter.Add(-month - time.Second), month, false},
		{"at the window's start", notAfter.Add(-month), month, true},
		{"inside the window", notAfter.Add(-time.Hour), month, true},
		{"expired", notAfter.Add(time.Hour), 0, true},
		{"valid, no window", notAfter.Add(-time.Second), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pki.ExpiresWithin(kp.Cert, tc.now, tc.d); got != tc.want {
				t.Errorf("ExpiresWithin = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRotationBundle follows a rotation: while the bundle holds both CAs,
// certificates from either verify; after the old CA is dropped only the
// new one's do.
func TestRotationBundle(t *testing.T) {
	oldCA, newCAx := newCA(t, "old"), newCA(t, "new")
	oldCert, err := oldCA.IssueService("ns", "svc", pki.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newCert, err := newCAx.IssueService("ns", "svc", pki.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	server := pki.ServiceServerName("ns", "svc")
	now := time.Now()

	both, err := pki.ParseCertificates(pki.Bundle(oldCA.Cert, newCAx.Cert, oldCA.Cert))
	if err != nil {
		t.Fatal(err)
	}
	if len(both) != 2 || !pki.Contains(both, oldCA.Cert) || !pki.Contains(both, newCAx.Cert) {
		t.Fatalf("bundle holds %d certificates, want old and new once each", len(both))
	}
	for name, kp := range map[string]*pki.KeyPair{"old": oldCert, "new": newCert} {
		if err := pki.Verify([]*x509.Certificate{kp.Cert}, both, server, now); err != nil {
			t.Errorf("%s certificate against both CAs: %v", name, err)
		}
	}
	last := pki.Without(both, oldCA.Cert)
	if len(last) != 1 || !last[0].Equal(newCAx.Cert) {
		t.Fatalf("after dropping the old CA: %d certificates", len(last))
	}
	if err := pki.Verify([]*x509.Certificate{newCert.Cert}, last, server, now); err != nil {
		t.Errorf("new certificate against the new CA: %v", err)
	}
	if err := pki.Verify([]*x509.Certificate{oldCert.Cert}, last, server, now); err == nil {
		t.Error("old certificate verified after the old CA was dropped")
	}
}

func TestParseRoundTrip(t *testing.T) {
	ca := newCA(t, "test CA")
	back, err := pki.ParseCA(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(ca.Cert) {
		t.Error("CA certificate changed in the round trip")
	}
	// A CA parsed from PEM issues certificates that verify against the original.
	kp, err := back.IssueService("ns", "svc", pki.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.Verify([]*x509.Certificate{kp.Cert}, []*x509.Certificate{ca.Cert}, "svc.ns.svc", time.Now()); err != nil {
		t.Error(err)
	}
	pair, err := pki.ParseKeyPair(append(kp.CertPEM, ca.CertPEM...), kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !pair.Cert.Equal(kp.Cert) || !bytes.Equal(pair.CertPEM, kp.CertPEM) {
		t.Error("leaf changed in the round trip")
	}
	if _, err := pki.ParseCA(kp.CertPEM, kp.KeyPEM); err == nil || !strings.Contains(err.Error(), "is not a CA") {
		t.Errorf("ParseCA of a leaf: err = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	ca := newCA(t, "test CA")
	other := newCA(t, "other")
	for _, tc := range []struct {
		name      string
		cert, key []byte
		want      string
	}{
		{"empty certificate", nil, ca.KeyPEM, "no PEM certificate found"},
		{"key as certificate", ca.KeyPEM, ca.KeyPEM, `PEM block 1 is "PRIVATE KEY", want CERTIFICATE`},
		{"garbage after", append(append([]byte{}, ca.CertPEM...), "junk"...), ca.KeyPEM, "are not PEM"},
		{"broken DER", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), ca.KeyPEM, "PEM block 1:"},
		{"no key", ca.CertPEM, nil, "no PEM private key found"},
		{"certificate as key", ca.CertPEM, ca.CertPEM, `PEM block is "CERTIFICATE", want a private key`},
		{"mismatched key", ca.CertPEM, other.KeyPEM, "private key does not match public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pki.ParseKeyPair(tc.cert, tc.key)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestServeTLS serves HTTPS with a certificate written by WriteFiles and
// calls it as the API server would: trusting the CA bundle, verifying the
// Service's server name.
func TestServeTLS(t *testing.T) {
	ca := newCA(t, "test CA")
	kp, err := ca.IssueService("ns", "svc", pki.CertOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := kp.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, pki.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v", err, fi.Mode())
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, pki.CertFile), filepath.Join(dir, pki.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted call's handshake error
	srv.StartTLS()
	defer srv.Close()

	call := func(bundle []byte, serverName string) error {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(bundle)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName}}}
		defer c.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := call(pki.Bundle(ca.Cert), "svc.ns.svc"); err != nil {
		t.Errorf("trusted CA: %v", err)
	}
	if err := call(pki.Bundle(newCA(t, "x").Cert), "svc.ns.svc"); err == nil {
		t.Error("untrusted CA: no error")
	}
	// The in-memory pair serves too.
	mem := kp.TLSCertificate()
	if _, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM); err != nil || mem.Leaf != kp.Cert {
		t.Errorf("TLSCertificate: %v", err)
	}
}
