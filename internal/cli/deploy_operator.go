package cli

import (
	"bytes"
	"encoding/json"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hubspoke/hubspoke/deploy"
)

// platformFlags are deploy's flags for --operator: hubspoke run by its
// operator, as the Helm chart charts/hubspoke renders it.
type platformFlags struct {
	enabled bool
	opts    deploy.PlatformOptions
}

func (p *platformFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&p.enabled, "operator", false, "render hubspoke run by its operator (Conversion objects served live; the Helm chart's objects) instead of a webhook for -f CRDs and --rules files")
	f.StringVar(&p.opts.Prefix, "prefix", deploy.DefaultPrefix, "with --operator: names PREFIX-webhook and PREFIX-operator")
	f.StringVar(&p.opts.OperatorImage, "operator-image", deploy.DefaultOperatorImage, "with --operator: the hubspoke image the operator runs")
	f.Int32Var(&p.opts.Port, "port", deploy.ContainerPort, "with --operator: the webhook's port in its pod (10250 for control planes that reach nodes only on 443 and 10250)")
	f.BoolVar(&p.opts.HostNetwork, "host-network", false, "with --operator: run the webhook in the nodes' network")
	f.StringVar(&p.opts.PriorityClassName, "priority-class-name", "", "with --operator: the webhook pods' priority class")
	f.StringVar(&p.opts.Selector, "selector", "", "with --operator: serve only the Conversions matching this label selector")
	f.BoolVar(&p.opts.NetworkPolicy, "network-policy", false, "with --operator: NetworkPolicies admitting only the HTTPS and metrics ports")
	f.BoolVar(&p.opts.ServiceMonitor, "service-monitor", false, "with --operator: ServiceMonitors (Prometheus Operator)")
	f.BoolVar(&p.opts.PrometheusRule, "prometheus-rule", false, "with --operator: the alerts of docs/production.md as a PrometheusRule")
	f.BoolVar(&p.opts.GrafanaDashboard, "grafana-dashboard", false, "with --operator: a Grafana dashboard ConfigMap (label grafana_dashboard)")
}

// runPlatform renders --operator.
func (o *deployOptions) runPlatform(cmd *cobra.Command) error {
	for _, name := range []string{"filename", "rules", "previous-rules", "reuse-certs", "name", "shutdown-delay", "shutdown-grace"} {
		if cmd.Flags().Changed(name) {
			return usagef("deploy: --%s does not go with --operator: the rules are Conversion objects (kubectl apply -f conversion.yaml), the CRDs yours, and the operator switches each CRD once every webhook pod serves its Conversion", name)
		}
	}
	if o.output != "yaml" && o.output != "json" {
		return usagef("deploy: -o %q: want yaml or json", o.output)
	}
	p := o.platform.opts
	p.Namespace, p.WebhookImage, p.Replicas = o.opts.Namespace, o.opts.Image, o.opts.Replicas
	p.Certs = deploy.CertMode(o.certs)
	q, err := resource.ParseQuantity(o.maxRequest)
	if err != nil || q.Sign() <= 0 {
		return usagef("deploy: --max-request-bytes %q: want a positive size such as 33554432 or 32Mi", o.maxRequest)
	}
	p.MaxRequestBytes = q.Value()
	objs, err := deploy.RenderPlatform(p)
	if err != nil {
		return usageError{err}
	}
	var b bytes.Buffer
	if o.output == "json" {
		items, err := deploy.Unstructured(objs)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}); err != nil {
			return err
		}
	} else if err := deploy.WriteYAML(&b, objs); err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(b.Bytes())
	return err
}

// checkPlatformOnly refuses --operator's own flags without it.
func (p *platformFlags) checkPlatformOnly(cmd *cobra.Command) error {
	for _, name := range []string{"prefix", "operator-image", "port", "host-network", "priority-class-name", "selector", "network-policy", "service-monitor", "prometheus-rule", "grafana-dashboard"} {
		if cmd.Flags().Changed(name) {
			return usagef("deploy: --%s needs --operator", name)
		}
	}
	return nil
}
