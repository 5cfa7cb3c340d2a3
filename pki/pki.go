// Package pki makes the certificates a conversion webhook needs: a CA, a
// serving certificate for a Kubernetes Service signed by it, their PEM
// encodings, and the pieces of a safe rotation (a CA bundle that holds the
// old and the new CA at once, and "expires within" checks).
//
// It is the one certificate generator of hubspoke: `hubspoke deploy
// --certs hubspoke`, `hubspoke certs rotate`, the sandbox, the tests and
// the examples all use it.
//
// Keys are ECDSA P-256 ([NewKey]). A CA may sign certificates but no
// further CAs (path length 0). A serving certificate is a leaf for server
// authentication whose names are those the API server checks when it calls
// a webhook through a Service reference: NAME.NAMESPACE.svc, and the other
// forms a client in the cluster may use. A client certificate
// ([CertOptions.Usage] [ClientAuth]) names a user as the Kubernetes API
// server reads it: the CommonName is the user, each Organization a group
// (system:masters for a cluster administrator). Tests reproduce what
// clients refuse with a chosen validity window (expired, not yet valid)
// and with [CertOptions.CommonNameOnly].
//
// The API server trusts a webhook's certificate if any CA in the CRD's
// spec.conversion.webhook.clientConfig.caBundle signed it. A rotation that
// never breaks a request therefore goes: add the new CA to the bundle next
// to the old one ([Bundle]), wait until the API server uses that bundle,
// switch the serving certificate to one the new CA signed, and only then
// drop the old CA from the bundle.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Defaults of [CAOptions] and [CertOptions].
const (
	// DefaultCAValidity is how long a CA is valid: five years, so that
	// serving certificates are renewed many times under one CA.
	DefaultCAValidity = 5 * 365 * 24 * time.Hour
	// DefaultValidity is how long a serving certificate is valid: one year.
	DefaultValidity = 365 * 24 * time.Hour
	// Backdate is how long before now a certificate's NotBefore lies by
	// default, so that a peer whose clock is behind accepts it.
	Backdate = time.Hour
)

// File names (and kubernetes.io/tls Secret keys) of a certificate, its key
// and the CA that signed it, as cert-manager and the webhook server use them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// KeyPair is a certificate and its private key, parsed and PEM encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte // one CERTIFICATE block
	KeyPEM  []byte // one PRIVATE KEY block (PKCS #8)
}

// CA is a certificate authority: a self-signed certificate that signs
// serving certificates.
type CA struct {
	KeyPair
}

// CAOptions describe a new CA. The zero value is a CA named "hubspoke CA",
// valid from an hour ago for [DefaultCAValidity].
type CAOptions struct {
	CommonName string    // default "hubspoke CA"
	NotBefore  time.Time // default: now minus Backdate
	NotAfter   time.Time // default: now plus DefaultCAValidity
}

// Usage is what a certificate authenticates: a set of [ServerAuth] and
// [ClientAuth], its extended key usages.
type Usage uint8

const (
	// ServerAuth is a TLS server's certificate, the default. It needs at
	// least one DNS name or IP address: clients check only those.
	ServerAuth Usage = 1 << iota
	// ClientAuth is a certificate a TLS client presents. The Kubernetes
	// API server reads its CommonName as the user name and its
	// Organization as the user's groups. A certificate for client
	// authentication only needs a CommonName and no DNS name.
	ClientAuth
)

// CertOptions describe a certificate a CA issues.
type CertOptions struct {
	// CommonName defaults to the first DNS name (or IP address). Servers'
	// clients check only the subject alternative names (DNSNames, IPs);
	// the Kubernetes API server takes a client certificate's CommonName
	// as the user name.
	CommonName string
	// Organization is the subject's organizations: the groups of a client
	// certificate's user, as the Kubernetes API server reads them
	// (system:masters: a cluster administrator). The certificate holds
	// them as a set: their order is not kept.
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	NotBefore    time.Time // default: now minus Backdate
	NotAfter     time.Time // default: now plus DefaultValidity
	// Usage is ServerAuth (the default, the zero value), ClientAuth, or
	// ServerAuth|ClientAuth.
	Usage Usage
	// CommonNameOnly issues a server certificate whose only name is the
	// CommonName, with no subject alternative names, as tools made them
	// before 2020. Clients built with Go 1.15 or later, the API server
	// among them, refuse it ("x509: certificate relies on legacy Common
	// Name field, use SANs instead"): it exists to reproduce that refusal.
	// It needs a CommonName and neither DNSNames nor IPs.
	CommonNameOnly bool
}

// NewCA generates a CA.
func NewCA(opts CAOptions) (*CA, error) {
	if opts.CommonName == "" {
		opts.CommonName = "hubspoke CA"
	}
	notBefore, notAfter, err := validity(opts.NotBefore, opts.NotAfter, DefaultCAValidity)
	if err != nil {
		return nil, fmt.Errorf("pki: CA %q: %w", opts.CommonName, err)
	}
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: opts.CommonName},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // signs leaves only
	}
	kp, err := sign(tmpl, nil, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA %q: %w", opts.CommonName, err)
	}
	return &CA{*kp}, nil
}

// Issue signs a new certificate with a new key. A server certificate
// needs at least one DNS name or IP address (or, with CommonNameOnly, a
// CommonName and nothing else); a certificate for client authentication
// only needs a CommonName or a name to take it from.
func (ca *CA) Issue(opts CertOptions) (*KeyPair, error) {
	usage := opts.Usage
	if usage == 0 {
		usage = ServerAuth
	}
	if usage&^(ServerAuth|ClientAuth) != 0 {
		return nil, fmt.Errorf("pki: unknown usage %#x: want ServerAuth, ClientAuth or both", uint8(opts.Usage))
	}
	named := len(opts.DNSNames) > 0 || len(opts.IPs) > 0
	switch {
	case opts.CommonNameOnly:
		if named || opts.CommonName == "" {
			return nil, errors.New("pki: a CommonNameOnly certificate needs a CommonName and neither DNS names nor IP addresses")
		}
	case usage&ServerAuth != 0 && !named:
		return nil, errors.New("pki: a server certificate needs at least one DNS name or IP address")
	case !named && opts.CommonName == "":
		return nil, errors.New("pki: a client certificate needs a CommonName (its user name), a DNS name or an IP address")
	}
	if opts.CommonName == "" {
		if len(opts.DNSNames) > 0 {
			opts.CommonName = opts.DNSNames[0]
		} else {
			opts.CommonName = opts.IPs[0].String()
		}
	}
	notBefore, notAfter, err := validity(opts.NotBefore, opts.NotAfter, DefaultValidity)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate %q: %w", opts.CommonName, err)
	}
	key, err := NewKey()
	if err != nil {
		return nil, err
	}
	var usages []x509.ExtKeyUsage
	if usage&ServerAuth != 0 {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if usage&ClientAuth != 0 {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: opts.CommonName, Organization: opts.Organization},
		DNSNames:              opts.DNSNames,
		IPAddresses:           opts.IPs,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature, // ECDSA: no key encipherment
		ExtKeyUsage:           usages,
		BasicConstraintsValid: true,
	}
	kp, err := sign(tmpl, ca, key)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate %q: %w", opts.CommonName, err)
	}
	return kp, nil
}

// NewKey generates a private key of the kind pki's certificates have
// (ECDSA P-256), for a key that needs no certificate such as the
// Kubernetes API server's service-account signing key.
func NewKey() (crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generating key: %w", err)
	}
	return key, nil
}

// IssueService signs a serving certificate for the Service name in
// namespace, valid for [ServiceDNSNames] plus any further names and
// addresses in opts.
func (ca *CA) IssueService(namespace, name string, opts CertOptions) (*KeyPair, error) {
	opts.DNSNames = append(ServiceDNSNames(namespace, name), opts.DNSNames...)
	if opts.CommonName == "" {
		opts.CommonName = name + "." + namespace + ".svc"
	}
	return ca.Issue(opts)
}

// ServiceDNSNames returns the names by which clients in a cluster reach
// the Service name in namespace: NAME, NAME.NAMESPACE, NAME.NAMESPACE.svc
// (the one the API server checks for a webhook) and
// NAME.NAMESPACE.svc.cluster.local.
func ServiceDNSNames(namespace, name string) []string {
	svc := name + "." + namespace + ".svc"
	return []string{name, name + "." + namespace, svc, svc + ".cluster.local"}
}

// ServiceServerName is the TLS server name the API server verifies when it
// calls a webhook through a Service reference.
func ServiceServerName(namespace, name string) string {
	return name + "." + namespace + ".svc"
}

// TLSCertificate returns the pair for a tls.Config.
func (kp *KeyPair) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{kp.Cert.Raw}, PrivateKey: kp.Key, Leaf: kp.Cert}
}

// WriteFiles writes the certificate to dir/tls.crt and the key to
// dir/tls.key (mode 0600), the layout of a mounted kubernetes.io/tls
// Secret that the webhook server reads.
func (kp *KeyPair) WriteFiles(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, CertFile), kp.CertPEM, 0o644); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), kp.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// ParseKeyPair parses a PEM certificate (the first block is the leaf; any
// further blocks are ignored) and its PEM private key, and checks that they
// belong together.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("pki: certificate %q and key: %w", certs[0].Subject.CommonName, err)
	}
	first, _ := pem.Decode(certPEM)
	return &KeyPair{Cert: certs[0], Key: key, CertPEM: pem.EncodeToMemory(first), KeyPEM: keyPEM}, nil
}

// ParseCA parses a CA certificate and its key, as [KeyPair.CertPEM] and
// [KeyPair.KeyPEM] hold them, and checks that the certificate may sign.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !kp.Cert.IsCA || kp.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("pki: certificate %q is not a CA", kp.Cert.Subject.CommonName)
	}
	return &CA{*kp}, nil
}

// EncodeCertificates returns the certificates as PEM CERTIFICATE blocks.
func EncodeCertificates(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}) // writes to a Buffer do not fail
	}
	return b.Bytes()
}

// EncodePrivateKey returns the key as a PEM PRIVATE KEY (PKCS #8) block.
func EncodePrivateKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseCertificates parses every block of PEM data as a certificate, as
// in a CA bundle or a certificate chain. Data with no block, a block of
// another type, or text after the last block is an error, as is a block
// that does not parse; errors name the block (from 1).
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for n := 1; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("pki: PEM block %d is %q, want CERTIFICATE", n, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("pki: PEM block %d: %w", n, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("pki: no PEM certificate found")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("pki: %d bytes after PEM block %d are not PEM", len(rest), len(certs))
	}
	return certs, nil
}

// ParsePrivateKey parses a PEM private key: PKCS #8 (PRIVATE KEY), SEC 1
// (EC PRIVATE KEY) or PKCS #1 (RSA PRIVATE KEY), as cert-manager and other
// tools write them.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("pki: no PEM private key found")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("pki: PEM block is %q, want a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", block.Type, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("pki: %T is not a signing key", key)
	}
	return signer, nil
}

// Bundle returns a CA bundle (concatenated PEM certificates, as a CRD's
// caBundle holds them) of the given CAs in order, each once. During a
// rotation the bundle holds the old and the new CA, so that the API server
// trusts a serving certificate signed by either.
func Bundle(cas ...*x509.Certificate) []byte {
	var out []*x509.Certificate
	for _, c := range cas {
		if !containsCert(out, c) {
			out = append(out, c)
		}
	}
	return EncodeCertificates(out...)
}

// Without returns the bundle without the CA drop: the last step of a
// rotation, once no serving certificate the old CA signed is in use.
func Without(bundle []*x509.Certificate, drop *x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range bundle {
		if !c.Equal(drop) {
			out = append(out, c)
		}
	}
	return out
}

// Contains reports whether the bundle holds the certificate c.
func Contains(bundle []*x509.Certificate, c *x509.Certificate) bool {
	return containsCert(bundle, c)
}

func containsCert(list []*x509.Certificate, c *x509.Certificate) bool {
	for _, x := range list {
		if x.Equal(c) {
			return true
		}
	}
	return false
}

// ExpiresWithin reports whether c is no longer valid at now+d: true for a
// certificate to renew now if it must stay valid for d more.
func ExpiresWithin(c *x509.Certificate, now time.Time, d time.Duration) bool {
	return !now.Add(d).Before(c.NotAfter)
}

// Verify checks that chain (a leaf and any intermediates, as a server
// presents them) chains to one of roots at the given time, for server
// authentication under serverName — the check the API server makes of a
// webhook's certificate against the CRD's caBundle.
func Verify(chain, roots []*x509.Certificate, serverName string, at time.Time) error {
	if len(chain) == 0 {
		return errors.New("pki: no certificate to verify")
	}
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		DNSName:       serverName,
		Roots:         pool,
		Intermediates: inter,
		CurrentTime:   at,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func validity(notBefore, notAfter time.Time, def time.Duration) (time.Time, time.Time, error) {
	now := time.Now()
	if notBefore.IsZero() {
		notBefore = now.Add(-Backdate)
	}
	if notAfter.IsZero() {
		notAfter = now.Add(def)
	}
	if !notAfter.After(notBefore) {
		return time.Time{}, time.Time{}, fmt.Errorf("NotAfter %s is not after NotBefore %s",
			notAfter.UTC().Format(time.RFC3339), notBefore.UTC().Format(time.RFC3339))
	}
	return notBefore.UTC().Truncate(time.Second), notAfter.UTC().Truncate(time.Second), nil
}

// sign creates the certificate tmpl for key, signed by parent (nil:
// self-signed). It is the one place hubspoke creates a certificate.
func sign(tmpl *x509.Certificate, parent *CA, key crypto.Signer) (*KeyPair, error) {
	issuer, signer := tmpl, key
	if parent != nil {
		issuer, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodePrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: EncodeCertificates(cert), KeyPEM: keyPEM}, nil
}

// serial returns a random positive 127-bit serial number (RFC 5280 allows
// up to 20 octets; randomness keeps serials of one CA distinct).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n.Add(n, big.NewInt(1))
}
