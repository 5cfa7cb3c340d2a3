// Package operatorcmd is the hubspoke operator command. It is apart from
// internal/cli because it links controller-runtime, which the binaries of
// package webhookmain must not; cmd/hubspoke adds it.
package operatorcmd

import (
	"log/slog"
	"net"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/internal/exitcode"
	"github.com/hubspoke/hubspoke/operator"
)

var usagef = exitcode.Usagef

type operatorOptions struct {
	opts                operator.Options
	kubeconfig, context string
	podProxy            string
	logFormat           string
	logLevel            string
}

// New returns the operator command.
func New() *cobra.Command {
	o := &operatorOptions{}
	cmd := &cobra.Command{
		Use:   "operator [-n NAMESPACE] [--service NAME] [--admission-addr HOST:PORT --admission-cert-dir DIR]",
		Short: "Roll out Conversion objects: admission, replicas serving, the CRD switched when safe",
		Long: `The operator rolls out the cluster's Conversion objects (hubspoke.dev/v1alpha1,
each a rule file named after the CRD it converts), served live by a webhook
Deployment running "hubspoke-webhook serve --watch-conversions" behind the
Service -n/--service.

Admission (--admission-addr, --admission-cert-dir; registered by a
ValidatingWebhookConfiguration, as "hubspoke deploy --operator" renders it)
refuses a Conversion whose rules do not load (a funcs rule naming a Go func
the webhook's replicas lack included), whose static checks or laws fail
against the live CRD (--check-objects per law, within --check-timeout), or
that answers differently from a generation a replica serves, on generated
and on existing objects — unless spec.rollout.acknowledgeDifferences names
that generation and says why.

It asks every endpoint of the Service which generation it serves, over TLS
verified with the caBundle the CRD has (or the serving Secret's ca.crt),
writes it in the Conversion's status (Accepted, Serving, CRDConfigured), and
points the CRD's spec.conversion at the Service only once every ready
replica serves the current generation. spec.storage migrates the stored
objects afterwards. A Conversion is kept (a finalizer, and an event saying
why) while its CRD converts through it. See docs/production.md.`,
		Example: `  hubspoke operator -n hubspoke-system --admission-addr :9443 --admission-cert-dir /etc/hubspoke/admission-tls
  hubspoke operator --kubeconfig ~/.kube/config --pod-network-proxy unix:///tmp/sandbox/egress.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.opts.Namespace, "namespace", "n", operator.DefaultNamespace, "namespace of the webhook's Service")
	f.StringVar(&o.opts.Service, "service", operator.DefaultService, "the webhook's Service, which CRDs are pointed at")
	f.Int32Var(&o.opts.Port, "port", operator.DefaultPort, "the Service's port")
	f.StringVar(&o.opts.Path, "path", operator.DefaultPath, "the webhook's conversion path")
	f.StringVar(&o.opts.PortName, "port-name", operator.DefaultPortName, "the name of the Service's port")
	f.StringVar(&o.opts.CASecret, "ca-secret", "", "the Secret (in -n) whose ca.crt becomes a CRD's caBundle (default SERVICE-serving-tls)")
	f.StringVar(&o.opts.InjectCAFrom, "inject-ca-from", "", "with cert-manager: NAMESPACE/CERTIFICATE, written as each configured CRD's cert-manager.io/inject-ca-from")
	f.StringVarP(&o.opts.Selector, "selector", "l", "", "roll out only the Conversions matching this label selector (the webhook's --selector)")
	f.StringVar(&o.opts.AdmissionAddr, "admission-addr", "", "serve the validating webhook on this host:port (empty: none)")
	f.StringVar(&o.opts.AdmissionCertDir, "admission-cert-dir", "", "tls.crt and tls.key of the validating webhook")
	f.IntVar(&o.opts.CheckObjects, "check-objects", operator.DefaultCheckObjects, "generated objects per law and version pair at admission")
	f.DurationVar(&o.opts.CheckTimeout, "check-timeout", operator.DefaultCheckTimeout, "bound on admission's checks of one Conversion")
	f.StringVar(&o.opts.BackupDir, "backup-dir", "", "where spec.storage.backup writes backups")
	f.StringVar(&o.opts.MetricsAddr, "metrics-addr", "0", `serve /metrics on this host:port ("0": not served)`)
	f.StringVar(&o.opts.HealthAddr, "health-addr", "0", `serve /healthz and /readyz on this host:port ("0": not served)`)
	f.BoolVar(&o.opts.LeaderElection, "leader-elect", false, "elect one reconciler among the operator's replicas (a Lease in -n)")
	f.StringVar(&o.podProxy, "pod-network-proxy", "", "reach the webhook's endpoints through this HTTP CONNECT proxy into the pod network (unix:///PATH or http://HOST:PORT; the sandbox's is printed by hubspoke sandbox)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: the pod's service account, $KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context")
	return cmd
}

func (o *operatorOptions) run(cmd *cobra.Command) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		o.opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), hopts))
	case "json":
		o.opts.Logger = slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), hopts))
	default:
		return usagef("--log-format %q: want text or json", o.logFormat)
	}
	if _, err := labels.Parse(o.opts.Selector); err != nil {
		return usagef("--selector %q: %w", o.opts.Selector, err)
	}
	if o.opts.AdmissionAddr != "" {
		if _, _, err := net.SplitHostPort(o.opts.AdmissionAddr); err != nil {
			return usagef("--admission-addr %q: want HOST:PORT: %w", o.opts.AdmissionAddr, err)
		}
		if o.opts.AdmissionCertDir == "" {
			return usagef("--admission-addr needs --admission-cert-dir")
		}
	}
	if o.opts.CheckObjects < 1 || o.opts.CheckTimeout <= 0 {
		return usagef("--check-objects must be at least 1 and --check-timeout positive")
	}
	if o.podProxy != "" {
		dial, err := doctor.ConnectDialer(o.podProxy)
		if err != nil {
			return usagef("--pod-network-proxy: %w", err)
		}
		o.opts.PodDial = dial
	}
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return usagef("no cluster configured (in a pod: the service account; else --kubeconfig FILE, --context NAME): %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "hubspoke-operator"
	o.opts.Config = cfg
	return operator.Run(cmd.Context(), o.opts)
}
