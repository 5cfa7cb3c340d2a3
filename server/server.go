// Package server runs a ConversionReview webhook over HTTPS: TLS 1.2+ with
// the certificate (and optional client CA) reloaded when the files change,
// including the symlink swap of an updated Kubernetes Secret volume;
// /healthz, /readyz and /metrics; and a graceful shutdown that drains
// in-flight reviews.
//
// Endpoints:
//
//	POST /convert   the conversion handler (Options.Handler)
//	GET  /healthz   200 while the process serves
//	GET  /readyz    200 once certificates are loaded (and Options.ReadyCheck passes); 503 from the start of shutdown
//	GET  /metrics   Prometheus metrics from Options.Gatherer
//	     ...        Options.Handlers, at their paths
//
// With Options.ClientCAFile, a client certificate presented in any
// handshake is verified against the CA, and /convert answers 403 to a
// client without one; the probes and /metrics stay reachable for kubelet
// and Prometheus.
//
// Shutdown, when ctx is cancelled (SIGTERM): /readyz turns 503 at once;
// for Options.ShutdownDelay the server goes on serving (so endpoints can
// be updated) but closes each connection after its response; then it stops
// accepting and waits up to Options.ShutdownGrace for in-flight requests.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of Options, fitted to the API server's webhook client, which
// gives up after 30 s and keeps idle connections for 90 s.
const (
	DefaultAddr               = ":8443"
	DefaultConvertPath        = "/convert"
	DefaultReadHeaderTimeout  = 10 * time.Second
	DefaultReadTimeout        = 30 * time.Second
	DefaultWriteTimeout       = 35 * time.Second
	DefaultIdleTimeout        = 120 * time.Second
	DefaultShutdownDelay      = 5 * time.Second
	DefaultShutdownGrace      = 20 * time.Second
	DefaultCertReloadInterval = 10 * time.Second
)

// Options configures Run. Zero durations mean the defaults above.
type Options struct {
	// Addr is the host:port to listen on (DefaultAddr when empty); ignored
	// when Listener is set.
	Addr string
	// Listener, when set, is served instead of listening on Addr (plain
	// TCP; Run adds TLS). Run closes it.
	Listener net.Listener
	// CertDir holds tls.crt and tls.key (required).
	CertDir string
	// ClientCAFile, when set, is a PEM bundle of CAs that client
	// certificates must chain to; /convert then requires one.
	ClientCAFile string
	// Handler serves ConversionReviews at ConvertPath (required), typically
	// a *review.Handler.
	Handler http.Handler
	// ConvertPath is the conversion path; DefaultConvertPath when empty.
	ConvertPath string
	// Logger receives the server's records; nil means silent.
	Logger *slog.Logger
	// Registerer receives the server's metrics; nil means none.
	Registerer prometheus.Registerer
	// Gatherer is served at /metrics. When nil, Registerer is used if it
	// is also a Gatherer (a *prometheus.Registry is); otherwise /metrics
	// answers 404.
	Gatherer prometheus.Gatherer

	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownDelay is how long the server keeps serving, unready, after
	// ctx is cancelled; negative means none.
	ShutdownDelay time.Duration
	// ShutdownGrace bounds the wait for in-flight requests after that.
	ShutdownGrace time.Duration
	// CertReloadInterval is how often the certificate files are checked.
	CertReloadInterval time.Duration
	// OnReady, when set, is called with the listening address once the
	// server accepts connections.
	OnReady func(addr net.Addr)
	// ReadyCheck, when set, must return nil for /readyz to answer 200; its
	// error is the 503's text. A server that loads what it converts after
	// it starts (hubspoke serve --watch-conversions) is not ready before.
	ReadyCheck func() error
	// Handlers are served at their paths (a path ending in / also serves
	// the paths below it) besides ConvertPath and the probes, without the
	// client certificate ConvertPath may require.
	Handlers map[string]http.Handler
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.ConvertPath == "" {
		o.ConvertPath = DefaultConvertPath
	}
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.ShutdownDelay, DefaultShutdownDelay)
	def(&o.ShutdownGrace, DefaultShutdownGrace)
	def(&o.CertReloadInterval, DefaultCertReloadInterval)
	if o.ShutdownDelay < 0 {
		o.ShutdownDelay = 0
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Gatherer == nil {
		if g, ok := o.Registerer.(prometheus.Gatherer); ok {
			o.Gatherer = g
		}
	}
}

// Run serves until ctx is cancelled, then shuts down gracefully and
// returns nil; it returns an error when it cannot start (certificates,
// listener) or when in-flight requests outlive the shutdown grace period.
func Run(ctx context.Context, opts Options) error {
	if opts.Handler == nil {
		return errors.New("server: Options.Handler is nil")
	}
	if opts.CertDir == "" {
		return errors.New("server: Options.CertDir is empty")
	}
	opts.defaults()
	if err := CheckConvertPath(opts.ConvertPath); err != nil {
		if opts.Listener != nil {
			opts.Listener.Close()
		}
		return fmt.Errorf("server: conversion path %q: %w", opts.ConvertPath, err)
	}
	log := opts.Logger
	c, err := newCerts(opts.CertDir, opts.ClientCAFile, log, opts.Registerer)
	if err != nil {
		if opts.Listener != nil {
			opts.Listener.Close()
		}
		return err
	}
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", opts.Addr); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}

	var ready, draining atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc(HealthzPath, func(w http.ResponseWriter, r *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc(ReadyzPath, func(w http.ResponseWriter, r *http.Request) {
		var notReady error
		if opts.ReadyCheck != nil {
			notReady = opts.ReadyCheck()
		}
		switch {
		case draining.Load():
			text(w, http.StatusServiceUnavailable, "shutting down")
		case !ready.Load():
			text(w, http.StatusServiceUnavailable, "not ready")
		case notReady != nil:
			text(w, http.StatusServiceUnavailable, "not ready: "+notReady.Error())
		default:
			text(w, http.StatusOK, "ok")
		}
	})
	if opts.Gatherer != nil {
		mux.Handle(MetricsPath, promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	}
	conv := opts.Handler
	if opts.ClientCAFile != "" {
		conv = requireClientCert(conv)
	}
	mux.Handle(opts.ConvertPath, conv)
	for path, h := range opts.Handlers {
		mux.Handle(path, h)
	}

	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if draining.Load() && r.ProtoMajor == 1 {
				// Send the client elsewhere for its next request.
				w.Header().Set("Connection", "close")
			}
			mux.ServeHTTP(w, r)
		}),
		TLSConfig:         c.tlsConfig(),
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug), // TLS handshake noise from probes and scanners
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	go c.watch(watchCtx, opts.CertReloadInterval)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(ln, "", "") }()
	ready.Store(true)
	log.Info("serving conversion webhook", "addr", ln.Addr().String(), "path", opts.ConvertPath, "clientCA", opts.ClientCAFile != "")
	if opts.OnReady != nil {
		opts.OnReady(ln.Addr())
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("server: serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	draining.Store(true)
	log.Info("shutting down: not ready, draining", "delay", opts.ShutdownDelay, "grace", opts.ShutdownGrace)
	if opts.ShutdownDelay > 0 {
		t := time.NewTimer(opts.ShutdownDelay)
		select {
		case <-t.C:
		case err := <-serveErr:
			t.Stop()
			return fmt.Errorf("server: serving on %s: %w", ln.Addr(), err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("server: in-flight requests outlived the shutdown grace period of %s: %w", opts.ShutdownGrace, err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: serving on %s: %w", ln.Addr(), err)
	}
	log.Info("stopped")
	return nil
}

func text(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

// requireClientCert answers 403 to a request without a client certificate.
// Certificates that are presented were verified in the handshake.
func requireClientCert(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			text(w, http.StatusForbidden, errNoClientCert.Error())
			return
		}
		h.ServeHTTP(w, r)
	})
}
