// Package servecmd implements `hubspoke serve` and the command line of the
// slim hubspoke-webhook binary (serve and version only). It is kept apart
// from internal/cli so that the webhook binary links neither the API server
// nor the other subcommands' dependencies.
package servecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/exitcode"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/server"
)

func usagef(format string, args ...any) error { return exitcode.Usagef(format, args...) }

type options struct {
	rules          []string
	certDir        string
	addr           string
	path           string
	clientCAFile   string
	maxRequest     string
	logFormat      string
	logLevel       string
	shutdownDelay  time.Duration
	shutdownGrace  time.Duration
	reloadInterval time.Duration
	watch          watchFlags
}

// New returns the serve command.
func New() *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "serve (--rules FILE [--rules FILE ...] | --watch-conversions [--selector LABELS]) --cert-dir DIR [--addr HOST:PORT]",
		Short: "Serve ConversionReviews over HTTPS for one or more rule files",
		Long: `Serve the conversion webhook: POST /convert (ConversionReview v1 and v1beta1),
/healthz, /readyz and /metrics, over HTTPS only.

Each --rules file serves one CRD; reviews are dispatched by the objects'
group and kind. With --watch-conversions instead, the webhook serves the
cluster's Conversion objects (hubspoke.dev/v1alpha1; --selector picks some),
reloading each when it changes without dropping a request, keeping the last
good generation when a new one does not load, and reporting what it serves
at /conversions; it is ready once the Conversions that exist are loaded.
--cert-dir holds tls.crt and tls.key (a kubernetes.io/tls
Secret mounted as a volume); they are reloaded when they change. With
--client-ca-file, /convert requires a client certificate signed by that CA.

On SIGTERM /readyz turns 503, the server keeps serving for --shutdown-delay,
then waits up to --shutdown-grace for in-flight reviews and exits.`,
		Example: `  hubspoke serve --rules examples/widget/conversion.yaml --cert-dir /etc/hubspoke/tls
  hubspoke serve --rules widgets.yaml --rules gadgets.yaml --cert-dir certs --addr 127.0.0.1:8443 --log-format json
  hubspoke serve --watch-conversions --selector team=a --cert-dir /etc/hubspoke/tls`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.rules, "rules", nil, "rule file (hubspoke.dev/v1alpha1 Conversion); repeat for several CRDs")
	f.StringVar(&o.certDir, "cert-dir", "", "directory holding tls.crt and tls.key")
	f.StringVar(&o.addr, "addr", server.DefaultAddr, "host:port to listen on")
	f.StringVar(&o.path, "path", server.DefaultConvertPath, "path of the conversion endpoint")
	f.StringVar(&o.clientCAFile, "client-ca-file", "", "PEM CA bundle; when set, /convert requires a client certificate it verifies")
	f.StringVar(&o.maxRequest, "max-request-bytes", "128Mi", "largest request body accepted (bytes, or with a Ki, Mi or Gi suffix)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug (one line per review), info, warn or error")
	f.DurationVar(&o.shutdownDelay, "shutdown-delay", server.DefaultShutdownDelay, "how long to keep serving, unready, after SIGTERM")
	f.DurationVar(&o.shutdownGrace, "shutdown-grace", server.DefaultShutdownGrace, "how long in-flight reviews may take after that")
	f.DurationVar(&o.reloadInterval, "cert-reload-interval", server.DefaultCertReloadInterval, "how often to check the certificate files for changes")
	f.BoolVar(&o.watch.enabled, "watch-conversions", false, "serve the cluster's Conversion objects (hubspoke.dev/v1alpha1), reloaded live, instead of --rules files")
	f.StringVarP(&o.watch.selector, "selector", "l", "", "with --watch-conversions: serve only the Conversions matching this label selector")
	f.StringVar(&o.watch.kubeconfig, "kubeconfig", "", "with --watch-conversions: kubeconfig file (default: the pod's service account, $KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.watch.context, "context", "", "with --watch-conversions: kubeconfig context")
	return cmd
}

func run(ctx context.Context, stderr io.Writer, o options) error {
	if len(o.rules) == 0 && !o.watch.enabled {
		return usagef("serve: --rules (or --watch-conversions) is required")
	}
	if err := o.watch.check(o.rules); err != nil {
		return err
	}
	if o.certDir == "" {
		return usagef("serve: --cert-dir is required")
	}
	if err := checkAddr(o.addr); err != nil {
		return usagef("serve: --addr %q: %w", o.addr, err)
	}
	if err := server.CheckConvertPath(o.path); err != nil {
		return usagef("serve: --path %q: %w", o.path, err)
	}
	maxBytes, err := parseBytes(o.maxRequest)
	if err != nil {
		return usagef("serve: --max-request-bytes: %w", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("serve: --log-level %q: want debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	switch o.logFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(stderr, hopts))
	case "json":
		log = slog.New(slog.NewJSONHandler(stderr, hopts))
	default:
		return usagef("serve: --log-format %q: want text or json", o.logFormat)
	}
	if o.shutdownDelay < 0 || o.shutdownGrace <= 0 || o.reloadInterval <= 0 {
		return usagef("serve: --shutdown-delay must not be negative; --shutdown-grace and --cert-reload-interval must be positive")
	}

	var convs []review.Converter
	for _, f := range o.rules {
		c, err := rules.LoadFile(f)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		log.Info("loaded rules", "file", f, "crd", c.Kind()+"."+c.Group(), "hub", c.Hub(), "versions", c.Versions())
		convs = append(convs, c)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := review.NewHandler(review.Options{
		Converters:      convs,
		Replaceable:     o.watch.enabled,
		Logger:          log,
		Registerer:      reg,
		MaxRequestBytes: maxBytes,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var readyCheck func() error
	var handlers map[string]http.Handler
	if o.watch.enabled {
		wm, err := o.watch.start(ctx, h, log, reg)
		if err != nil {
			return err
		}
		readyCheck, handlers = wm.w.Ready, wm.handlers
	}
	return server.Run(ctx, server.Options{
		ReadyCheck:         readyCheck,
		Handlers:           handlers,
		Addr:               o.addr,
		CertDir:            o.certDir,
		ClientCAFile:       o.clientCAFile,
		Handler:            h,
		ConvertPath:        o.path,
		Logger:             log,
		Registerer:         reg,
		ShutdownDelay:      orNone(o.shutdownDelay),
		ShutdownGrace:      o.shutdownGrace,
		CertReloadInterval: o.reloadInterval,
	})
}

// orNone maps a zero delay to server.Options' "none" (negative).
func orNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// checkAddr checks a listen address before anything else is loaded:
// HOST:PORT, [IPv6]:PORT or :PORT (port 0 picks a free one).
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT (e.g. :8443 or 127.0.0.1:8443): %w", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("want HOST:PORT with a port from 0 to 65535: %w", err)
	}
	return nil
}

// parseBytes parses "1048576", "512Ki", "64Mi" or "1Gi".
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = n, m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a positive size such as 134217728 or 128Mi", s)
	}
	return n * mult, nil
}

// version is set at link time with
// -ldflags "-X github.com/hubspoke/hubspoke/internal/servecmd.version=v1.2.3";
// when empty, the module version from the build info is used.
var version = ""

// Version returns the version line of the binary (after its name): the
// module version and the VCS revision it was built from, read from the
// build info.
func Version() string { return Info().String() }

// VersionInfo is what a binary knows of its own build, as version -o
// json|yaml prints it.
type VersionInfo struct {
	// Version is the link-time version, else the module's; "(devel)"
	// when neither is known.
	Version string `json:"version"`
	// Revision is the VCS revision (12 characters), "" when the build
	// has none (go build -buildvcs=false).
	Revision string `json:"revision,omitempty"`
	// Modified says the work tree had changes.
	Modified bool `json:"modified,omitempty"`
	// CommitTime is the revision's commit time.
	CommitTime string `json:"commitTime,omitempty"`
	// GoVersion is the Go toolchain's version.
	GoVersion string `json:"goVersion,omitempty"`
	// BuildInfo is false when the binary holds no build information.
	BuildInfo bool `json:"buildInfo"`
}

// ReadVersionInfo returns the VersionInfo of a link-time version (may be
// empty) and the build info (may be nil).
func ReadVersionInfo(linked string, bi *debug.BuildInfo) VersionInfo {
	v := VersionInfo{Version: linked, BuildInfo: bi != nil}
	if v.Version == "" && bi != nil {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	if bi == nil {
		return v
	}
	v.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.CommitTime = s.Value
		}
	}
	return v
}

// Info returns the VersionInfo of the running binary.
func Info() VersionInfo {
	bi, _ := debug.ReadBuildInfo()
	return ReadVersionInfo(version, bi)
}

// FormatVersion formats the version line from a link-time version (may be
// empty) and the build info (may be nil): "v1.2.3 (revision 0123456789ab,
// modified, built 2026-12-02T13:00:00Z, go1.26.8)". A build without VCS
// information (go build -buildvcs=false, or outside a repository) says
// "revision unknown" rather than guess; a build outside module mode or
// from a work tree says "(devel)" for the version, as the go command does.
func FormatVersion(linked string, bi *debug.BuildInfo) string {
	return ReadVersionInfo(linked, bi).String()
}

// String is the version line (see FormatVersion).
func (v VersionInfo) String() string {
	if !v.BuildInfo {
		return v.Version + " (no build information)"
	}
	rev := v.Revision
	if rev == "" {
		rev = "unknown"
	}
	details := "revision " + rev
	if v.Modified {
		details += ", modified"
	}
	if v.CommitTime != "" {
		details += ", built from a commit of " + v.CommitTime
	}
	if v.GoVersion != "" {
		details += ", " + v.GoVersion
	}
	return v.Version + " (" + details + ")"
}

// yaml writes v as YAML, the fields of its JSON in their order, strings
// quoted as JSON quotes them (valid YAML, never read as anything but a
// string). Written here rather than with internal/yamljson, whose YAML
// encoder would add a third of a megabyte to the slim webhook binary.
func (v VersionInfo) yaml() []byte {
	var b []byte
	str := func(k, s string) {
		if s != "" || k == "version" {
			q, _ := json.Marshal(s)
			b = append(append(append(b, k+": "...), q...), '\n')
		}
	}
	str("version", v.Version)
	str("revision", v.Revision)
	if v.Modified {
		b = append(b, "modified: true\n"...)
	}
	str("commitTime", v.CommitTime)
	str("goVersion", v.GoVersion)
	return append(b, "buildInfo: "+strconv.FormatBool(v.BuildInfo)+"\n"...)
}

// NewVersionCmd returns the version command of the binary called name:
// the version line, or with -o json|yaml the VersionInfo.
func NewVersionCmd(name string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := Info()
			w := cmd.OutOrStdout()
			switch output {
			case "":
				_, err := fmt.Fprintf(w, "%s %s\n", name, info)
				return err
			case "json", "yaml":
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				if output == "yaml" {
					b = info.yaml()
				} else {
					b = append(b, '\n')
				}
				_, err = w.Write(b)
				return err
			}
			return usagef("version: -o %q: want json or yaml", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml: the version's parts, one field each (default: one line)")
	return cmd
}

// NewWebhookRoot returns the root command of hubspoke-webhook: serve and
// version only.
func NewWebhookRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "hubspoke-webhook",
		Short: "The hubspoke conversion webhook server",
	}
	root.AddCommand(New(), NewVersionCmd("hubspoke-webhook"))
	return root
}

// Main runs the hubspoke-webhook command line and returns its exit code:
// 0 after a clean shutdown, 1 on a failure, 2 on a usage error (see
// internal/exitcode, shared with hubspoke).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return exitcode.Run(ctx, NewWebhookRoot(), args, stdin, stdout, stderr)
}
