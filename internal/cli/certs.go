package cli

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/rotate"
)

func newCertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Manage the certificates of a webhook deployed with --certs hubspoke",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCertsRotateCmd())
	return cmd
}

type certsRotateOptions struct {
	kube        kubeFlags
	opts        rotate.Options
	propagation time.Duration
	dryRun      string
}

func newCertsRotateCmd() *cobra.Command {
	o := &certsRotateOptions{}
	cmd := &cobra.Command{
		Use:   "rotate [-n NAMESPACE] [--name NAME] [--force | --force-ca] [--dry-run=client]",
		Short: "Renew the webhook's serving certificate, and its CA, in the order that fails no request",
		Long: `Rotate renews the certificates of a webhook deployed with
"hubspoke deploy --certs hubspoke" when they are due:

  the serving certificate, when it expires within --renew-before, from the
  same CA (one write: every API server trusts it already);

  the CA, when it expires within --ca-renew-before, in three steps:
    1. the new CA goes into the CA Secret and next to the old CA in the
       caBundle of every CRD converted by the Service; rotate reads the
       CRDs back until they hold it, then waits --trust-wait;
    2. the serving Secret gets a certificate of the new CA; rotate waits
       until every ready pod serves it (asking each pod's /metrics through
       the API server's pod proxy, up to --propagation-wait; when the pods
       cannot be asked, it waits --propagation-wait in full);
    3. the old CA leaves the caBundles.

After each step a read through every served non-storage version (a
conversion through the API server) must succeed, or rotate stops. Run it
again after an interruption: it resumes where it stopped. Run it from a
CronJob or by hand; with nothing due it changes nothing.

Exit status: 0 done or nothing due, 1 failure, 2 usage error.`,
		Example: `  hubspoke certs rotate -n hubspoke-system
  hubspoke certs rotate --force-ca --dry-run=client
  hubspoke certs rotate --context prod --renew-before 720h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.kube.add(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.opts.Namespace, "namespace", "n", deploy.DefaultNamespace, "namespace of the webhook")
	f.StringVar(&o.opts.Name, "name", deploy.DefaultName, "name of the webhook's Service (as given to deploy --name)")
	f.DurationVar(&o.opts.RenewBefore, "renew-before", rotate.DefaultRenewBefore, "renew the serving certificate when it expires within this")
	f.DurationVar(&o.opts.CARenewBefore, "ca-renew-before", rotate.DefaultCARenewBefore, "rotate the CA when it expires within this")
	f.BoolVar(&o.opts.Force, "force", false, "renew the serving certificate now")
	f.BoolVar(&o.opts.ForceCA, "force-ca", false, "rotate the CA (and the serving certificate) now")
	f.DurationVar(&o.opts.TrustWait, "trust-wait", rotate.DefaultTrustWait, "after the CRDs hold the new CA, wait this long before switching the serving certificate")
	f.DurationVar(&o.propagation, "propagation-wait", rotate.DefaultPropagationWait, "after the serving Secret changes, wait at most this long for every pod to serve it")
	f.StringVar(&o.dryRun, "dry-run", "none", `"client": print the steps that are due, change nothing`)
	return cmd
}

func (o *certsRotateOptions) run(cmd *cobra.Command) error {
	switch o.dryRun {
	case "none", "":
	case "client":
		o.opts.DryRun = true
	default:
		return usagef("certs rotate: --dry-run=%q: want none or client", o.dryRun)
	}
	if o.opts.TrustWait <= 0 || o.propagation <= 0 || o.opts.RenewBefore < 0 || o.opts.CARenewBefore < 0 {
		return usagef("certs rotate: --trust-wait and --propagation-wait must be positive, --renew-before and --ca-renew-before not negative")
	}
	cfg, err := o.kube.config()
	if err != nil {
		return err
	}
	var c rotate.Clients
	if c.Core, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if c.APIExtensions, err = apiextclient.NewForConfig(cfg); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	o.opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	o.opts.ServingWait = rotate.PodsServingWait(c, o.opts.Namespace, o.opts.Name, o.propagation, o.opts.Logger)
	res, err := rotate.Rotate(cmd.Context(), c, o.opts)
	out := cmd.OutOrStdout()
	if res != nil {
		verb := ""
		if o.opts.DryRun {
			verb = "(dry run) "
		}
		for _, s := range res.Steps {
			fmt.Fprintf(out, "%s%s: %s\n", verb, s.Name, s.Detail)
		}
		if err == nil && len(res.Steps) == 0 {
			fmt.Fprintf(out, "nothing due: the serving certificate and the CA are valid beyond --renew-before and --ca-renew-before (CRDs: %v)\n", res.CRDs)
		}
	}
	return err
}
