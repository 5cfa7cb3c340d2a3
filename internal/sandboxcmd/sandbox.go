// Package sandboxcmd implements the hubspoke commands that link the
// embedded API server (package sandbox). cmd/hubspoke passes them to
// cli.Main as extras; the slim webhook binary does not, so it never links
// the API server.
package sandboxcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/exitcode"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
	"github.com/hubspoke/hubspoke/server"
)

// Default service of the in-process webhook: the one the examples' CRDs name.
const (
	DefaultServiceNamespace = "hubspoke-system"
	DefaultServiceName      = "hubspoke-webhook"
)

// NewSandboxCmd returns the `hubspoke sandbox` command.
func NewSandboxCmd() *cobra.Command {
	var (
		kubeconfig string
		serve      []string
		crds       []string
		service    string
		path       string
		verbose    bool
		kcm        bool
	)
	cmd := &cobra.Command{
		Use:   "sandbox [--kubeconfig PATH] [--serve RULES ...] [--crd CRD ...] [--controller-manager]",
		Short: "Run a local API server (and optionally the conversion webhook) until interrupted",
		Long: `Run a local Kubernetes cluster's control plane: kube-apiserver ` + sandbox.KubernetesVersion + ` and etcd,
on loopback, with RBAC and an admin kubeconfig. No nodes: objects are stored
and validated, not run. The binaries are built on first use (see
"hubspoke sandbox assets"); the data lives in a temporary directory removed
on exit.

With --serve, the hubspoke conversion webhook server for the given rule files
runs in this process too, over TLS with a generated CA, as an endpoint of the
Service --service (default hubspoke-system/hubspoke-webhook, the one the
examples' CRDs name; created if missing), at --path (default /convert), with
/healthz, /readyz and /metrics. The API server reaches it as in a cluster:
through the Service's EndpointSlice, whose ready condition follows the
webhook's /readyz, and a certificate checked against NAME.NAMESPACE.svc.
CRDs applied later whose conversion webhook names that Service get the CA
injected as their caBundle, as cert-manager's cainjector would do.

With --controller-manager, kube-controller-manager runs too, with the
controllers a CRD's life needs: ` + strings.Join(sandbox.Controllers, ", ") + `.
Namespace deletion then finishes, owned objects are garbage collected and
StorageVersionMigrations run (hubspoke migrate --engine cluster).

The command prints the kubeconfig path and a kubectl line to try; Ctrl-C stops
it cleanly.`,
		Example: `  hubspoke sandbox --serve examples/widget/conversion.yaml --crd examples/widget/crd.yaml
  KUBECONFIG=... kubectl get widgets.v1alpha1.example.com -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := server.CheckConvertPath(path); err != nil {
				return exitcode.UsageError{Err: fmt.Errorf("--path %q: %w", path, err)}
			}
			ns, name, err := parseService(service)
			if err != nil {
				return exitcode.UsageError{Err: err}
			}
			var logger *slog.Logger
			if verbose {
				logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			return runSandbox(cmd.Context(), cmd.OutOrStdout(), runOptions{
				kubeconfig: kubeconfig,
				rules:      serve,
				crds:       crds,
				namespace:  ns,
				name:       name,
				path:       path,
				logger:     logger,
				progress:   cmd.ErrOrStderr(),
				kcm:        kcm,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "write the kubeconfig to `PATH` (removed on exit; an existing file must be a sandbox kubeconfig); default: in the sandbox's temporary directory")
	f.StringArrayVar(&serve, "serve", nil, "serve the conversion webhook for this rule `FILE` in-process (repeatable)")
	f.StringArrayVar(&crds, "crd", nil, "install this CustomResourceDefinition `FILE` once the sandbox is up (repeatable)")
	f.StringVar(&service, "service", DefaultServiceNamespace+"/"+DefaultServiceName, "`NAMESPACE/NAME` of the service the in-process webhook answers for")
	f.StringVar(&path, "path", "/convert", "`PATH` the in-process webhook serves conversions at (the CRD's clientConfig.service.path)")
	f.BoolVarP(&verbose, "verbose", "v", false, "log the sandbox, API server and webhook to stderr")
	f.BoolVar(&kcm, "controller-manager", false, "also run kube-controller-manager (garbage collector, namespace deletion, storage version migrator, ...)")
	cmd.AddCommand(newAssetsCmd())
	return cmd
}

// newAssetsCmd returns `hubspoke sandbox assets`.
func newAssetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "assets",
		Short: "Build kube-apiserver and etcd if needed and print their directory (usable as KUBEBUILDER_ASSETS)",
		Long: `Print the directory holding the kube-apiserver and etcd binaries the sandbox
runs, building them first if they are not there: go build of k8s.io/kubernetes
` + sandbox.KubernetesVersion + ` and etcd from the Go module proxy into a per-version directory
under the user's cache directory (or $` + sandbox.AssetsEnv + `), several
minutes the first time, reporting its progress on stderr (one line rewritten
in place on a terminal). The directory also holds a kubectl symlink when kubectl
is on PATH, so it serves controller-runtime's envtest as KUBEBUILDER_ASSETS.`,
		Example: `  export KUBEBUILDER_ASSETS=$(hubspoke sandbox assets)`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := sandbox.EnsureAssets(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), dir)
			return nil
		},
	}
}

// parseService splits --service NAMESPACE/NAME, both names as the API
// server accepts them.
func parseService(service string) (namespace, name string, err error) {
	ns, name, ok := strings.Cut(service, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("--service %q: want NAMESPACE/NAME, such as %s/%s", service, DefaultServiceNamespace, DefaultServiceName)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", "", fmt.Errorf("--service %q: namespace %q: %s", service, ns, errs[0])
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return "", "", fmt.Errorf("--service %q: name %q (a Service name): %s", service, name, errs[0])
	}
	return ns, name, nil
}

type runOptions struct {
	kubeconfig      string
	rules, crds     []string
	namespace, name string
	path            string
	logger          *slog.Logger
	progress        io.Writer // of a build of the sandbox's binaries
	kcm             bool      // also run kube-controller-manager
}

func runSandbox(ctx context.Context, out io.Writer, o runOptions) (err error) {
	// Load everything that can fail on the user's input before starting:
	// such a failure is a usage error.
	var convs []review.Converter
	for _, path := range o.rules {
		c, err := rules.LoadFile(path)
		if err != nil {
			return exitcode.UsageError{Err: fmt.Errorf("--serve: %w", err)}
		}
		convs = append(convs, c)
	}
	crdObjs, err := loadCRDs(o.crds)
	if err != nil {
		return exitcode.UsageError{Err: err}
	}
	if o.kubeconfig != "" {
		if err := checkReplaceable(o.kubeconfig); err != nil {
			return exitcode.UsageError{Err: err}
		}
	}

	sb, err := sandbox.New(ctx, sandbox.Options{Logger: o.logger, Progress: o.progress, ControllerManager: o.kcm})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := sb.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()

	fmt.Fprintf(out, "api server: %s (data in %s)\n", sb.URL(), sb.DataDir())
	fmt.Fprintf(out, "pod network: %s (an HTTP CONNECT proxy: hubspoke doctor --pod-network-proxy)\n", sb.PodNetworkProxy())
	if sb.HasControllerManager() {
		fmt.Fprintf(out, "controllers: kube-controller-manager (%s)\n", strings.Join(sandbox.Controllers, ", "))
	}
	if len(convs) > 0 {
		stopWebhook, err := serveWebhook(sb, out, o, convs)
		if err != nil {
			return err
		}
		defer func() {
			if werr := stopWebhook(); werr != nil {
				err = errors.Join(err, werr)
			}
		}()
	}

	kubeconfig := sb.KubeconfigPath()
	if o.kubeconfig != "" {
		kubeconfig = o.kubeconfig
		if err := sb.WriteKubeconfig(kubeconfig); err != nil {
			return err
		}
		defer os.Remove(kubeconfig)
	}
	for _, f := range crdObjs {
		if _, err := sb.InstallCRD(ctx, f.crd); err != nil {
			return fmt.Errorf("--crd %s: %w", f.path, err)
		}
		fmt.Fprintf(out, "installed:  %s (%s)\n", f.name, f.path)
	}
	fmt.Fprintf(out, "kubeconfig: %s\n", kubeconfig)
	fmt.Fprintf(out, "try:        KUBECONFIG=%s kubectl get crds\n", kubeconfig)
	fmt.Fprintln(out, "Ctrl-C stops the sandbox.")

	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	return nil
}

// serveWebhook runs the hubspoke webhook server (package server) for convs
// on a loopback port, with a certificate for the service o.namespace/o.name
// signed by a fresh CA, and registers it with the sandbox, whose CA
// injector then sets the CA on CRDs naming the service. The certificate
// files live in the sandbox's data directory. stop shuts the server down.
func serveWebhook(sb *sandbox.Sandbox, out io.Writer, o runOptions, convs []review.Converter) (stop func() error, err error) {
	reg := prometheus.NewRegistry()
	h, err := review.NewHandler(review.Options{Converters: convs, Logger: o.logger, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	cert, err := sandbox.NewServiceCert(o.namespace, o.name)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(sb.DataDir(), "webhook-certs")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	for name, data := range map[string][]byte{"tls.crt": cert.Cert, "tls.key": cert.Key, "ca.crt": cert.CA} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("webhook: %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Options{
			Listener:      ln,
			CertDir:       certDir,
			Handler:       h,
			ConvertPath:   o.path,
			Logger:        o.logger,
			Registerer:    reg,
			ShutdownDelay: -1, // nothing routes to it but the sandbox
			ShutdownGrace: 5 * time.Second,
			OnReady:       func(net.Addr) { close(ready) },
		})
	}()
	stop = func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		return nil
	}
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("webhook: %w", err)
	}
	addr := ln.Addr().String()
	addCtx, cancelAdd := context.WithTimeout(ctx, time.Minute)
	defer cancelAdd()
	ep, err := sb.AddEndpoint(addCtx, sandbox.EndpointOptions{
		Namespace: o.namespace, Service: o.name, Addr: addr,
		ReadinessPath: "/readyz", CABundle: cert.CA,
	})
	if err == nil {
		err = ep.WaitReady(addCtx)
	}
	if err != nil {
		if ep != nil {
			err = errors.Join(err, ep.Remove(context.Background()))
		}
		return nil, errors.Join(err, stop())
	}
	stopServer := stop
	stop = func() error { return errors.Join(ep.Remove(context.Background()), stopServer()) }
	var served []string
	for _, c := range convs {
		served = append(served, c.Kind()+"."+c.Group())
	}
	fmt.Fprintf(out, "webhook:    service %s/%s -> pod %s (listening on %s), %s, converting %s\n", o.namespace, o.name, ep.IP(), addr, o.path, strings.Join(served, ", "))
	fmt.Fprintf(out, "            CRDs naming service %s/%s get its CA (%s) as caBundle\n", o.namespace, o.name, filepath.Join(certDir, "ca.crt"))
	fmt.Fprintf(out, "metrics:    https://%s/metrics\n", addr)
	return stop, nil
}

type crdFile struct {
	path, name string
	crd        *apiextensionsv1.CustomResourceDefinition
}

// loadCRDs reads the --crd files and refuses, before anything starts,
// what the API server would refuse, each reason at its file and line (the
// API server's own message quotes whole schemas as Go structures).
func loadCRDs(paths []string) ([]*crdFile, error) {
	var out []*crdFile
	seen := map[string]string{}
	for _, path := range paths {
		crd, err := schema.LoadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--crd: %w", err)
		}
		name := crd.Object.Name
		if first, ok := seen[name]; ok {
			return nil, fmt.Errorf("--crd %s: CustomResourceDefinition %s is also in %s: give each CRD once", path, name, first)
		}
		seen[name] = path
		if refusals := crdvalidation.Validate(crd); len(refusals) > 0 {
			errs := []error{fmt.Errorf("--crd %s: the API server would refuse CustomResourceDefinition %s:", path, name)}
			for _, r := range refusals {
				errs = append(errs, r)
			}
			return nil, errors.Join(errs...)
		}
		out = append(out, &crdFile{path: path, name: name, crd: crd.Object})
	}
	return out, nil
}

// checkReplaceable refuses to overwrite a kubeconfig that is not one a
// sandbox wrote, so that --kubeconfig ~/.kube/config cannot destroy the
// user's configuration.
func checkReplaceable(path string) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Dir(path)); err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", path, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: exists and is not a kubeconfig: %w", path, err)
	}
	if cfg.CurrentContext != sandbox.KubeconfigContext || len(cfg.Contexts) != 1 {
		return fmt.Errorf("--kubeconfig %s: exists and was not written by hubspoke sandbox; refusing to overwrite it", path)
	}
	return nil
}
