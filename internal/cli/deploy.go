package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/rotate"
	"github.com/hubspoke/hubspoke/schema"
)

type deployOptions struct {
	crds, rules []string
	recursive   bool
	opts        deploy.Options
	certs       string
	maxRequest  string
	output      string
	previous    []string
	rolloutObjs int
	seed        uint64
	reuseCerts  bool
	validate    string
	kube        kubeFlags
	platform    platformFlags
}

// rolloutCheck is check's rolling-update safety (check.Rollout).
var rolloutCheck deploy.RolloutCheck

func newDeployCmd() *cobra.Command {
	o := &deployOptions{}
	cmd := &cobra.Command{
		Use:   "deploy -f CRD|DIR [-f CRD ...] --rules FILE [--rules FILE ...] [--certs cert-manager|hubspoke]",
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
                         "hubspoke certs rotate". Each run makes a new CA, so
                         to re-render a running deployment add --reuse-certs:
                         the certificates and caBundle are read from the
                         cluster (--kubeconfig, --context) and kept as they are.

With --previous-rules (the rule files the running pods serve), the new
rules are first compared with them on generated objects (check's
rolling-update safety): during a rollout the API server's requests reach old
and new pods at random, so a revision whose answers differ is refused
(exit 1, the differences on standard error, nothing on standard output).

Each CRD needs the rule file of its group and kind, covering every version,
and is validated with the API server's own code, as a create: a CRD it
would refuse prints nothing (--validate=warn prints the reasons and
renders, for a live CRD the API server keeps accepting as an update).
Nothing is printed unless everything rendered. One object per document, in
apply order; pipe to "kubectl apply -f -" or use as a kustomize base.
With --operator, deploy renders instead hubspoke run by its operator, the
objects of the Helm chart charts/hubspoke for the same choices: the
Conversion CRD, the operator (admission webhook, rollout) and a webhook
Deployment serving every Conversion object live; rules are then applied as
Conversion objects (kubectl apply -f conversion.yaml) and the operator
switches each CRD once every webhook pod serves its rules.
See docs/production.md.`,
		Example: `  hubspoke deploy -f examples/widget/crd.yaml --rules examples/widget/conversion.yaml | kubectl apply -f -
  hubspoke deploy -f crds/ -R --rules rules/widgets.yaml --rules rules/gadgets.yaml --certs hubspoke -n conversion
  hubspoke deploy -f crd.yaml --rules conversion.yaml --image registry.example.com/hubspoke-webhook:v1.2.0 > base/webhook.yaml
  hubspoke deploy --operator --service-monitor --prometheus-rule | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.crds, "filename", "f", nil, "CRD file (YAML or JSON, every CustomResourceDefinition in it) or directory (its .json, .yaml and .yml files that hold CRDs); repeat for several")
	f.BoolVarP(&o.recursive, "recursive", "R", false, "read the directories given with -f recursively")
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
	f.StringArrayVar(&o.previous, "previous-rules", nil, "rule file the running pods serve; the new rules must give the same answers")
	f.IntVar(&o.rolloutObjs, "rollout-objects", 200, "generated objects per version pair for the --previous-rules comparison")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the --previous-rules comparison (0: random)")
	f.BoolVar(&o.reuseCerts, "reuse-certs", false, "with --certs hubspoke: keep the certificates and caBundle the cluster holds")
	f.StringVar(&o.validate, "validate", "strict", "the API server's validation of each CRD: strict (or true) refuses a CRD it would refuse, warn prints the reasons and renders, ignore (or false) skips it")
	o.kube.add(cmd)
	o.platform.add(cmd)
	return cmd
}

func (o *deployOptions) run(cmd *cobra.Command) error {
	if o.platform.enabled {
		return o.runPlatform(cmd)
	}
	if err := o.platform.checkPlatformOnly(cmd); err != nil {
		return err
	}
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
	switch o.validate {
	case "strict", "true", "warn", "ignore", "false":
	default:
		return usagef("deploy: --validate %q: want strict (or true), warn, or ignore (or false)", o.validate)
	}
	if o.reuseCerts && o.opts.Certs != deploy.Hubspoke {
		return usagef("deploy: --reuse-certs is for --certs hubspoke (cert-manager keeps its own)")
	}
	// -n, --name, --replicas, --max-request-bytes, --shutdown-*: what
	// Render would refuse is a usage error, found before any file is read.
	if err := o.opts.Check(); err != nil {
		return usageError{err}
	}
	files, err := crdFiles(o.crds, o.recursive)
	if err != nil {
		return err
	}
	in, err := deploy.LoadInputs(files, o.rules, os.ReadFile)
	if err != nil {
		return err
	}
	if o.reuseCerts {
		if err := o.loadCerts(cmd); err != nil {
			return err
		}
	}
	if len(o.previous) > 0 {
		if err := o.checkRollout(cmd, in); err != nil {
			return err
		}
	}
	objs, err := deploy.Render(in, o.opts)
	if err != nil {
		return err
	}
	if o.validate != "ignore" && o.validate != "false" {
		if err := refusedCRDs(in, objs); err != nil {
			if o.validate != "warn" {
				return fmt.Errorf("deploy: the API server would refuse to create the CRD, so nothing is printed (--validate=warn renders it anyway):\n%w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Warning: the API server would refuse to create the CRD; rendered anyway (--validate=warn):\n%v\n", err)
		}
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

// crdFiles expands the directories among names into their .json, .yaml
// and .yml files that hold a CustomResourceDefinition (the others, such as
// rule files or objects, are left out), as kubectl -f DIR [-R] reads a
// directory; files named on their own are kept, so that one without a CRD
// is an error.
func crdFiles(names []string, recursive bool) ([]string, error) {
	var out []string
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		if !fi.IsDir() {
			out = append(out, name)
			continue
		}
		files, err := expandFiles([]string{name}, recursive)
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		n := len(out)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("deploy: %w", err)
			}
			crds, err := schema.LoadAll(f, data)
			if err != nil {
				return nil, fmt.Errorf("deploy: %w", err)
			}
			if len(crds) > 0 {
				out = append(out, f)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("deploy: %s: no CustomResourceDefinition in the directory's .json, .yaml and .yml files", name)
		}
	}
	return out, nil
}

// refusedCRDs returns an error naming every reason the API server would
// refuse to create a rendered CRD (the file's CRD with its conversion
// stanza), each at its line of the CRD's file: printed, such manifests
// would be applied all but the CRD, and kubectl would say so only after.
// It finds none when the binary lacks the API server's validation
// (APIValidation).
func refusedCRDs(in []deploy.Input, objs []any) error {
	if APIValidation.Create == nil {
		return nil
	}
	var errs []error
	for _, obj := range objs {
		c, ok := obj.(*apiextv1.CustomResourceDefinition)
		if !ok {
			continue
		}
		for _, input := range in {
			if input.CRD.Object.Name != c.Name {
				continue
			}
			for _, r := range APIValidation.Create(c) {
				errs = append(errs, fmt.Errorf("%s: %s: %s", input.CRD.Pos(r.Pointer), r.Field, r.Message))
			}
		}
	}
	return errors.Join(errs...)
}

// checkRollout refuses a revision whose conversion answers differently
// from the running one's.
func (o *deployOptions) checkRollout(cmd *cobra.Command, in []deploy.Input) error {
	if rolloutCheck == nil {
		return errors.New("deploy: --previous-rules: this build has no rolling-update check")
	}
	var prev []*rules.File
	for _, p := range o.previous {
		f, err := rules.ParseFile(p)
		if err != nil {
			return fmt.Errorf("deploy: previous rules: %w", err)
		}
		prev = append(prev, f)
	}
	report, err := deploy.CheckRollout(cmd.Context(), in, prev, rolloutCheck, check.Options{Objects: o.rolloutObjs, Seed: o.seed})
	if err != nil {
		return err
	}
	if report.Errors() > 0 {
		if err := report.WriteText(cmd.ErrOrStderr()); err != nil {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "deploy: refusing the new rules: during a rollout old and new pods would answer differently (above); nothing printed")
		return exitError{exitFail}
	}
	return nil
}

// loadCerts reads the running deployment's certificates and caBundle.
func (o *deployOptions) loadCerts(cmd *cobra.Command) error {
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
	st, err := rotate.Load(cmd.Context(), c, o.opts.Namespace, o.opts.Name)
	if err != nil {
		return fmt.Errorf("deploy: --reuse-certs: %w (for a first install, leave --reuse-certs out)", err)
	}
	o.opts.CA, o.opts.Serving, o.opts.CABundle = st.CA, st.Serving, st.CABundle
	return nil
}
