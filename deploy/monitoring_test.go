package deploy_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/deploy"
)

// TestAlertsInDocs: the PrometheusRule in docs/production.md is the one
// deploy and the chart render (go test -update rewrites the docs' block).
func TestAlertsInDocs(t *testing.T) {
	const path = "../docs/production.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const intro = "Alerts (a PrometheusRule for the Prometheus Operator; adjust the windows):\n\n```yaml\n"
	start := bytes.Index(doc, []byte(intro))
	if start < 0 {
		t.Fatalf("%s: no alerts block after %q", path, intro)
	}
	start += len(intro)
	end := start + bytes.Index(doc[start:], []byte("```\n"))
	rule := deploy.PrometheusRule(deploy.DefaultNamespace, deploy.DefaultName, nil)
	want, err := yaml.Marshal(rule)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		out := append(append(append([]byte{}, doc[:start]...), want...), doc[end:]...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var got, exp map[string]any
	if err := yaml.Unmarshal(doc[start:end], &got); err != nil {
		t.Fatalf("%s: the alerts block: %v", path, err)
	}
	if err := yaml.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exp, got); diff != "" {
		t.Errorf("%s's alerts differ from deploy's (-deploy +docs; go test -update rewrites the docs):\n%s", path, diff)
	}
	if !strings.Contains(string(doc[start:end]), "ConversionWebhookCallsFailing") {
		t.Error("the docs' block lost its alerts")
	}
}
