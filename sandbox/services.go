package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Service maps a Kubernetes service, as named in a CRD's conversion webhook
// clientConfig.service, to a webhook listening on loopback.
type Service struct {
	// Namespace and Name of the service the CRD names.
	Namespace, Name string
	// Port the CRD names (clientConfig.service.port, 443 when absent).
	// Zero matches any port.
	Port int32
	// Addr is where the webhook listens, host:port on loopback.
	Addr string
	// CABundle, when set, is the PEM CA that signed the webhook's
	// certificate. CRDs whose conversion webhook names this service get it
	// as their caBundle, as cert-manager's cainjector would do.
	CABundle []byte
}

// key identifies a service registration.
type serviceKey struct {
	namespace, name string
	port            int32
}

// registry is the sandbox's table of services. It implements
// webhook.ServiceResolver for the API server.
type registry struct {
	mu       sync.RWMutex
	services map[serviceKey]Service
}

func newRegistry() *registry {
	return &registry{services: map[serviceKey]Service{}}
}

func (r *registry) register(svc Service) error {
	if svc.Namespace == "" || svc.Name == "" {
		return fmt.Errorf("sandbox: register service %q in namespace %q: namespace and name are required", svc.Name, svc.Namespace)
	}
	host, _, err := net.SplitHostPort(svc.Addr)
	if err != nil {
		return fmt.Errorf("sandbox: register service %s/%s: address %q: %w", svc.Namespace, svc.Name, svc.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("sandbox: register service %s/%s: address %q is not on loopback", svc.Namespace, svc.Name, svc.Addr)
	}
	svc.CABundle = bytes.Clone(svc.CABundle)
	r.mu.Lock()
	r.services[serviceKey{svc.Namespace, svc.Name, svc.Port}] = svc
	r.mu.Unlock()
	return nil
}

func (r *registry) unregister(namespace, name string, port int32) {
	r.mu.Lock()
	delete(r.services, serviceKey{namespace, name, port})
	r.mu.Unlock()
}

// lookup finds the service for a port, preferring an exact port match over
// a registration for any port.
func (r *registry) lookup(namespace, name string, port int32) (Service, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if svc, ok := r.services[serviceKey{namespace, name, port}]; ok {
		return svc, true
	}
	svc, ok := r.services[serviceKey{namespace, name, 0}]
	return svc, ok
}

// ResolveEndpoint implements webhook.ServiceResolver.
func (r *registry) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, ok := r.lookup(namespace, name, port)
	if !ok {
		return nil, fmt.Errorf("service %s/%s port %d is not registered with the hubspoke sandbox", namespace, name, port)
	}
	return &url.URL{Scheme: "https", Host: svc.Addr}, nil
}

// RegisterService makes CRD webhooks that name the service reach svc.Addr.
// Registering the same namespace, name and port again replaces the entry.
// The webhook must serve a certificate valid for NAME.NAMESPACE.svc (see
// NewServiceCert).
func (s *Sandbox) RegisterService(svc Service) error {
	if err := s.services.register(svc); err != nil {
		return err
	}
	if s.injector != nil {
		s.injector.resync()
	}
	return nil
}

// UnregisterService removes a registration made for exactly that port.
func (s *Sandbox) UnregisterService(namespace, name string, port int32) {
	s.services.unregister(namespace, name, port)
}

// Webhook is an HTTPS server started by Sandbox.ServeWebhook.
type Webhook struct {
	svc       Service
	srv       *http.Server
	done      chan error
	closeOnce sync.Once
	closeErr  error
	sandbox   *Sandbox
}

// ServeWebhook serves h over TLS on a random loopback port with a fresh CA
// and a certificate for NAME.NAMESPACE.svc, and registers it as that service
// (any port) with the CA to inject into CRDs. Stop closes it if Close was
// not called before.
func (s *Sandbox) ServeWebhook(namespace, name string, h http.Handler) (*Webhook, error) {
	cert, err := NewServiceCert(namespace, name)
	if err != nil {
		return nil, err
	}
	tlsCert, err := cert.TLSCertificate()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sandbox: webhook %s/%s: listen: %w", namespace, name, err)
	}
	w := &Webhook{
		svc: Service{Namespace: namespace, Name: name, Addr: ln.Addr().String(), CABundle: cert.CA},
		srv: &http.Server{
			Handler:           h,
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{tlsCert}, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: 10 * time.Second,
			// TLS handshake failures (a CRD with a wrong caBundle) are
			// the API server's to report; keep them out of stderr.
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		},
		done:    make(chan error, 1),
		sandbox: s,
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("sandbox: webhook %s/%s: sandbox stopped", namespace, name)
	}
	s.webhooks = append(s.webhooks, w)
	s.mu.Unlock()
	go func() {
		w.done <- w.srv.ServeTLS(ln, "", "")
		close(w.done)
	}()
	if err := s.RegisterService(w.svc); err != nil {
		return nil, errors.Join(err, w.Close())
	}
	return w, nil
}

// Addr returns the loopback address the webhook listens on.
func (w *Webhook) Addr() string { return w.svc.Addr }

// CABundle returns the PEM CA that signed the webhook's certificate.
func (w *Webhook) CABundle() []byte { return bytes.Clone(w.svc.CABundle) }

// Close unregisters the service and shuts the server down, waiting up to
// five seconds for requests in flight.
func (w *Webhook) Close() error {
	w.closeOnce.Do(func() {
		w.sandbox.services.unregister(w.svc.Namespace, w.svc.Name, w.svc.Port)
		w.sandbox.mu.Lock()
		for i, o := range w.sandbox.webhooks {
			if o == w {
				w.sandbox.webhooks = append(w.sandbox.webhooks[:i], w.sandbox.webhooks[i+1:]...)
				break
			}
		}
		w.sandbox.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := w.srv.Shutdown(ctx)
		if serveErr := <-w.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		if err != nil {
			w.closeErr = fmt.Errorf("sandbox: webhook %s/%s: close: %w", w.svc.Namespace, w.svc.Name, err)
		}
	})
	return w.closeErr
}
