package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// kubectl runs the kubectl binary against the sandbox through the
// kubeconfig the sandbox wrote, as a user would.
func kubectl(t *testing.T, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not installed: %v", err)
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", sb.KubeconfigPath()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

func TestKubectl(t *testing.T) {
	manifest, err := os.ReadFile("../../examples/widget/widget-v1alpha1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifest = bytes.Replace(manifest, []byte("name: my-widget"), []byte("name: kubectl-widget"), 1)
	file := filepath.Join(t.TempDir(), "widget.yaml")
	if err := os.WriteFile(file, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", file)

	tests := []struct {
		resource string
		wantSpec map[string]any
	}{
		{"widgets.v1alpha1.example.com", map[string]any{"replicas": float64(3)}},
		{"widgets.v1.example.com", map[string]any{"size": float64(3)}},
	}
	for _, tc := range tests {
		t.Run(tc.resource, func(t *testing.T) {
			out := kubectl(t, "get", tc.resource, "kubectl-widget", "-n", "default", "-o", "yaml")
			var got struct {
				APIVersion string         `json:"apiVersion"`
				Metadata   map[string]any `json:"metadata"`
				Spec       map[string]any `json:"spec"`
			}
			if err := yaml.Unmarshal(out, &got); err != nil {
				t.Fatalf("kubectl output: %v\n%s", err, out)
			}
			if diff := cmp.Diff(tc.wantSpec, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"app": "demo"}, got.Metadata["labels"]); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubectlServerSideApplyAcrossVersions applies one Widget with kubectl
// apply --server-side through v1alpha1, then through v1 (hubspoke
// convert's output, piped), then through v1alpha1 again without its
// label, with the real hubspoke webhook converting. The API server's field
// manager converts the fields each apply owns, objects without metadata,
// through the webhook; the webhook's answer must carry metadata all the
// same, or every apply across versions fails ("failed to prune fields").
func TestKubectlServerSideApplyAcrossVersions(t *testing.T) {
	t.Parallel() // its own object, in the group no parallel test uses
	hubspokeWebhook(t)
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "conversion.yaml")
	rules := mustRead(t, "../../examples/widget/conversion.yaml")
	rules = strings.Replace(rules, "group: example.com", "group: "+realWidgets.group, 1)
	if err := os.WriteFile(rulesFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	manifest := mustRead(t, "../../examples/widget/widget-v1alpha1.yaml")
	manifest = strings.NewReplacer("example.com/", realWidgets.group+"/", "name: my-widget", "name: ssa", "namespace: default", "namespace: "+ns).Replace(manifest)
	v1alpha1File := filepath.Join(dir, "widget-v1alpha1.yaml")
	if err := os.WriteFile(v1alpha1File, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	apply := func(what string, stdin []byte, args ...string) {
		t.Helper()
		args = append([]string{"apply", "--server-side"}, args...)
		if out, stderr, code := kubectlRun(t, stdin, args...); code != 0 || !strings.Contains(out, "widget."+realWidgets.group+"/ssa serverside-applied") {
			t.Fatalf("kubectl %s (%s): exit %d\n%s%s", strings.Join(args, " "), what, code, out, stderr)
		}
	}
	get := func(version string) (spec, labels map[string]any, managed []any) {
		t.Helper()
		var got struct {
			Metadata struct {
				Labels        map[string]any `json:"labels"`
				ManagedFields []any          `json:"managedFields"`
			} `json:"metadata"`
			Spec map[string]any `json:"spec"`
		}
		out := kubectl(t, "get", "widgets."+version+"."+realWidgets.group, "ssa", "-n", ns, "-o", "json", "--show-managed-fields")
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("kubectl get: %v\n%s", err, out)
		}
		return got.Spec, got.Metadata.Labels, got.Metadata.ManagedFields
	}

	apply("v1alpha1", nil, "-f", v1alpha1File)

	// Through v1: hubspoke convert's output, as the README pipes it.
	converted := hubspokeCLI(t, "convert", "-f", v1alpha1File, "--to", realWidgets.group+"/v1", "--rules", rulesFile)
	apply("v1, from hubspoke convert", converted, "-f", "-")
	spec, labels, managed := get("v1")
	if diff := cmp.Diff(map[string]any{"size": float64(3)}, spec); diff != "" {
		t.Errorf("spec through v1 after the v1 apply (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"app": "demo"}, labels); diff != "" {
		t.Errorf("labels after the v1 apply (-want +got):\n%s", diff)
	}
	if len(managed) != 1 || managed[0].(map[string]any)["apiVersion"] != realWidgets.group+"/v1" {
		t.Errorf("managedFields after the v1 apply: %v, want kubectl's apply at v1", managed)
	}

	// Through v1alpha1 again, without the label: the apply owned it (at
	// v1), so the field manager prunes it across versions.
	relabelled := strings.NewReplacer("  labels:\n    app: demo\n", "", "replicas: 3", "replicas: 5").Replace(manifest)
	if relabelled == manifest || strings.Contains(relabelled, "app: demo") {
		t.Fatalf("the manifest did not change as the test expects:\n%s", relabelled)
	}
	apply("v1alpha1 without the label", []byte(relabelled), "-f", "-")
	spec, labels, _ = get("v1alpha1")
	if diff := cmp.Diff(map[string]any{"replicas": float64(5)}, spec); diff != "" {
		t.Errorf("spec through v1alpha1 after the last apply (-want +got):\n%s", diff)
	}
	if labels != nil {
		t.Errorf("labels after the apply that dropped them: %v, want none (pruned)", labels)
	}
	if spec, _, _ := get("v1"); !cmp.Equal(map[string]any{"size": float64(5)}, spec) {
		t.Errorf("spec through v1 after the last apply: %v, want size 5", spec)
	}
}
