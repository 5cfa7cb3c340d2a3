package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hubspoke/hubspoke/doctor"
)

type doctorOptions struct {
	kube          kubeFlags
	output        string
	planned       string
	certFile      string
	all           bool
	timeout       time.Duration
	dialTimeout   time.Duration
	expiryWarning time.Duration
	podProxy      string
}

func newDoctorCmd() *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor (CRD-NAME | --all) [--kubeconfig PATH] [--context NAME] [-o text|json|yaml]",
		Short: "Diagnose a CRD's conversion webhook on a live cluster, in the order an expert follows",
		Long: `Doctor walks what a conversion goes through and names the first thing broken:

  crd          strategy (None with versions whose schemas differ: the fields
               each loses), clientConfig, conversionReviewVersions, served
               and storage versions, conditions (each reason with its fix),
               status.storedVersions against the versions defined (and,
               with -f, the CRD about to be applied), the caBundle;
  service      the Service clientConfig names exists (or where it is
               instead) and has the port, and the port maps to a port the
               webhook pods declare;
  endpoints    its EndpointSlices list endpoints, and they are ready;
  each endpoint (ready ones first; pod IP and pod name), or the URL's host:
    webhook.reachable   the TLS handshake: refused, plain HTTP, hung, a
                        client certificate required;
    certificate.*       the served chain as the API server verifies it
                        (crypto/x509): chain to the caBundle (a missing
                        intermediate, a CA generated again, a self-signed
                        certificate), serverAuth usage, the name
                        NAME.NAMESPACE.svc (legacy Common Name), validity;
    conversion.direct   ConversionReviews for every pair of versions the API
                        server converts between, one object and a batch,
                        objects read from the cluster, each answer checked
                        as the API server checks it;
    conversion.latency  p50 and max of those reviews: a warning over 1s, an
                        error at 10s (a third of the API server's 30s);
  conversion.live  objects read through every served version and a copy
               created with dryRun through each non-storage version (both
               directions through the API server).

Every finding names its cause and the exact fix (a command or a patch); the
first error is the one to fix first. Errors the API server returns are
translated as ` + "`hubspoke explain`" + ` does. --all diagnoses every CRD with a
conversion webhook, one line each, and says for a broken one what else in
the cluster breaks while it is down.

doctor never waits longer than --timeout (each step has its own bound); on
a terminal it says on standard error what it is waiting for.

Exit status: 0 healthy (warnings allowed), 1 findings (with --all: any
CRD broken), 2 usage or operational error (cluster unreachable, access
denied).`,
		Example: `  hubspoke doctor widgets.example.com
  hubspoke doctor widgets.example.com --context prod -o yaml
  hubspoke doctor widgets.example.com -f crd-next.yaml   # will removing a version be refused?
  hubspoke doctor --all`,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.kube.add(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "report format: text, json or yaml")
	f.BoolVar(&o.all, "all", false, "diagnose every CRD with a conversion webhook, one line each")
	f.StringVarP(&o.planned, "filename", "f", "", "the CRD about to be applied: validate it as the API server will in place of the live one, and check its versions against status.storedVersions")
	f.StringVar(&o.certFile, "cert-file", "", "the webhook's serving certificate (PEM), when no endpoint is reachable from here")
	f.DurationVar(&o.timeout, "timeout", 60*time.Second, "the longest doctor runs (per CRD with --all); the API server waits up to 30s for a webhook that does not answer")
	f.DurationVar(&o.dialTimeout, "dial-timeout", 3*time.Second, "time to connect to an endpoint and complete the TLS handshake")
	f.StringVar(&o.podProxy, "pod-network-proxy", "", "reach a Service's endpoints (pod addresses) through this HTTP CONNECT proxy into the pod network, a `URL`: unix:///PATH or http://HOST:PORT (the sandbox's is printed by hubspoke sandbox); a clientConfig.url is dialled directly, as the API server does")
	f.DurationVar(&o.expiryWarning, "expiry-warning", 30*24*time.Hour, "warn when the serving certificate expires sooner")
	return cmd
}

func (o *doctorOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	switch {
	case o.all && len(args) > 0:
		return usagef("give a CRD name or --all, not both")
	case o.all && o.planned != "":
		return usagef("-f checks one CRD: give its name, not --all")
	case !o.all && len(args) != 1:
		return usagef("give the CRD's name (plural.group), or --all")
	}
	if o.timeout <= 0 || o.dialTimeout <= 0 {
		return usagef("--timeout and --dial-timeout must be positive")
	}
	opts := doctor.Options{Timeout: o.timeout, DialTimeout: o.dialTimeout, ExpiryWarning: o.expiryWarning}
	var err error
	if o.podProxy != "" {
		if opts.PodDial, err = doctor.ConnectDialer(o.podProxy); err != nil {
			return usageError{err}
		}
	}
	if o.planned != "" {
		if opts.Planned, err = os.ReadFile(o.planned); err != nil {
			return usageError{err}
		}
		opts.PlannedFile = o.planned
		if v := APIValidation.Update; v != nil {
			opts.ValidateUpdate = func(crd, live *apiextv1.CustomResourceDefinition) []string {
				var out []string
				for _, r := range v(crd, live) {
					out = append(out, r.Field+": "+r.Message)
				}
				return out
			}
		}
	}
	if o.certFile != "" {
		if opts.ServingCert, err = os.ReadFile(o.certFile); err != nil {
			return usageError{err}
		}
	}
	if p := progress(cmd.ErrOrStderr()); p != nil {
		opts.Progress = p
		defer fmt.Fprint(cmd.ErrOrStderr(), "\r\033[K")
	}
	cfg, err := o.kube.config()
	if err != nil {
		return usageError{err}
	}
	clients, err := doctor.NewClients(cfg)
	if err != nil {
		return usageError{fmt.Errorf("client: %w", err)}
	}
	out := cmd.OutOrStdout()
	if o.all {
		rep, err := doctor.RunAll(cmd.Context(), clients, opts)
		if err != nil {
			return usageError{err} // operational: exit 2
		}
		switch o.output {
		case "json":
			err = rep.WriteJSON(out)
		case "yaml":
			err = rep.WriteYAML(out)
		default:
			err = rep.WriteText(out)
		}
		if err != nil {
			return err
		}
		if rep.Broken() > 0 {
			return exitError{exitFail}
		}
		return nil
	}
	report, err := doctor.Run(cmd.Context(), clients, args[0], opts)
	if err != nil {
		return usageError{err} // operational: exit 2
	}
	switch o.output {
	case "json":
		err = report.WriteJSON(out)
	case "yaml":
		err = report.WriteYAML(out)
	default:
		err = report.WriteText(out)
	}
	if err != nil {
		return err
	}
	if report.Errors() > 0 {
		return exitError{exitFail}
	}
	return nil
}

// progress returns a function that shows on w, a terminal, what doctor
// is waiting for (one line, overwritten); nil when w is not a terminal.
func progress(w io.Writer) func(string) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(step string) {
		line := "doctor: waiting for " + step
		if len(line) > 120 {
			line = line[:117] + "..."
		}
		fmt.Fprintf(f, "\r\033[K%s", line)
	}
}
