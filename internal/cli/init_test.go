package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestInitAndLiveExitCodes: usage errors of init and of check's --live
// flags exit 2; a rule file printed exits 0, whatever its check found.
func TestInitAndLiveExitCodes(t *testing.T) {
	const ex = "../../examples/"
	tests := []struct {
		name    string
		args    []string
		want    int
		wantErr string
	}{
		{"init printed, check finds errors", []string{"init", "-f", ex + "cert-manager-certificate/crd.yaml", "--objects", "10", "--seed", "1"}, 0, "FAIL: "},
		{"init without a CRD", []string{"init"}, 2, "give the CRD"},
		{"init unknown hub", []string{"init", "-f", ex + "widget/crd.yaml", "--hub", "v3"}, 2, "--hub v3"},
		{"init unreadable file", []string{"init", "-f", "nowhere.yaml"}, 2, "load crd"},
		{"init no cluster", []string{"init", "widgets.example.com", "--kubeconfig", "testdata/unreachable.kubeconfig"}, 2, "read CustomResourceDefinition widgets.example.com"},
		{"live no cluster", []string{"check", "--rules", ex + "widget/conversion.yaml", "--live", "--kubeconfig", "testdata/unreachable.kubeconfig"}, 2, "--live: read CustomResourceDefinition widgets.example.com"},
		{"live bad page size", []string{"check", "--rules", ex + "widget/conversion.yaml", "--live", "--page-size", "0"}, 2, "--page-size must be at least 1"},
		{"live bad progress", []string{"check", "--rules", ex + "widget/conversion.yaml", "--live", "--progress", "bar"}, 2, `--progress "bar"`},
		{"live flag without live", []string{"check", "--rules", ex + "widget/conversion.yaml", "--crd", ex + "widget/crd.yaml", "-l", "a=b"}, 2, "--selector is a flag of --live"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
			if code != tt.want || !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("exit %d, want %d; stderr does not contain %q:\n%s", code, tt.want, tt.wantErr, errb.String())
			}
		})
	}
}
