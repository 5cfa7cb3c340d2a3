package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configures a Sandbox. The zero value is ready to use.
type Options struct {
	// Logger receives the logs of the sandbox and, at debug level, those
	// of etcd and kube-apiserver (which also go to files in the data
	// directory). Nil discards them.
	Logger *slog.Logger

	// TempDir is the directory in which the sandbox creates its data
	// directory (etcd's files, certificates, logs, the kubeconfig). Empty
	// means os.TempDir(). Stop removes the data directory.
	TempDir string

	// AssetsDir holds the kube-apiserver and etcd binaries to run. Empty
	// means EnsureAssets: built on first use into AssetsDir().
	AssetsDir string

	// Progress receives the progress of a build of the binaries, when New
	// has to build them first (see EnsureAssets). Nil means os.Stderr;
	// io.Discard says nothing.
	Progress io.Writer

	// StartTimeout bounds how long New waits for etcd and the API server
	// (and kube-controller-manager) to report ready. Zero means one minute.
	// Building the binaries, if needed, is not counted.
	StartTimeout time.Duration

	// ControllerManager also starts kube-controller-manager, with the
	// controllers of [Controllers]: garbage collection by owner references,
	// namespace deletion, resource quotas, the storage version migrator
	// (StorageVersionMigrations run) and default ServiceAccounts. Off by
	// default: it adds about a second to the start, a process of about 60
	// MB and, while it runs, the CPU of its informers (a watch of every
	// resource); and the first start builds one more binary.
	ControllerManager bool
}

// Sandbox is a running etcd and kube-apiserver (and, with
// Options.ControllerManager, kube-controller-manager). Its methods are
// safe for concurrent use.
type Sandbox struct {
	log     *slog.Logger
	dataDir string

	etcd, apiserver, controllerManager *process

	restConfig *rest.Config
	core       kubernetes.Interface
	crds       apiextensionsclient.Interface
	dyn        dynamic.Interface

	net      *network
	injector *injector

	mu       sync.Mutex
	webhooks []*Webhook
	stopped  bool

	stopOnce sync.Once
	stopErr  error
}

// New starts etcd and kube-apiserver and returns once the API server
// reports ready; the sandbox runs until Stop. It builds the binaries first
// if they are not built yet (see EnsureAssets), reporting its progress to
// Options.Progress.
//
// Cancelling ctx stops New, the build included. A deadline on ctx bounds
// the start only, as Options.StartTimeout does: the build, minutes the
// first time, runs without it, and the deadline is moved later by the time
// the build took, so that no deadline chosen for a start of seconds cuts a
// build short.
//
// New also removes the data directories that sandboxes killed before
// they could stop (SIGKILL) left in the same directory (Options.TempDir),
// once their owning process is gone.
func New(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	assets := opts.AssetsDir
	if assets == "" {
		progress := opts.Progress
		if progress == nil {
			progress = os.Stderr
		}
		began := time.Now()
		buildCtx, cancel := withoutDeadline(ctx)
		names := []string{KubeAPIServerBinary, EtcdBinary}
		if opts.ControllerManager {
			names = append(names, KubeControllerManagerBinary)
		}
		assets, err = ensureAssets(buildCtx, progress, true, names)
		cancel()
		if err != nil {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok {
			ctx, cancel = withoutDeadline(ctx)
			defer cancel()
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(time.Since(began)))
			defer cancel()
		}
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	removeDeadDataDirs(opts.TempDir, log)
	dir, err := newDataDir(opts.TempDir)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{log: log, dataDir: dir}
	defer func() {
		if err != nil {
			if stopErr := s.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}
	}()

	certs, err := newClusterPKI()
	if err != nil {
		return nil, err
	}
	files, err := certs.write(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	socket, err := socketPath(dir)
	if err != nil {
		return nil, err
	}
	if s.net, err = newNetwork(socket, log); err != nil {
		return nil, err
	}
	egressFile := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(egressFile, []byte(egressConfig(socket)), 0o600); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}

	start := time.Now()
	var etcdURL string
	s.etcd, etcdURL, err = startEtcd(ctx, filepath.Join(assets, EtcdBinary), dir, log)
	if err != nil {
		return nil, err
	}
	log.Debug("etcd ready", "url", etcdURL, "took", time.Since(start))

	s.apiserver, s.restConfig, err = startAPIServer(ctx, filepath.Join(assets, KubeAPIServerBinary), dir, etcdURL, files, egressFile,
		func(host string) *rest.Config {
			return &rest.Config{
				Host: host,
				TLSClientConfig: rest.TLSClientConfig{
					CAData:   certs.ca.CertPEM,
					CertData: certs.admin.CertPEM,
					KeyData:  certs.admin.KeyPEM,
				},
				UserAgent: "hubspoke-sandbox",
				QPS:       -1, // no client-side throttling against a local server
			}
		}, log)
	if err != nil {
		return nil, err
	}
	log.Debug("kube-apiserver ready", "url", s.restConfig.Host, "took", time.Since(start))

	if s.core, err = kubernetes.NewForConfig(s.restConfig); err != nil {
		return nil, fmt.Errorf("sandbox: client: %w", err)
	}
	if s.crds, err = apiextensionsclient.NewForConfig(s.restConfig); err != nil {
		return nil, fmt.Errorf("sandbox: apiextensions client: %w", err)
	}
	if s.dyn, err = dynamic.NewForConfig(s.restConfig); err != nil {
		return nil, fmt.Errorf("sandbox: dynamic client: %w", err)
	}
	if err := s.WriteKubeconfig(s.KubeconfigPath()); err != nil {
		return nil, err
	}
	s.injector = startInjector(s.crds, s.net, log)
	if opts.ControllerManager {
		kcmStart := time.Now()
		s.controllerManager, err = startControllerManager(ctx, filepath.Join(assets, KubeControllerManagerBinary), dir, certs.ca, s.restConfig.Host, log)
		if err != nil {
			return nil, err
		}
		log.Debug("kube-controller-manager ready", "took", time.Since(kcmStart))
	}
	return s, nil
}

// withoutDeadline returns a context with ctx's values that is cancelled
// when ctx is cancelled, but not when ctx's deadline (or a parent's)
// passes. Once that deadline has passed, a later cancellation of a parent
// of ctx cannot be seen: ctx is done already.
func withoutDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	return out, func() {
		stop()
		cancel(context.Canceled)
	}
}

// socketPath returns where the egress proxy listens: in the data
// directory if the path fits a Unix socket's limit, else in a fresh
// directory under os.TempDir (removed with the sandbox's files, see Stop).
func socketPath(dir string) (string, error) {
	path := filepath.Join(dir, "egress.sock")
	if len(path) < 100 {
		return path, nil
	}
	short, err := os.MkdirTemp("", "hs-")
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	// The data directory links to it so that Stop finds it.
	if err := os.Symlink(short, filepath.Join(dir, "egress-dir")); err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return filepath.Join(short, "egress.sock"), nil
}

// HasControllerManager tells whether kube-controller-manager runs
// (Options.ControllerManager).
func (s *Sandbox) HasControllerManager() bool { return s.controllerManager != nil }

// RESTConfig returns a client configuration for the sandbox: its loopback
// URL, its CA and the admin's client certificate (AdminUser, in
// system:masters). The caller may modify the returned copy.
func (s *Sandbox) RESTConfig() *rest.Config {
	return rest.CopyConfig(s.restConfig)
}

// URL returns the API server's base URL, https://127.0.0.1:PORT.
func (s *Sandbox) URL() string { return s.restConfig.Host }

// DataDir returns the directory holding etcd's data, the certificates,
// the logs of etcd and kube-apiserver and the default kubeconfig. Stop
// removes it.
func (s *Sandbox) DataDir() string { return s.dataDir }

// Stop shuts the sandbox down in order: webhooks started with ServeWebhook,
// the CA injector, kube-controller-manager, the API server (waiting for it
// to return), etcd, and finally the data directory. Calling Stop again returns the first result.
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
	if err := s.controllerManager.stop(5 * time.Second); err != nil {
		errs = append(errs, err)
	}
	if s.net != nil {
		s.net.mu.Lock()
		var eps []*Endpoint
		for _, list := range s.net.eps {
			eps = append(eps, list...)
		}
		s.net.mu.Unlock()
		for _, e := range eps {
			if err := e.Remove(context.Background()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := s.apiserver.stop(10 * time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := s.etcd.stop(5 * time.Second); err != nil {
		errs = append(errs, err)
	}
	if s.net != nil {
		s.net.close()
	}
	if short, err := os.Readlink(filepath.Join(s.dataDir, "egress-dir")); err == nil {
		os.RemoveAll(short)
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		errs = append(errs, fmt.Errorf("sandbox: remove data directory: %w", err))
	}
	s.log.Debug("sandbox stopped", "dir", s.dataDir)
	return errors.Join(errs...)
}

// isStopping reports whether Stop has begun.
func (s *Sandbox) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
