package pki_test

import (
	"bytes"
	"testing"

	"github.com/hubspoke/hubspoke/pki"
)

// FuzzParseCertificates: any input either fails with an error or gives
// certificates that encode back to PEM which parses to the same ones.
func FuzzParseCertificates(f *testing.F) {
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		f.Fatal(err)
	}
	kp, err := ca.IssueService("ns", "svc", pki.CertOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.CertPEM)
	f.Add(append(append([]byte{}, kp.CertPEM...), ca.CertPEM...))
	f.Add(ca.KeyPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, data []byte) {
		certs, err := pki.ParseCertificates(data)
		if err != nil {
			return
		}
		again, err := pki.ParseCertificates(pki.EncodeCertificates(certs...))
		if err != nil {
			t.Fatalf("re-encoded certificates do not parse: %v", err)
		}
		if len(again) != len(certs) {
			t.Fatalf("%d certificates, %d after the round trip", len(certs), len(again))
		}
		for i := range certs {
			if !bytes.Equal(certs[i].Raw, again[i].Raw) {
				t.Fatalf("certificate %d changed in the round trip", i)
			}
		}
	})
}

// FuzzParsePrivateKey: any input either fails with an error or gives a
// key that encodes back to one that parses.
func FuzzParsePrivateKey(f *testing.F) {
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ca.KeyPEM)
	f.Add(ca.CertPEM)
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		key, err := pki.ParsePrivateKey(data)
		if err != nil {
			return
		}
		enc, err := pki.EncodePrivateKey(key)
		if err != nil {
			t.Fatalf("parsed key does not encode: %v", err)
		}
		if _, err := pki.ParsePrivateKey(enc); err != nil {
			t.Fatalf("re-encoded key does not parse: %v", err)
		}
	})
}
