package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hubspoke/hubspoke/doctor"
)

type doctorOptions struct {
	kube          kubeFlags
	output        string
	planned       string
	certFile      string
	dialTimeout   time.Duration
	expiryWarning time.Duration
	podProxy      string
}

func newDoctorCmd() *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor CRD-NAME [--kubeconfig PATH] [--context NAME] [-o text|json]",
		Short: "Diagnose a CRD's conversion webhook on a live cluster, in the order an expert follows",
		Long: `Doctor walks what a conversion goes through and names the first thing broken:

  crd          strategy, clientConfig, conversionReviewVersions, served and
               storage versions, conditions, status.storedVersions against
               the versions defined (and, with -f, the CRD about to be
               applied), the caBundle;
  service      the Service clientConfig names exists and has the port, and
               the port maps to a port the webhook pods declare;
  endpoints    its EndpointSlices list endpoints, and they are ready;
  certificate  the certificate an endpoint serves (dialled when reachable
               from here, or --cert-file) chains to the caBundle, is valid
               for NAME.NAMESPACE.svc, and is not expired or expiring;
  conversion   live: objects read through every served version and a copy
               created with dryRun through each non-storage version (both
               directions through the API server); direct: reviews posted
               to a reachable endpoint and checked as the API server does.

Every finding names its cause and the exact fix (a command or a patch); the
first error is the one to fix first. Errors the API server returns are
translated as ` + "`hubspoke explain`" + ` does.

Exit status: 0 healthy (warnings allowed), 1 findings, 2 usage or
operational error (cluster unreachable, access denied).`,
		Example: `  hubspoke doctor widgets.example.com
  hubspoke doctor widgets.example.com --context prod -o json
  hubspoke doctor widgets.example.com -f crd-next.yaml   # will removing a version be refused?`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0]) },
	}
	o.kube.add(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "report format: text or json")
	f.StringVarP(&o.planned, "filename", "f", "", "the CRD about to be applied: validate it as the API server will in place of the live one, and check its versions against status.storedVersions")
	f.StringVar(&o.certFile, "cert-file", "", "the webhook's serving certificate (PEM), when no endpoint is reachable from here")
	f.DurationVar(&o.dialTimeout, "dial-timeout", 3*time.Second, "time to connect to an endpoint")
	f.StringVar(&o.podProxy, "pod-network-proxy", "", "reach a Service's endpoints (pod addresses) through this HTTP CONNECT proxy into the pod network (unix:///PATH or http://HOST:PORT; the sandbox's is printed by `hubspoke sandbox`); a clientConfig.url is dialled directly, as the API server does")
	f.DurationVar(&o.expiryWarning, "expiry-warning", 30*24*time.Hour, "warn when the serving certificate expires sooner")
	return cmd
}

func (o *doctorOptions) run(cmd *cobra.Command, name string) error {
	if o.output != "text" && o.output != "json" {
		return usagef("-o %q: want text or json", o.output)
	}
	opts := doctor.Options{DialTimeout: o.dialTimeout, ExpiryWarning: o.expiryWarning}
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
	cfg, err := o.kube.config()
	if err != nil {
		return usageError{err}
	}
	clients, err := doctor.NewClients(cfg)
	if err != nil {
		return usageError{fmt.Errorf("client: %w", err)}
	}
	report, err := doctor.Run(cmd.Context(), clients, name, opts)
	if err != nil {
		return usageError{err} // operational: exit 2
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		err = report.WriteJSON(out)
	} else {
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
