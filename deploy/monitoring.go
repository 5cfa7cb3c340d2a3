package deploy

import (
	_ "embed"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// alert is one alerting rule of the webhook (docs/production.md lists
// them, generated from here: TestAlertsInDocs).
type alert struct {
	name, expr, forDuration, severity, summary, description string
}

// alerts of a webhook deployment named NAME (the deployment in the
// replicas alert).
func alerts(name string) []alert {
	return []alert{
		{name: "ConversionWebhookCallsFailing",
			expr:        `sum by (failure_type) (rate(apiserver_conversion_webhook_request_total{result="failure"}[5m])) > 0`,
			forDuration: "2m", severity: "critical",
			summary:     "Conversion webhook calls fail ({{ $labels.failure_type }})",
			description: "Run hubspoke doctor CRD-NAME; hubspoke explain 'MESSAGE' translates the error users see."},
		{name: "ConversionWebhookRefusing",
			expr:        `sum by (crd) (rate(hubspoke_conversion_reviews_total{result!="success"}[5m])) > 0`,
			forDuration: "5m", severity: "warning",
			summary: "hubspoke refuses conversions of {{ $labels.crd }}"},
		{name: "ConversionWebhookSelfCheckFailures",
			expr:     `increase(hubspoke_conversion_self_check_failures_total[15m]) > 0`,
			severity: "critical",
			summary:  "A rule produced an object the API server would reject ({{ $labels.crd }})"},
		{name: "ConversionWebhookSlow",
			expr:        `histogram_quantile(0.99, sum by (le, crd) (rate(hubspoke_conversion_review_duration_seconds_bucket[5m]))) > 5`,
			forDuration: "10m", severity: "warning",
			summary: "p99 conversion time of {{ $labels.crd }} above 5 s (the API server gives up at 30 s)"},
		{name: "ConversionWebhookRequestTooLarge",
			expr:     `increase(hubspoke_conversion_bad_requests_total{code="413"}[15m]) > 0`,
			severity: "critical",
			summary:  "Reviews larger than --max-request-bytes are refused: raise it (and the memory limit)"},
		{name: "ConversionWebhookCertificateExpiresSoon",
			expr:     `min(hubspoke_webhook_certificate_expiry_timestamp_seconds) - time() < 14 * 86400`,
			severity: "warning",
			summary:  "The webhook's serving certificate expires within 14 days: is renewal (cert-manager, hubspoke certs rotate) running?"},
		{name: "ConversionWebhookCertificateReloadFailing",
			expr:        `increase(hubspoke_webhook_certificate_reloads_total{result="failure"}[15m]) > 0`,
			forDuration: "15m", severity: "warning",
			summary: "A pod keeps its old certificate: the Secret does not load"},
		{name: "ConversionLoadFailing",
			expr:        `increase(hubspoke_conversion_loads_total{result="failure"}[15m]) > 0`,
			forDuration: "5m", severity: "warning",
			summary:     "A Conversion object does not load in a webhook pod, which keeps serving its last good generation",
			description: "kubectl get conversions shows which (Serving=False, ReplicaLoadFailed, with the reason)."},
		{name: "ConversionWebhookReplicasUnavailable",
			expr:        `kube_deployment_status_replicas_available{deployment="` + name + `"} < 2`,
			forDuration: "5m", severity: "critical",
			summary: "Fewer than two webhook pods available: one more failure makes the CRDs unavailable"},
	}
}

// PrometheusRule returns the webhook's alerts as a Prometheus Operator
// PrometheusRule in namespace, for the webhook Deployment named name.
func PrometheusRule(namespace, name string, labels map[string]string) map[string]any {
	var rules []any
	for _, a := range alerts(name) {
		r := map[string]any{
			"alert":  a.name,
			"expr":   a.expr,
			"labels": map[string]any{"severity": a.severity},
		}
		ann := map[string]any{"summary": a.summary}
		if a.description != "" {
			ann["description"] = a.description
		}
		r["annotations"] = ann
		if a.forDuration != "" {
			r["for"] = a.forDuration
		}
		rules = append(rules, r)
	}
	meta := map[string]any{"name": name, "namespace": namespace}
	if len(labels) > 0 {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		meta["labels"] = l
	}
	return map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   meta,
		"spec":       map[string]any{"groups": []any{map[string]any{"name": name, "rules": rules}}},
	}
}

// dashboardJSON is the Grafana dashboard of hubspoke's metrics.
//
//go:embed dashboard.json
var dashboardJSON string

// DashboardLabel marks ConfigMaps that Grafana's dashboard sidecar loads.
const DashboardLabel = "grafana_dashboard"

func (p platform) dashboard() *corev1.ConfigMap {
	meta := p.hook.meta(p.hook.name + "-dashboard")
	meta.Labels = mergeLabels(meta.Labels, map[string]string{DashboardLabel: "1"})
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
		Data:       map[string]string{"hubspoke.json": strings.TrimSpace(dashboardJSON) + "\n"},
	}
}
