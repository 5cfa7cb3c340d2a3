package cli

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hubspoke/hubspoke/deploy"
)

type deployOptions struct {
	crds, rules []string
	opts        deploy.Options
	certs       string
	maxRequest  string
	output      string
}

func newDeployCmd() *cobra.Command {
	o := &deployOptions{}
	cmd := &cobra.Command{
		Use:   "deploy -f CRD [-f CRD ...] --rules FILE [--rules FILE ...] [--certs cert-manager|hubspoke]",
		Short: "Print the manifests that run the conversion webhook for the CRDs",
		Long: `Deploy prints, as YAML on standard output, everything a cluster needs to
convert the given CRDs with hubspoke's webhook: the Namespace, a
ServiceAccount, the rules in a ConfigMap, a Deployment of the slim webhook
image (restricted pod security, probes on /readyz and /healthz, spread over
nodes and zones, memory sized for --max-request-bytes, a termination grace
period covering the drain), a PodDisruptionBudget, the Service, the
certificates, and each CRD with spec.conversion pointing at the Service.

  --certs cert-manager   Issuers and Certificates for cert-manager; its
                         cainjector fills each CRD's caBundle
                         (cert-manager.io/inject-ca-from).
  --certs hubspoke       a CA and a serving certificate made now, in Secrets,
                         the CA in each CRD's caBundle. Renew them with
                         "hubspoke certs rotate". Running deploy again makes a
                         new CA: apply its output only for a first install.

Each CRD needs the rule file of its group and kind, covering every version.
Nothing is printed unless everything rendered. One object per document, in
apply order; pipe to "kubectl apply -f -" or use as a kustomize base.
See docs/production.md.`,
		Example: `  hubspoke deploy -f examples/widget/crd.yaml --rules examples/widget/conversion.yaml | kubectl apply -f -
  hubspoke deploy -f crds/ --rules rules/widgets.yaml --rules rules/gadgets.yaml --certs hubspoke -n conversion
  hubspoke deploy -f crd.yaml --rules conversion.yaml --image registry.example.com/hubspoke-webhook:v1.2.0 > base/webhook.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.crds, "filename", "f", nil, "CRD file (YAML or JSON); repeat for several")
	f.StringArrayVar(&o.rules, "rules", nil, "rule file (hubspoke.dev/v1alpha1 Conversion); one per CRD")
	f.StringVar(&o.certs, "certs", string(deploy.CertManager), "who issues the serving certificate: cert-manager or hubspoke")
	f.StringVarP(&o.opts.Namespace, "namespace", "n", deploy.DefaultNamespace, "namespace of the webhook")
	f.StringVar(&o.opts.Name, "name", deploy.DefaultName, "name of the Service, Deployment and the rest")
	f.StringVar(&o.opts.Image, "image", deploy.DefaultImage, "the webhook image (cmd/hubspoke-webhook)")
	f.Int32Var(&o.opts.Replicas, "replicas", deploy.DefaultReplicas, "webhook pods (at least 2)")
	f.StringVar(&o.maxRequest, "max-request-bytes", "32Mi", "largest ConversionReview accepted; memory is sized from it")
	f.DurationVar(&o.opts.ShutdownDelay, "shutdown-delay", deploy.DefaultShutdownDelay, "after SIGTERM, how long a pod serves while unready")
	f.DurationVar(&o.opts.ShutdownGrace, "shutdown-grace", deploy.DefaultShutdownGrace, "then, how long in-flight reviews may take")
	f.StringVarP(&o.output, "output", "o", "yaml", "yaml (documents) or json (a v1 List)")
	return cmd
}

func (o *deployOptions) run(cmd *cobra.Command) error {
	if len(o.crds) == 0 {
		return usagef("deploy: no CRD: give one with -f")
	}
	if len(o.rules) == 0 {
		return usagef("deploy: no rule file: give one per CRD with --rules")
	}
	if o.output != "yaml" && o.output != "json" {
		return usagef("deploy: -o %q: want yaml or json", o.output)
	}
	if o.certs != string(deploy.CertManager) && o.certs != string(deploy.Hubspoke) {
		return usagef("deploy: --certs %q: want cert-manager or hubspoke", o.certs)
	}
	o.opts.Certs = deploy.CertMode(o.certs)
	q, err := resource.ParseQuantity(o.maxRequest)
	if err != nil || q.Sign() <= 0 {
		return usagef("deploy: --max-request-bytes %q: want a positive size such as 33554432 or 32Mi", o.maxRequest)
	}
	o.opts.MaxRequestBytes = q.Value()
	if o.opts.Replicas < 2 {
		return usagef("deploy: --replicas %d: at least 2, or every restart of the webhook makes the CRDs unavailable", o.opts.Replicas)
	}
	in, err := deploy.LoadInputs(o.crds, o.rules, os.ReadFile)
	if err != nil {
		return err
	}
	objs, err := deploy.Render(in, o.opts)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if o.output == "json" {
		items, err := deploy.Unstructured(objs)
		if err != nil {
			return err
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return err
		}
	} else if err := deploy.WriteYAML(&b, objs); err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(b.Bytes())
	return err
}
