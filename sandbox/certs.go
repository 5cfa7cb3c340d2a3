package sandbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// ServiceCert is a CA and a serving certificate it signed for a Kubernetes
// service, all PEM encoded.
type ServiceCert struct {
	CA   []byte // the CA certificate: a CRD's caBundle
	Cert []byte // the serving certificate
	Key  []byte // the serving certificate's private key
}

// NewServiceCert generates a CA and a serving certificate signed by it, valid
// for a year for NAME.NAMESPACE.svc (what the API server checks when it calls
// a webhook through a service reference), NAME.NAMESPACE.svc.cluster.local,
// localhost and 127.0.0.1.
func NewServiceCert(namespace, name string) (*ServiceCert, error) {
	svc := name + "." + namespace + ".svc"
	return NewCert("hubspoke sandbox CA for "+name+"."+namespace, svc, svc+".cluster.local", "localhost")
}

// NewCert generates a CA and a serving certificate signed by it, valid for a
// year for the given DNS names and the loopback addresses. With no DNS
// name at all, the certificate is one a webhook must not be accepted with
// through a Service: the API server's "x509: certificate is valid for ...,
// not NAME.NAMESPACE.svc".
func NewCert(caName string, dnsNames ...string) (*ServiceCert, error) {
	ca, err := newCA(caName)
	if err != nil {
		return nil, err
	}
	cn := "localhost"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	cert, err := ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    dnsNames,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	return &ServiceCert{CA: ca.certPEM, Cert: cert.certPEM, Key: cert.keyPEM}, nil
}

// TLSCertificate returns the serving certificate and key for a tls.Config.
func (c *ServiceCert) TLSCertificate() (tls.Certificate, error) {
	cert, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sandbox: serving key pair: %w", err)
	}
	return cert, nil
}

// keyPair is a certificate and its key, parsed and PEM encoded.
type keyPair struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
}

// newCA generates a self-signed CA valid for a year.
func newCA(name string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: generate CA key: %w", err)
	}
	return sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, key)
}

// issue signs tmpl (names and usages; validity and serial are filled in)
// with a fresh key.
func (ca *keyPair) issue(tmpl *x509.Certificate) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox: generate key: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	return sign(tmpl, ca, key)
}

func sign(tmpl *x509.Certificate, ca *keyPair, key *ecdsa.PrivateKey) (*keyPair, error) {
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sandbox: create certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("sandbox: parse certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode key: %w", err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
