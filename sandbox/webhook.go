package sandbox

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Webhook is an HTTPS server started by Sandbox.ServeWebhook: an endpoint
// of its Service.
type Webhook struct {
	endpoint  *Endpoint
	cert      *ServiceCert
	srv       *http.Server
	requests  atomic.Int64 // handler calls in flight
	done      chan error
	closeOnce sync.Once
	closeErr  error
	sandbox   *Sandbox
}

// ServeWebhook serves h over TLS on a random loopback port with a fresh CA
// and a certificate for NAME.NAMESPACE.svc, and makes it a ready endpoint
// of the Service namespace/name (created if missing, see
// [Sandbox.AddEndpoint]), whose CA CRDs naming the Service get injected.
// Stop closes it if Close was not called before.
func (s *Sandbox) ServeWebhook(namespace, name string, h http.Handler) (*Webhook, error) {
	cert, err := NewServiceCert(namespace, name)
	if err != nil {
		return nil, err
	}
	return s.ServeWebhookWithCert(namespace, name, cert, h)
}

// ServeWebhookWithCert is ServeWebhook with the given certificate, which
// need not be valid for the Service: the API server then refuses it as in
// a cluster.
func (s *Sandbox) ServeWebhookWithCert(namespace, name string, cert *ServiceCert, h http.Handler) (*Webhook, error) {
	tlsCert, err := cert.TLSCertificate()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: webhook %s/%s: listen: %w", namespace, name, err)
	}
	w := &Webhook{
		cert:    cert,
		done:    make(chan error, 1),
		sandbox: s,
	}
	w.srv = &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.requests.Add(1)
			defer w.requests.Add(-1)
			h.ServeHTTP(rw, r)
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{tlsCert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// TLS handshake failures (a CRD with a wrong caBundle) are
		// the API server's to report; keep them out of stderr.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("sandbox: webhook %s/%s: sandbox stopped", namespace, name)
	}
	s.webhooks = append(s.webhooks, w)
	s.mu.Unlock()
	// The server answers on its loopback port (probes, /metrics, a
	// CRD naming it by URL) and takes the API server's connections from
	// the pod network as they are, without a second socket.
	fromPods := newConnListener(ln.Addr())
	go func() {
		errs := make(chan error, 2)
		go func() { errs <- w.srv.ServeTLS(fromPods, "", "") }()
		errs <- w.srv.ServeTLS(ln, "", "")
		err1, err2 := <-errs, <-errs
		if !errors.Is(err1, http.ErrServerClosed) {
			w.done <- err1
		} else {
			w.done <- err2
		}
		close(w.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), defaultWait)
	defer cancel()
	w.endpoint, err = s.AddEndpoint(ctx, EndpointOptions{Namespace: namespace, Service: name, Addr: ln.Addr().String(), CABundle: cert.CA, inProcess: fromPods})
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	return w, nil
}

// Addr returns the loopback address the webhook listens on.
func (w *Webhook) Addr() string { return w.endpoint.Addr() }

// Endpoint returns the webhook's endpoint of its Service.
func (w *Webhook) Endpoint() *Endpoint { return w.endpoint }

// CABundle returns the PEM CA that signed the webhook's certificate.
func (w *Webhook) CABundle() []byte { return append([]byte(nil), w.cert.CA...) }

// closeGrace bounds how long Close waits for requests in flight.
const closeGrace = 5 * time.Second

// Close removes the webhook's endpoint and shuts the server down: it waits
// up to five seconds for requests in flight, then closes every connection
// left, as a pod's process that exits. It does not wait for connections
// without a request in flight, which the API server keeps open (HTTP/2,
// or accepted before its first request): that is no error. It returns an
// error only when requests in flight outlived the wait.
func (w *Webhook) Close() error {
	w.closeOnce.Do(func() {
		var errs []error
		if w.endpoint != nil {
			if err := w.endpoint.Remove(context.Background()); err != nil {
				errs = append(errs, err)
			}
		}
		w.sandbox.mu.Lock()
		for i, o := range w.sandbox.webhooks {
			if o == w {
				w.sandbox.webhooks = append(w.sandbox.webhooks[:i], w.sandbox.webhooks[i+1:]...)
				break
			}
		}
		w.sandbox.mu.Unlock()
		if err := w.shutdown(closeGrace); err != nil {
			errs = append(errs, err)
		}
		if serveErr := <-w.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			errs = append(errs, serveErr)
		}
		if err := errors.Join(errs...); err != nil {
			w.closeErr = fmt.Errorf("sandbox: webhook: close: %w", err)
		}
	})
	return w.closeErr
}

// shutdown stops the server: Shutdown closes the listeners and the idle
// connections and tells HTTP/2 clients to go away, but would wait for the
// other connections to end by themselves; once no request is in flight
// (or grace is over) Close cuts them.
func (w *Webhook) shutdown(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shutdown := make(chan struct{})
	go func() {
		w.srv.Shutdown(ctx) // its error is ctx's, judged below
		close(shutdown)
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for w.requests.Load() > 0 {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("%d requests in flight outlived the shutdown grace period of %s", w.requests.Load(), grace)
			break wait
		case <-shutdown: // every connection ended
			break wait
		case <-tick.C:
		}
	}
	w.srv.Close()
	<-shutdown
	return err
}
