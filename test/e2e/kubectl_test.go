package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
