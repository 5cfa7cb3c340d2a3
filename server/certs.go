package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of the files in Options.CertDir, as in a kubernetes.io/tls Secret.
const (
	CertFileName = "tls.crt"
	KeyFileName  = "tls.key"
)

// certs holds the serving certificate and the client CA pool, reloaded
// from disk. Files are read by path on every check, so the symlink swap of
// an updated Secret volume (DIR/tls.crt -> ..data/tls.crt, with ..data
// re-pointed atomically) is seen like any other change.
type certs struct {
	certFile, keyFile, caFile string
	log                       *slog.Logger

	cert atomic.Pointer[tls.Certificate]
	ca   atomic.Pointer[x509.CertPool]

	mu                        sync.Mutex // serialises reloads
	lastCert, lastKey, lastCA []byte

	expiry  prometheus.Gauge
	reloads *prometheus.CounterVec
}

// Metric names of the server, registered on Options.Registerer.
const (
	MetricCertExpiry  = "hubspoke_webhook_certificate_expiry_timestamp_seconds"
	MetricCertReloads = "hubspoke_webhook_certificate_reloads_total"
)

func newCerts(dir, caFile string, log *slog.Logger, reg prometheus.Registerer) (*certs, error) {
	c := &certs{
		certFile: filepath.Join(dir, CertFileName),
		keyFile:  filepath.Join(dir, KeyFileName),
		caFile:   caFile,
		log:      log,
		expiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: MetricCertExpiry,
			Help: "NotAfter of the serving certificate in use, as a Unix timestamp.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCertReloads,
			Help: "Certificate (and client CA) reloads after a change on disk, by result (success, failure).",
		}, []string{"result"}),
	}
	if reg != nil {
		for _, m := range []prometheus.Collector{c.expiry, c.reloads} {
			if err := reg.Register(m); err != nil {
				return nil, fmt.Errorf("server: registering metrics: %w", err)
			}
		}
	}
	if _, err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the files and swaps in what changed. On an error the
// previous certificate and pool stay in use.
func (c *certs) reload() (changed bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	crt, err := os.ReadFile(c.certFile)
	if err != nil {
		return false, fmt.Errorf("server: reading certificate: %w", err)
	}
	key, err := os.ReadFile(c.keyFile)
	if err != nil {
		return false, fmt.Errorf("server: reading key: %w", err)
	}
	if !bytes.Equal(crt, c.lastCert) || !bytes.Equal(key, c.lastKey) {
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return false, fmt.Errorf("server: loading %s and %s: %w", c.certFile, c.keyFile, err)
		}
		if pair.Leaf == nil {
			if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
				return false, fmt.Errorf("server: parsing %s: %w", c.certFile, err)
			}
		}
		c.cert.Store(&pair)
		c.lastCert, c.lastKey = crt, key
		c.expiry.Set(float64(pair.Leaf.NotAfter.Unix()))
		changed = true
		c.log.Info("loaded serving certificate", "file", c.certFile, "subject", pair.Leaf.Subject.String(),
			"dnsNames", pair.Leaf.DNSNames, "notAfter", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if c.caFile == "" {
		return changed, nil
	}
	ca, err := os.ReadFile(c.caFile)
	if err != nil {
		return changed, fmt.Errorf("server: reading client CA: %w", err)
	}
	if !bytes.Equal(ca, c.lastCA) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return changed, fmt.Errorf("server: client CA file %s holds no PEM certificate", c.caFile)
		}
		c.ca.Store(pool)
		c.lastCA = ca
		changed = true
		c.log.Info("loaded client CA", "file", c.caFile)
	}
	return changed, nil
}

// watch reloads every interval until ctx is done.
func (c *certs) watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := c.reload()
		switch {
		case err != nil:
			c.reloads.WithLabelValues("failure").Inc()
			// A Secret update may be caught half way (new certificate,
			// old key); the next tick sees the whole. Log once per streak.
			if !failing {
				c.log.Warn("certificate reload failed; keeping the previous one", "err", err)
			}
			failing = true
		case changed:
			c.reloads.WithLabelValues("success").Inc()
			failing = false
		default:
			failing = false
		}
	}
}

// tlsConfig returns the server's TLS configuration: TLS 1.2 or later,
// AEAD cipher suites only, the current certificate on every handshake and,
// with a client CA, verification of any client certificate presented.
func (c *certs) tlsConfig() *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{ // TLS 1.2; TLS 1.3 suites are not configurable and all modern
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
	if c.caFile != "" {
		// Request, and verify against the current pool, but do not require
		// at the TLS layer: kubelet probes carry no client certificate. The
		// conversion path requires one (see requireClientCert).
		cfg.ClientAuth = tls.RequestClientCert
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return nil
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				Roots:         c.ca.Load(),
				Intermediates: inter,
				KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
			if err != nil {
				return fmt.Errorf("client certificate: %w", err)
			}
			return nil
		}
	}
	return cfg
}

var errNoClientCert = errors.New("a client certificate signed by the client CA is required")
