package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.etcd.io/etcd/server/v3/embed"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Options configures a Sandbox. The zero value is ready to use.
type Options struct {
	// Logger receives the logs of the sandbox, the API server (through
	// klog, which is process-wide) and etcd. Nil discards them.
	Logger *slog.Logger

	// TempDir is the directory in which the sandbox creates its data
	// directory (etcd's files and the default kubeconfig). Empty means
	// os.TempDir(). Stop removes the data directory.
	TempDir string

	// Services are registered before the API server starts, as if by
	// RegisterService.
	Services []Service

	// StartTimeout bounds how long New waits for the API server to report
	// ready. Zero means one minute.
	StartTimeout time.Duration

	// GCPercent is the garbage collector's target (runtime/debug's
	// SetGCPercent) while the sandbox runs; Stop restores the value it
	// found. The API server allocates several times the bytes of every
	// object it handles and shares this process's cores with the caller:
	// at Go's default of 100, garbage collection takes about a third of
	// the process's CPU under load. Zero means DefaultGCPercent, unless
	// the GOGC environment variable is set, which is then obeyed.
	// Negative leaves the setting alone.
	GCPercent int
}

// DefaultGCPercent is the sandbox's garbage collector target: it trades
// memory (a few hundred megabytes at ten thousand objects) for CPU.
const DefaultGCPercent = 400

// Sandbox is a running etcd and API server. Its methods are safe for
// concurrent use.
type Sandbox struct {
	log     *slog.Logger
	dataDir string

	etcd      *embed.Etcd
	cancelRun context.CancelFunc
	runDone   chan error // receives the API server's exit, then closes

	restConfig *rest.Config
	crds       apiextensionsclient.Interface
	dyn        dynamic.Interface

	services *registry
	injector *injector

	mu       sync.Mutex
	webhooks []*Webhook
	stopped  bool

	restoreGC func() // undoes New's GC setting; nil if none

	stopOnce sync.Once
	stopErr  error
}

// New starts etcd and the API server and returns once the API server reports
// ready. ctx bounds the start only; the sandbox runs until Stop.
func New(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Logger == nil {
		klog.SetLogger(logr.Discard())
	} else {
		klog.SetSlogLogger(opts.Logger.With("component", "apiserver"))
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir, err := os.MkdirTemp(opts.TempDir, "hubspoke-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: create data directory: %w", err)
	}
	s := &Sandbox{
		log:      log,
		dataDir:  dir,
		services: newRegistry(),
	}
	defer func() {
		if err != nil {
			if stopErr := s.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}
	}()
	s.restoreGC = setGCPercent(opts.GCPercent)
	for _, svc := range opts.Services {
		if err := s.services.register(svc); err != nil {
			return nil, err
		}
	}

	start := time.Now()
	s.etcd, err = startEtcd(ctx, filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	etcdURL := "http://" + s.etcd.Clients[0].Addr().String()
	log.Debug("etcd ready", "url", etcdURL, "took", time.Since(start))

	srv, restConfig, err := newAPIServer(etcdURL, s.services)
	if err != nil {
		return nil, err
	}
	s.restConfig = restConfig

	runCtx, cancelRun := context.WithCancel(context.Background())
	s.cancelRun = cancelRun
	s.runDone = make(chan error, 1)
	go func() {
		defer close(s.runDone)
		if err := srv.GenericAPIServer.PrepareRun().RunWithContext(runCtx); err != nil {
			s.runDone <- err
		}
	}()
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	log.Debug("api server ready", "url", restConfig.Host, "took", time.Since(start))

	if s.crds, err = apiextensionsclient.NewForConfig(restConfig); err != nil {
		return nil, fmt.Errorf("sandbox: apiextensions client: %w", err)
	}
	if s.dyn, err = dynamic.NewForConfig(restConfig); err != nil {
		return nil, fmt.Errorf("sandbox: dynamic client: %w", err)
	}
	if err := s.WriteKubeconfig(s.KubeconfigPath()); err != nil {
		return nil, err
	}
	s.injector = startInjector(s.crds, s.services, log)
	return s, nil
}

// waitReady polls /readyz through the sandbox's own client configuration,
// which also proves TLS and loopback authentication work.
func (s *Sandbox) waitReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(s.restConfig)
	if err != nil {
		return fmt.Errorf("sandbox: http client: %w", err)
	}
	defer client.CloseIdleConnections()
	var last error
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		last = probe(ctx, client, s.restConfig.Host+"/readyz")
		if last == nil {
			return nil
		}
		select {
		case err, ok := <-s.runDone:
			if !ok {
				err = errors.New("exited")
			}
			return fmt.Errorf("sandbox: api server stopped while starting: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("sandbox: api server not ready: %w (last probe: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// RESTConfig returns a client configuration for the sandbox: its loopback
// URL and CA, no credentials (loopback callers are administrators). The
// caller may modify the returned copy.
func (s *Sandbox) RESTConfig() *rest.Config {
	return rest.CopyConfig(s.restConfig)
}

// URL returns the API server's base URL, https://127.0.0.1:PORT.
func (s *Sandbox) URL() string { return s.restConfig.Host }

// DataDir returns the directory holding etcd's data and the default
// kubeconfig. Stop removes it.
func (s *Sandbox) DataDir() string { return s.dataDir }

// Stop shuts the sandbox down in order: webhooks started with ServeWebhook,
// the CA injector, the API server (waiting for it to return), etcd, and
// finally the data directory. Calling Stop again returns the first result.
func (s *Sandbox) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Sandbox) stop() error {
	s.mu.Lock()
	s.stopped = true
	webhooks := s.webhooks
	s.webhooks = nil
	s.mu.Unlock()

	var errs []error
	for _, w := range webhooks {
		if err := w.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.injector != nil {
		s.injector.stop()
	}
	if s.cancelRun != nil {
		s.cancelRun()
		for err := range s.runDone {
			errs = append(errs, fmt.Errorf("sandbox: api server: %w", err))
		}
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		errs = append(errs, fmt.Errorf("sandbox: remove data directory: %w", err))
	}
	if s.restoreGC != nil {
		s.restoreGC()
	}
	s.log.Debug("sandbox stopped", "dir", s.dataDir)
	return errors.Join(errs...)
}

// isLoopback reports whether the remote address host:port is on loopback.
func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// setGCPercent applies Options.GCPercent and returns what undoes it, or nil
// when it leaves the setting alone.
func setGCPercent(percent int) func() {
	switch {
	case percent < 0:
		return nil
	case percent == 0:
		if _, set := os.LookupEnv("GOGC"); set {
			return nil
		}
		percent = DefaultGCPercent
	}
	prev := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(prev) }
}
