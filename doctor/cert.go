package doctor

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hubspoke/hubspoke/explain"
)

// handshake is what a TLS handshake with an endpoint showed.
type handshake struct {
	connected       bool // the TCP connection (or the proxy's tunnel) was made
	chain           []*x509.Certificate
	version         uint16
	clientCertAsked bool
	err             error
}

// shake dials addr and performs a TLS handshake as the API server does
// (server name host, HTTP/1.1, no client certificate), without verifying:
// the chain is verified afterwards, so that every fault is named.
func (d *diagnosis) shake(ctx context.Context, addr string) handshake {
	var h handshake
	ctx, cancel := context.WithTimeout(ctx, d.o.DialTimeout)
	defer cancel()
	raw, err := d.dial(ctx, "tcp", addr)
	if err != nil {
		h.err = err
		return h
	}
	defer raw.Close()
	h.connected = true
	cfg := &tls.Config{ServerName: d.host, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}, //nolint:gosec // verified below, with every fault named
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			h.clientCertAsked = true
			return &tls.Certificate{}, nil // the API server presents none to a conversion webhook
		},
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			for _, der := range rawCerts {
				if c, err := x509.ParseCertificate(der); err == nil {
					h.chain = append(h.chain, c)
				}
			}
			return nil
		}}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		h.err = err
		return h
	}
	h.version = conn.ConnectionState().Version
	if h.clientCertAsked {
		// In TLS 1.3 a server that requires a certificate says so after
		// the handshake: read its answer to our empty one.
		wait := min(d.o.DialTimeout, time.Second)
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		_, err := conn.Read(make([]byte, 1))
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			h.err = err
		}
	}
	return h
}

// dial connects to the webhook as the API server would: a URL's host
// directly, a Service's endpoint through the pod network.
func (d *diagnosis) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.url != "" {
		return d.o.Dial(ctx, network, addr)
	}
	return d.o.PodDial(ctx, network, addr)
}

// unreachable reports whether a dial error means the address cannot be
// reached from where doctor runs (pod IPs outside the cluster), rather
// than that nothing listens there.
func unreachable(err error) bool {
	return !errors.Is(err, syscall.ECONNREFUSED)
}

// reachFinding is webhook.reachable for one endpoint: the handshake's
// outcome, each kind of failure with its cause and fix.
func (d *diagnosis) reachFinding(ep *Endpoint, h handshake, timedOut bool) Finding {
	f := Finding{Check: CheckReachable, Endpoint: ep, Severity: SeverityError}
	alert, isAlert := remoteAlert(h.err)
	var rec tls.RecordHeaderError
	switch {
	case !h.connected && errors.Is(h.err, syscall.ECONNREFUSED):
		f.Message = "connection refused: " + h.err.Error()
		if d.url != "" {
			f.Cause = "nothing listens at the URL's host and port: the webhook process is down, or clientConfig.url names another port than the one it listens on"
			f.Fix = "start the webhook, or fix the port in clientConfig.url: " + d.patch("/spec/conversion/webhook/clientConfig/url", `"https://HOST:PORT/convert"`)
		} else {
			f.Cause = "nothing listens at the endpoint: the webhook process is down (crashed, not started) while its endpoint is still listed, or the Service's targetPort is not the port the webhook listens on"
			f.Fix = fmt.Sprintf("kubectl get pods -n %s -o wide; kubectl logs -n %s %s   # and compare the Service's targetPort with the webhook's --addr", d.svcNS, d.svcNS, orDefault(ep.Pod, "POD"))
		}
		f.Explanation = explained(h.err.Error())
	case !h.connected:
		f.Message = "could not connect: " + h.err.Error()
		f.Cause = "the connection was not made while other endpoints of the Service answer: the pod is gone while its endpoint is still listed, or a NetworkPolicy drops traffic to it"
		f.Fix = fmt.Sprintf("kubectl get pods -n %s -o wide; kubectl get networkpolicy -n %s", d.svcNS, d.svcNS)
	case timedOut:
		f.Message = fmt.Sprintf("the TLS handshake did not complete within %s (the connection was made)", d.o.DialTimeout)
		f.Cause = "the process at this endpoint accepts connections but does not answer TLS: it is hung or overloaded, or it is not the webhook (a plain TCP proxy with nothing behind it). The API server gives up after 10 s: net/http: TLS handshake timeout"
		f.Fix = fmt.Sprintf("kubectl logs -n %s %s; kubectl top pod -n %s %s   # a hung or starved process; restart it (kubectl delete pod)", d.svcNS, orDefault(ep.Pod, "POD"), d.svcNS, orDefault(ep.Pod, "POD"))
	case errors.As(h.err, &rec):
		first := string(bytes.TrimRight(rec.RecordHeader[:], "\x00"))
		f.Message = fmt.Sprintf("not TLS: the endpoint's first bytes are %q", first)
		if strings.HasPrefix(first, "HTTP/") {
			f.Message = fmt.Sprintf("plain HTTP: the endpoint answers %q to a TLS handshake", first)
		}
		f.Cause = "the API server always calls a conversion webhook over HTTPS; this endpoint serves plain HTTP (or another protocol) on the port: the webhook has no TLS configured, or the Service's targetPort leads to its metrics or health port"
		f.Fix = "serve HTTPS on the webhook's port (hubspoke serve --cert-dir DIR), with a certificate for " + d.host + "; or point the Service's targetPort at the HTTPS port"
	case h.clientCertAsked && (isAlert || errors.Is(h.err, io.EOF) || errors.Is(h.err, syscall.ECONNRESET)):
		f.Message = "the webhook asks for a client certificate and refused the connection without one: " + h.err.Error()
		f.Cause = "the API server presents no client certificate to a conversion webhook, so every conversion fails (remote error: tls: certificate required)"
		f.Fix = "do not require client certificates on the conversion port (Go: tls.Config ClientAuth VerifyClientCertIfGiven at most)"
	case isAlert:
		f.Message = fmt.Sprintf("the webhook ended the TLS handshake with the alert %q: %v", alert, h.err)
		f.Cause = "the two sides share no TLS version or cipher suite (the API server speaks TLS 1.2 and 1.3 with Go's defaults), or the webhook refused the server name " + d.host
		f.Fix = "let the webhook accept TLS 1.2 and 1.3 with Go's default cipher suites, for the server name " + d.host
	case errors.Is(h.err, io.EOF) || errors.Is(h.err, syscall.ECONNRESET):
		f.Message = "the connection was closed during the TLS handshake: " + h.err.Error()
		f.Cause = "something accepts connections at this endpoint and closes them without TLS: a process that is not the webhook, a sidecar that intercepts the port (a service mesh), or a webhook that crashes on the handshake"
		f.Fix = fmt.Sprintf("kubectl logs -n %s %s --all-containers", d.svcNS, orDefault(ep.Pod, "POD"))
	default:
		f.Message = "the TLS handshake failed: " + h.err.Error()
		f.Explanation = explained(h.err.Error())
		if f.Explanation != nil {
			f.Cause, f.Fix = f.Explanation.Cause, firstFix(f.Explanation)
		}
	}
	if f.Explanation == nil && h.err != nil {
		f.Explanation = explained(h.err.Error())
	}
	return f
}

// remoteAlert returns the alert a TLS peer sent to end a connection
// (crypto/tls reports it as a net.OpError "remote error"), and whether err
// is one.
func remoteAlert(err error) (string, bool) {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" && op.Err != nil {
		return strings.TrimPrefix(op.Err.Error(), "tls: "), true
	}
	var a tls.AlertError
	if errors.As(err, &a) {
		return strings.TrimPrefix(a.Error(), "tls: "), true
	}
	return "", false
}

func firstFix(x *explain.Explanation) string {
	if x != nil && len(x.Fixes) > 0 {
		return x.Fixes[0]
	}
	return ""
}

// verified is what the certificate checks concluded for one chain.
type verified struct {
	findings []Finding // chain, usage, names, expiry
	ok       bool      // the API server would accept this chain
	chainOK  bool      // it chains to the caBundle (at a time the leaf is valid)
}

// verifyChain checks a served chain as the API server does (crypto/x509,
// the caBundle as roots, the name it dials, now) and names each fault
// with its fix: one finding each for certificate.chain, .usage, .names
// and .expiry.
func (d *diagnosis) verifyChain(ep *Endpoint, chain []*x509.Certificate) verified {
	var v verified
	add := func(f Finding) {
		f.Endpoint = ep
		v.findings = append(v.findings, f)
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	now := d.o.Now()
	// Verify at a time the leaf is valid, so that an expired certificate
	// is reported once, as expired, not also as unchained.
	at := now
	if at.After(leaf.NotAfter) {
		at = leaf.NotAfter.Add(-time.Second)
	}
	if at.Before(leaf.NotBefore) {
		at = leaf.NotBefore.Add(time.Second)
	}
	roots := d.caPool
	rootsName := "the caBundle (" + d.caSubjects() + ")"
	if roots == nil && d.url != "" && len(d.crd.Spec.Conversion.Webhook.ClientConfig.CABundle) == 0 {
		if sys, err := x509.SystemCertPool(); err == nil {
			roots, rootsName = sys, "the system roots (no caBundle)"
		}
	}
	chainOK, usageOK, namesOK, timeOK := false, false, false, true
	if roots == nil {
		add(Finding{Check: CheckCertChain, Severity: SeveritySkipped, Message: "no usable caBundle to verify against (see crd.caBundle)"})
	} else {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err == nil {
			chainOK = true
			msg := fmt.Sprintf("issued by %q, chains to %s", leaf.Issuer.String(), rootsName)
			if len(chain) > 1 {
				msg += fmt.Sprintf(" (the webhook serves %d certificates)", len(chain))
			}
			add(Finding{Check: CheckCertChain, Severity: SeverityOK, Message: msg})
		} else {
			add(d.chainFault(leaf, chain, err, rootsName))
		}
	}
	// Key usage: the whole chain must allow serverAuth.
	var usageErr error
	if chainOK {
		_, usageErr = leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	} else if !allowsServerAuth(leaf) {
		usageErr = x509.CertificateInvalidError{Cert: leaf, Reason: x509.IncompatibleUsage}
	}
	var ci x509.CertificateInvalidError
	switch {
	case usageErr == nil:
		usageOK = true
		add(Finding{Check: CheckCertUsage, Severity: SeverityOK, Message: "valid for TLS servers (" + usages(leaf) + ")"})
	case errors.As(usageErr, &ci) && ci.Reason == x509.IncompatibleUsage:
		which := "the serving certificate"
		if ci.Cert != nil && ci.Cert != leaf {
			which = fmt.Sprintf("the chain's %q", ci.Cert.Subject.String())
		}
		bad := leaf
		if ci.Cert != nil {
			bad = ci.Cert
		}
		add(Finding{Check: CheckCertUsage, Severity: SeverityError,
			Message: fmt.Sprintf("%s is not valid for TLS servers: its extended key usages are %s: %v", which, usages(bad), usageErr),
			Cause:   "crypto/x509 refuses a chain whose extended key usages do not include serverAuth, so the API server refuses the webhook: x509: certificate specifies an incompatible key usage",
			Fix:     "reissue the serving certificate with the usages digital signature and server auth (cert-manager: spec.usages: [digital signature, key encipherment, server auth]; openssl: -addext extendedKeyUsage=serverAuth)"})
	default:
		add(Finding{Check: CheckCertUsage, Severity: SeverityError, Message: "crypto/x509 refuses the chain for a TLS server: " + usageErr.Error()})
	}
	// The name the API server verifies.
	if err := leaf.VerifyHostname(d.host); err != nil {
		add(d.nameFault(leaf, err))
	} else {
		namesOK = true
		add(Finding{Check: CheckCertNames, Severity: SeverityOK, Message: fmt.Sprintf("valid for %s (%s)", d.host, certNames(leaf))})
	}
	// Validity, of the leaf and of the intermediates the webhook serves.
	expired := false
	for i, c := range chain {
		who := "the serving certificate"
		if i > 0 {
			who = fmt.Sprintf("the served intermediate %q", c.Subject.String())
		}
		switch {
		case now.After(c.NotAfter):
			expired, timeOK = true, false
			add(Finding{Check: CheckCertExpiry, Severity: SeverityError,
				Message: fmt.Sprintf("%s expired at %s (%s ago)", who, c.NotAfter.UTC().Format(time.RFC3339), now.Sub(c.NotAfter).Round(time.Minute)),
				Cause:   "the API server rejects it: x509: certificate has expired or is not yet valid",
				Fix:     "renew it (cert-manager: cmctl renew -n NAMESPACE CERTIFICATE; hubspoke: hubspoke certs rotate); hubspoke's webhook reloads the Secret without a restart"})
		case now.Before(c.NotBefore):
			expired, timeOK = true, false
			add(Finding{Check: CheckCertExpiry, Severity: SeverityError,
				Message: fmt.Sprintf("%s is not valid before %s", who, c.NotBefore.UTC().Format(time.RFC3339)),
				Cause:   "the API server rejects it until then: the clocks of the issuer and of the API server disagree",
				Fix:     "check the clocks (chrony, NTP); reissue the certificate with a NotBefore in the past"})
		}
		if expired {
			break
		}
	}
	if !expired {
		if left := leaf.NotAfter.Sub(now); left < d.o.ExpiryWarning {
			add(Finding{Check: CheckCertExpiry, Severity: SeverityWarning,
				Message: fmt.Sprintf("the serving certificate expires in %s (%s)", humanDuration(left), leaf.NotAfter.UTC().Format(time.RFC3339)),
				Cause:   "when it expires every conversion fails", Fix: "renew it now, or check that its renewal is automated"})
		} else {
			add(Finding{Check: CheckCertExpiry, Severity: SeverityOK, Message: "valid until " + leaf.NotAfter.UTC().Format(time.RFC3339)})
		}
	}
	v.chainOK = chainOK
	v.ok = chainOK && usageOK && namesOK && timeOK
	return v
}

// chainFault names why a chain does not verify against the roots, from
// crypto/x509's error and what the chain and the caBundle hold.
func (d *diagnosis) chainFault(leaf *x509.Certificate, chain []*x509.Certificate, err error, rootsName string) Finding {
	f := Finding{Check: CheckCertChain, Severity: SeverityError, Explanation: explained(err.Error())}
	top := chain[len(chain)-1]
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		named := d.caNamed(top.RawIssuer)
		switch {
		case selfSigned(top) && len(chain) == 1:
			f.Message = fmt.Sprintf("the webhook serves a self-signed certificate (%q), not one issued by a CA of %s: %v", leaf.Subject.String(), rootsName, err)
			f.Cause = "the API server trusts only the caBundle's CAs: a self-signed certificate verifies only if it is itself in the caBundle"
			f.Fix = "issue the serving certificate from the CA in the caBundle; or put this certificate in the caBundle: " + d.caBundleFix()
		case named != nil:
			f.Message = fmt.Sprintf("the caBundle holds a CA named %q, but the served certificate's signature does not verify with it: %v", named.Subject.String(), err)
			f.Cause = "a CA with that name was generated again with a new key, and one side still has the old one: the caBundle holds the old CA, or the webhook serves a certificate issued by the old (or the new) one"
			f.Fix = "put the CA that holds the current key in the caBundle (from the Secret with the CA's key): " + d.caBundleFix() + "; or reissue the serving certificate from the caBundle's CA"
		case len(chain) == 1:
			f.Message = fmt.Sprintf("the serving certificate is issued by %q, which %s does not hold, and the webhook serves no intermediate certificate: %v", leaf.Issuer.String(), rootsName, err)
			f.Cause = fmt.Sprintf("either %q is an intermediate CA under a CA of the caBundle and the webhook serves its certificate without it (the chain is missing its intermediate), or the caBundle holds another CA than the one that issued the certificate (stale after a rotation, or an injection not done)", leaf.Issuer.String())
			f.Fix = fmt.Sprintf("if %q is an intermediate: serve the chain (tls.crt = the certificate, then the intermediate; cert-manager does), or add the intermediate to the caBundle; otherwise put the issuing CA in the caBundle: %s", leaf.Issuer.String(), d.caBundleFix())
		default:
			f.Message = fmt.Sprintf("the served chain ends at %q, issued by %q, which %s does not hold: %v", top.Subject.String(), top.Issuer.String(), rootsName, err)
			f.Cause = "the caBundle holds another CA than the root of the webhook's chain: stale after a rotation, an injection not done, or a certificate reissued by another issuer"
			f.Fix = d.caBundleFix() + "   # ca.crt: the root that issued " + strconv.Quote(top.Subject.String())
		}
	case errors.As(err, &ci):
		who := fmt.Sprintf("%q", ci.Cert.Subject.String())
		switch ci.Reason {
		case x509.NotAuthorizedToSign:
			f.Message = fmt.Sprintf("%s signed another certificate of the chain but is not a CA: %v", who, err)
			f.Cause = "crypto/x509 accepts only CA certificates (basicConstraints CA:true, keyCertSign) as issuers"
			f.Fix = "issue the serving certificate from a real CA and put that CA in the caBundle"
		case x509.Expired:
			f.Message = fmt.Sprintf("%s of the chain is outside its validity at a time the serving certificate is valid: %v", who, err)
			f.Cause = "an expired (or not yet valid) CA or intermediate makes the whole chain invalid"
			f.Fix = "renew the CA or intermediate " + who + ", then the certificates it issues, and update the caBundle"
		default:
			f.Message = "crypto/x509 refuses the chain: " + err.Error()
		}
	default:
		f.Message = "crypto/x509 refuses the chain: " + err.Error()
	}
	return f
}

// nameFault names why the certificate is not valid for the name the API
// server verifies.
func (d *diagnosis) nameFault(leaf *x509.Certificate, err error) Finding {
	f := Finding{Check: CheckCertNames, Severity: SeverityError, Explanation: explained(err.Error()),
		Message: fmt.Sprintf("the certificate's names (%s) do not include %s: %v", certNames(leaf), d.host, err),
		Cause:   "the API server verifies the name " + d.host + " (for a Service: NAME.NAMESPACE.svc), not a pod IP or another name",
		Fix:     fmt.Sprintf("reissue the serving certificate with DNS SANs %s and %s.cluster.local (cert-manager: spec.dnsNames of the Certificate)", d.host, d.host)}
	noSANs := len(leaf.DNSNames) == 0 && len(leaf.IPAddresses) == 0 && len(leaf.URIs) == 0 && len(leaf.EmailAddresses) == 0
	switch {
	case noSANs && strings.EqualFold(leaf.Subject.CommonName, d.host):
		f.Message = fmt.Sprintf("the certificate names %s only in its legacy Common Name, with no subjectAltName: %v", d.host, err)
		f.Cause = "Go ignores the Common Name since Go 1.15 (Kubernetes 1.19); GODEBUG=x509ignoreCN=0 re-enabled it in Go 1.15 and 1.16 only, no current API server accepts it"
		f.Fix = fmt.Sprintf("reissue the certificate with the DNS SANs %s and %s.cluster.local (openssl: -addext subjectAltName=DNS:%s)", d.host, d.host, d.host)
	case d.svcName != "":
		// A certificate made for another Service: say which.
		for _, n := range leaf.DNSNames {
			parts := strings.Split(n, ".")
			if len(parts) >= 3 && parts[2] == "svc" && n != d.host {
				f.Cause += fmt.Sprintf("; the certificate was made for Service %s/%s, and clientConfig.service names %s/%s", parts[1], parts[0], d.svcNS, d.svcName)
				f.Fix += fmt.Sprintf("; or, if %s/%s is the webhook's Service, point clientConfig.service at it", parts[1], parts[0])
				break
			}
		}
	}
	return f
}

// caNamed returns the caBundle's CA whose subject is rawName, or nil.
func (d *diagnosis) caNamed(rawName []byte) *x509.Certificate {
	for _, c := range d.caCerts {
		if bytes.Equal(c.RawSubject, rawName) {
			return c
		}
	}
	return nil
}

func (d *diagnosis) caSubjects() string {
	var out []string
	for _, c := range d.caCerts {
		out = append(out, strconv.Quote(c.Subject.String()))
	}
	return strings.Join(out, ", ")
}

func selfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}

func allowsServerAuth(c *x509.Certificate) bool {
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageServerAuth || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

func usages(c *x509.Certificate) string {
	names := map[x509.ExtKeyUsage]string{x509.ExtKeyUsageAny: "any", x509.ExtKeyUsageServerAuth: "serverAuth", x509.ExtKeyUsageClientAuth: "clientAuth",
		x509.ExtKeyUsageCodeSigning: "codeSigning", x509.ExtKeyUsageEmailProtection: "emailProtection", x509.ExtKeyUsageTimeStamping: "timeStamping", x509.ExtKeyUsageOCSPSigning: "OCSPSigning"}
	var out []string
	for _, u := range c.ExtKeyUsage {
		if n, ok := names[u]; ok {
			out = append(out, n)
		} else {
			out = append(out, fmt.Sprintf("usage %d", u))
		}
	}
	for _, oid := range c.UnknownExtKeyUsage {
		out = append(out, oid.String())
	}
	if len(out) == 0 {
		return "no extended key usage: any"
	}
	return strings.Join(out, ", ")
}

func certNames(c *x509.Certificate) string {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no SANs, CN " + strconv.Quote(c.Subject.CommonName)
	}
	return strings.Join(names, ", ")
}

func parsePEM(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type == "CERTIFICATE" {
			if c, err := x509.ParseCertificate(b.Bytes); err == nil {
				out = append(out, c)
			}
		}
	}
}

// humanDuration says "10 days" for long durations, "5h30m0s" for short ones.
func humanDuration(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24+0.5))
	}
	return d.Round(time.Minute).String()
}
