package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// checkCertificate dials an endpoint (or the URL) to read the serving
// certificate, or takes Options.ServingCert, and checks it as the API
// server does: chain to the caBundle, the name it verifies, validity.
func (d *diagnosis) checkCertificate() {
	var targets []string
	switch {
	case d.url != "":
		if u, err := url.Parse(d.url); err == nil {
			port := u.Port()
			if port == "" {
				port = "443"
			}
			targets = append(targets, net.JoinHostPort(u.Hostname(), port))
		}
	default:
		for _, e := range d.endpoints { // ready ones first
			if e.ready {
				targets = append(targets, e.addr)
			}
		}
		for _, e := range d.endpoints {
			if !e.ready {
				targets = append(targets, e.addr)
			}
		}
	}
	var refused, unreachable, badTLS []string
	for _, addr := range targets {
		chain, err := d.handshake(addr)
		if err == nil {
			d.dialled, d.chain = addr, chain
			break
		}
		var te tlsError
		if errors.As(err, &te) {
			badTLS = append(badTLS, fmt.Sprintf("%s (%v)", addr, te.err))
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			refused = append(refused, fmt.Sprintf("%s (%v)", addr, err))
			continue
		}
		// Unreachable (a timeout, no route): the other pod IPs are
		// likely unreachable too; do not wait for each.
		unreachable = append(unreachable, fmt.Sprintf("%s (%v)", addr, err))
		if len(refused) == 0 {
			break
		}
	}
	switch {
	case d.dialled != "":
		d.ok(CheckReachable, "TLS handshake with %s", d.dialled)
	case len(refused) > 0 && d.url != "":
		d.add(Finding{Check: CheckReachable, Severity: SeverityError,
			Message:     "connection refused: " + strings.Join(refused, "; "),
			Cause:       "nothing listens at the URL's host and port: the webhook process is down, or clientConfig.url names another port than the one it listens on",
			Fix:         "start the webhook, or fix the port in clientConfig.url: " + d.patch("/spec/conversion/webhook/clientConfig/url", `"https://HOST:PORT/convert"`),
			Explanation: explained(refused[0])})
	case len(refused) > 0:
		d.add(Finding{Check: CheckReachable, Severity: SeverityError,
			Message:     "connection refused: " + strings.Join(refused, "; "),
			Cause:       "nothing listens at the endpoint: the webhook process is down (crashed, not started) while its endpoint is still listed, or the Service's targetPort is not the port the webhook listens on",
			Fix:         fmt.Sprintf("kubectl get pods -n %s -o wide; kubectl logs -n %s POD   # and compare the Service's targetPort with the webhook's --addr", d.svcNS, d.svcNS),
			Explanation: explained(refused[0])})
	case len(badTLS) > 0:
		d.add(Finding{Check: CheckReachable, Severity: SeverityError,
			Message:     "TLS handshake failed: " + strings.Join(badTLS, "; "),
			Cause:       "the endpoint accepts connections but does not complete a TLS handshake: it serves plain HTTP, requires a client certificate (the API server presents none to conversion webhooks), or has no certificate loaded",
			Fix:         "serve HTTPS on the webhook's port with a certificate for " + d.host + ", client certificates optional",
			Explanation: explained(badTLS[0])})
	case len(targets) == 0:
		d.skip(CheckReachable, "no endpoint to dial")
	default:
		d.skip(CheckReachable, "not reachable from here: %s (pod IPs usually are not, outside the cluster)", strings.Join(unreachable, "; "))
	}
	if d.chain == nil && len(d.o.ServingCert) > 0 {
		d.chain = parsePEM(d.o.ServingCert)
	}
	if len(d.chain) == 0 {
		why := "no certificate: no endpoint could be dialled (give the serving certificate with --cert-file)"
		d.skip(CheckCertChain, "%s", why)
		d.skip(CheckCertNames, "%s", why)
		d.skip(CheckCertExpiry, "%s", why)
		return
	}
	leaf := d.chain[0]
	now := d.o.Now()
	// Verify the chain at a time the leaf is valid, so that an expired
	// certificate is reported once, as expired, not also as unchained.
	at := now
	if at.After(leaf.NotAfter) {
		at = leaf.NotAfter.Add(-time.Second)
	}
	if at.Before(leaf.NotBefore) {
		at = leaf.NotBefore.Add(time.Second)
	}
	chainOK, namesOK, timeOK := true, true, true
	if d.caPool == nil {
		d.skip(CheckCertChain, "no usable caBundle to verify against")
		chainOK = false
	} else {
		inter := x509.NewCertPool()
		for _, c := range d.chain[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: d.caPool, Intermediates: inter, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			chainOK = false
			var cas []string
			for _, c := range d.caCerts {
				cas = append(cas, fmt.Sprintf("%q", c.Subject.String()))
			}
			d.add(Finding{Check: CheckCertChain, Severity: SeverityError,
				Message:     fmt.Sprintf("the serving certificate (issuer %q) does not chain to the caBundle (%s): %v", leaf.Issuer.String(), strings.Join(cas, ", "), err),
				Cause:       "the API server rejects the webhook's certificate (x509: certificate signed by unknown authority): the caBundle holds another CA than the one that signed the serving certificate (a stale CA after a rotation, an injection not done, or a certificate reissued by another issuer)",
				Fix:         d.caBundleFix(),
				Explanation: explained(err.Error())})
		} else {
			d.ok(CheckCertChain, "issued by %q, chains to the caBundle", leaf.Issuer.String())
		}
	}
	if err := leaf.VerifyHostname(d.host); err != nil {
		namesOK = false
		d.add(Finding{Check: CheckCertNames, Severity: SeverityError,
			Message:     fmt.Sprintf("the certificate's names (%s) do not include %s: %v", certNames(leaf), d.host, err),
			Cause:       "the API server verifies the name " + d.host + " (for a Service: NAME.NAMESPACE.svc), not a pod IP or another name",
			Fix:         fmt.Sprintf("reissue the serving certificate with DNS SANs %s and %s.cluster.local (cert-manager: spec.dnsNames of the Certificate)", d.host, d.host),
			Explanation: explained(err.Error())})
	} else {
		d.ok(CheckCertNames, "valid for %s (%s)", d.host, certNames(leaf))
	}
	switch left := leaf.NotAfter.Sub(now); {
	case now.After(leaf.NotAfter):
		timeOK = false
		d.add(Finding{Check: CheckCertExpiry, Severity: SeverityError,
			Message: fmt.Sprintf("the serving certificate expired at %s (%s ago)", leaf.NotAfter.UTC().Format(time.RFC3339), now.Sub(leaf.NotAfter).Round(time.Minute)),
			Cause:   "the API server rejects it: x509: certificate has expired or is not yet valid",
			Fix:     "renew the serving certificate Secret (cert-manager: cmctl renew -n NAMESPACE CERTIFICATE); hubspoke's webhook reloads it without a restart"})
	case now.Before(leaf.NotBefore):
		timeOK = false
		d.add(Finding{Check: CheckCertExpiry, Severity: SeverityError,
			Message: fmt.Sprintf("the serving certificate is not valid before %s", leaf.NotBefore.UTC().Format(time.RFC3339)),
			Cause:   "the API server rejects it until then (a clock skew between the issuer and the API server)",
			Fix:     "check the clocks; reissue the certificate with a NotBefore in the past"})
	case left < d.o.ExpiryWarning:
		d.add(Finding{Check: CheckCertExpiry, Severity: SeverityWarning,
			Message: fmt.Sprintf("the serving certificate expires in %s (%s)", humanDuration(left), leaf.NotAfter.UTC().Format(time.RFC3339)),
			Cause:   "when it expires every conversion fails", Fix: "renew it now, or check that its renewal is automated"})
	default:
		d.ok(CheckCertExpiry, "valid until %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	d.certOK = chainOK && namesOK && timeOK
}

// dial connects to the webhook as the API server would: a URL's host
// directly, a Service's endpoint through the pod network.
func (d *diagnosis) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.url != "" {
		return d.o.Dial(ctx, network, addr)
	}
	return d.o.PodDial(ctx, network, addr)
}

// handshake dials addr with TLS, verifying nothing, and returns the chain
// the server presents.
func (d *diagnosis) handshake(addr string) ([]*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.o.DialTimeout)
	defer cancel()
	raw, err := d.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{ServerName: d.host, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // read the certificate to verify it below
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, tlsError{err}
	}
	return conn.ConnectionState().PeerCertificates, nil
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

// tlsError is a handshake that failed after the connection was made.
type tlsError struct{ err error }

func (e tlsError) Error() string { return e.err.Error() }

// humanDuration says "10 days" for long durations, "5h30m0s" for short ones.
func humanDuration(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%d days", int(d.Hours()/24+0.5))
	}
	return d.Round(time.Minute).String()
}
