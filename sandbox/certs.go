package sandbox

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/hubspoke/hubspoke/pki"
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
	svc := pki.ServiceServerName(namespace, name)
	return NewCert("hubspoke sandbox CA for "+name+"."+namespace, svc, svc+".cluster.local", "localhost")
}

// NewCert generates a CA and a serving certificate signed by it (package
// pki, with its default validity: a year), for the given DNS names and the
// loopback addresses. With no DNS name at all, the certificate is one a
// webhook must not be accepted with through a Service: the API server's
// "x509: certificate is valid for ..., not NAME.NAMESPACE.svc".
func NewCert(caName string, dnsNames ...string) (*ServiceCert, error) {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: caName})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cn := "localhost"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	cert, err := ca.Issue(pki.CertOptions{CommonName: cn, DNSNames: dnsNames, IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return &ServiceCert{CA: ca.CertPEM, Cert: cert.CertPEM, Key: cert.KeyPEM}, nil
}

// TLSCertificate returns the serving certificate and key for a tls.Config.
func (c *ServiceCert) TLSCertificate() (tls.Certificate, error) {
	cert, err := tls.X509KeyPair(c.Cert, c.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sandbox: serving key pair: %w", err)
	}
	return cert, nil
}
