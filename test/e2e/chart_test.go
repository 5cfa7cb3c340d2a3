package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/internal/helmbin"
	"github.com/hubspoke/hubspoke/pki"
)

// TestChart renders charts/hubspoke with helm for several choices, checks
// that it holds exactly the objects `hubspoke deploy --operator` renders
// for the same choices (deploy.RenderPlatform, one source for both), and
// applies it to the sandbox with kubectl apply --dry-run=server
// --validate=strict.
func TestChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	helm, err := helmbin.Path(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm %s ready in %v", helmbin.Version, time.Since(start).Round(time.Millisecond))
	installStandInCRDs(t, ctx)
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "chart CA"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		ns     string
		values map[string]any
		opts   deploy.PlatformOptions
	}{
		{name: "defaults", ns: "hubspoke-chart", values: map[string]any{}, opts: deploy.PlatformOptions{}},
		{
			name: "every option", ns: "hubspoke-chart-all",
			values: map[string]any{
				"prefix": "conv", "replicas": 4, "maxRequestBytes": "128Mi", "port": 9443, "hostNetwork": true,
				"priorityClassName": "system-cluster-critical", "selector": "team=a",
				"image":         map[string]any{"webhook": "registry.example.com/webhook:v1", "operator": "registry.example.com/hubspoke:v1"},
				"networkPolicy": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true},
				"prometheusRule": map[string]any{"enabled": true}, "grafanaDashboard": map[string]any{"enabled": true},
			},
			opts: deploy.PlatformOptions{
				Prefix: "conv", Replicas: 4, MaxRequestBytes: 128 << 20, Port: 9443, HostNetwork: true,
				PriorityClassName: "system-cluster-critical", Selector: "team=a",
				WebhookImage: "registry.example.com/webhook:v1", OperatorImage: "registry.example.com/hubspoke:v1",
				NetworkPolicy: true, ServiceMonitor: true, PrometheusRule: true, GrafanaDashboard: true,
			},
		},
		{
			name: "hubspoke certificates on port 10250", ns: "hubspoke-chart-certs",
			values: map[string]any{"port": 10250, "certs": map[string]any{"mode": "hubspoke", "caBundle": string(ca.CertPEM)}},
			opts:   deploy.PlatformOptions{Port: 10250, Certs: deploy.Hubspoke, CA: ca},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered := helmTemplate(t, ctx, helm, tt.ns, tt.values)
			tt.opts.Namespace, tt.opts.NoNamespace = tt.ns, true
			objs, err := deploy.RenderPlatform(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := deploy.Unstructured(objs)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]map[string]any{}
			for _, m := range ms {
				if m["kind"] == "Secret" {
					continue // hubspoke mode: the chart takes the Secrets as existing
				}
				want[objectKey(m)] = m
			}
			got := map[string]map[string]any{}
			var manifest bytes.Buffer
			for _, doc := range splitYAML(rendered) {
				var m map[string]any
				if err := yaml.Unmarshal(doc, &m); err != nil {
					t.Fatalf("helm's output: %v\n%s", err, doc)
				}
				if m == nil {
					continue
				}
				got[objectKey(m)] = m
				manifest.WriteString("---\n")
				manifest.Write(doc)
				manifest.WriteString("\n")
			}
			if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
				t.Fatalf("objects (-deploy +chart):\n%s", diff)
			}
			for k := range want {
				if diff := cmp.Diff(want[k], got[k]); diff != "" {
					t.Errorf("%s (-deploy +chart):\n%s", k, diff)
				}
			}
			if err := sb.EnsureNamespace(ctx, tt.ns); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := kubectlRun(t, manifest.Bytes(), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			if code != 0 {
				t.Fatalf("kubectl apply --dry-run=server --validate=strict of the chart: exit %d\n%s%s", code, out, errOut)
			}
			if n := strings.Count(out, "(server dry run)"); n != len(got) {
				t.Errorf("%d objects applied in a server dry run, want %d:\n%s", n, len(got), out)
			}
		})
	}
	// A value out of the chart's schema is refused by helm, as deploy
	// refuses the option.
	for _, bad := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"replicas": 1}, "replicas"},
		{map[string]any{"hostNetwork": true, "port": 10250}, "port"},
		{map[string]any{"maxRequestBytes": "3Mi"}, "maxRequestBytes"},
		{map[string]any{"certs": map[string]any{"mode": "hubspoke"}}, "caBundle"},
	} {
		_, errOut, err := runHelmTemplate(ctx, helm, "hubspoke-chart", bad.values)
		if err == nil || !strings.Contains(errOut, bad.want) {
			t.Errorf("helm template with %v: %v, want refused naming %s:\n%s", bad.values, err, bad.want, errOut)
		}
	}
}

func helmTemplate(t *testing.T, ctx context.Context, helm, ns string, values map[string]any) []byte {
	t.Helper()
	out, errOut, err := runHelmTemplate(ctx, helm, ns, values)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, errOut)
	}
	return out
}

func runHelmTemplate(ctx context.Context, helm, ns string, values map[string]any) ([]byte, string, error) {
	dir, err := os.MkdirTemp("", "hubspoke-chart-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	vf := filepath.Join(dir, "values.json")
	b, _ := json.Marshal(values)
	if err := os.WriteFile(vf, b, 0o600); err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, helm, "template", "hubspoke", "../../charts/hubspoke", "--namespace", ns, "-f", vf)
	// helm's own state stays out of the user's home.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.String(), err
}

func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(b, []byte("\n---")) {
		d = bytes.TrimPrefix(bytes.TrimSpace(d), []byte("---"))
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func objectKey(m map[string]any) string {
	meta, _ := m["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v %v/%v", m["apiVersion"], m["kind"], meta["namespace"], meta["name"])
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// installStandInCRDs installs stand-ins for cert-manager's and the
// Prometheus Operator's CRDs (their kinds, spec kept as sent): the
// sandbox has neither, and a server dry run of the chart needs its
// kinds served.
func installStandInCRDs(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, c := range []struct{ group, kind, plural string }{
		{"cert-manager.io", "Issuer", "issuers"}, {"cert-manager.io", "Certificate", "certificates"},
		{"monitoring.coreos.com", "ServiceMonitor", "servicemonitors"}, {"monitoring.coreos.com", "PrometheusRule", "prometheusrules"},
	} {
		crd := &apiextv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: c.plural + "." + c.group},
			Spec: apiextv1.CustomResourceDefinitionSpec{
				Group: c.group, Scope: apiextv1.NamespaceScoped,
				Names: apiextv1.CustomResourceDefinitionNames{Kind: c.kind, Plural: c.plural, ListKind: c.kind + "List", Singular: strings.ToLower(c.kind)},
				Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextv1.JSONSchemaProps{
							"spec": {Type: "object", XPreserveUnknownFields: new(true)},
						},
					}}}},
			},
		}
		if _, err := sb.InstallCRD(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
}
