// Package testcert is a thin *testing.T wrapper over package pki, the one
// certificate generator: a loopback serving certificate laid out as
// hubspoke serve reads a cert dir.
package testcert

import (
	"net"
	"testing"

	"github.com/hubspoke/hubspoke/pki"
)

// WriteLoopback writes a serving certificate for localhost and 127.0.0.1,
// issued by a new CA (pki.NewCA, pki's default validity), and its key into
// dir as tls.crt and tls.key, and returns the CA's PEM (what a client
// trusts).
func WriteLoopback(t testing.TB, dir string) []byte {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "hubspoke test CA"})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.Issue(pki.CertOptions{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kp.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM
}
