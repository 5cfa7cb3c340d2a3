// Package testcert is a thin *testing.T wrapper over package pki, the one
// certificate generator: a CA, a certificate with chosen names, addresses,
// usage and validity window (expired, not yet valid, for another name), and
// a loopback serving certificate laid out as hubspoke serve reads a cert
// dir. Each fails the test on error.
package testcert

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/pki"
)

// CABackdate is how long before now a CA from [CA] is valid: long enough
// that the certificates a test backdates (expired ones among them) lie
// within its validity, as a real CA is older than what it signed.
const CABackdate = 30 * 24 * time.Hour

// CA returns a new CA named name, valid from CABackdate ago for
// pki.DefaultCAValidity.
func CA(t testing.TB, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name, NotBefore: time.Now().Add(-CABackdate)})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Issue returns a certificate that ca signed, as opts describe it
// (pki.CA.Issue).
func Issue(t testing.TB, ca *pki.CA, opts pki.CertOptions) *pki.KeyPair {
	t.Helper()
	kp, err := ca.Issue(opts)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// WriteLoopback writes a serving certificate for localhost and 127.0.0.1,
// issued by a new CA (pki's default validity), and its key into dir as
// tls.crt and tls.key, and returns the CA's PEM (what a client trusts).
func WriteLoopback(t testing.TB, dir string) []byte {
	t.Helper()
	ca := CA(t, "hubspoke test CA")
	kp := Issue(t, ca, pki.CertOptions{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err := kp.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM
}

// Chain returns a root CA and an intermediate CA the root signed, named
// rootName and interName: a two-level hierarchy such as cert-manager's CA
// issuers or a company PKI give, whose leaves (the intermediate's Issue)
// verify against the root only when the intermediate is served with them.
// pki issues one level only (its CAs sign leaves), so the two CAs are made
// here with crypto/x509.
func Chain(t testing.TB, rootName, interName string) (root, inter *pki.CA) {
	t.Helper()
	now := time.Now()
	mk := func(name string, parent *pki.CA, pathLen int) *pki.CA {
		key, err := pki.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial, Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-CABackdate), NotAfter: now.Add(pki.DefaultCAValidity),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true, IsCA: true, MaxPathLen: pathLen, MaxPathLenZero: pathLen == 0,
		}
		issuer, signer := tmpl, key
		if parent != nil {
			issuer, signer = parent.Cert, parent.Key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM, err := pki.EncodePrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return &pki.CA{KeyPair: pki.KeyPair{Cert: c, Key: key, CertPEM: pki.EncodeCertificates(c), KeyPEM: keyPEM}}
	}
	root = mk(rootName, nil, 1)
	inter = mk(interName, root, 0)
	return root, inter
}
