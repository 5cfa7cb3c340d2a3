package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/internal/cli"
)

// Usage errors of explain and doctor exit 2; doctor's findings are tested
// in package doctor and test/e2e.
func TestExplainDoctorExitCodes(t *testing.T) {
	for _, row := range []struct {
		name string
		args []string
		want int
	}{
		{"explained", []string{"explain", "x509: certificate signed by unknown authority"}, 0},
		{"nothing recognised", []string{"explain", "all good"}, 1},
		{"nothing recognised, json", []string{"explain", "-o", "json", "all good"}, 1},
		{"bad output", []string{"explain", "-o", "wide", "x"}, 2},
		{"yaml", []string{"explain", "-o", "yaml", "x509: certificate signed by unknown authority"}, 0},
		{"empty message", []string{"explain", "  "}, 2},
		{"missing file", []string{"explain", "-f", "/nonexistent/log"}, 2},
		{"two messages", []string{"explain", "a", "b"}, 2},
		{"doctor without a CRD", []string{"doctor"}, 2},
		{"doctor bad output", []string{"doctor", "-o", "wide", "widgets.example.com"}, 2},
		{"doctor a name and --all", []string{"doctor", "--all", "widgets.example.com"}, 2},
		{"doctor --all with -f", []string{"doctor", "--all", "-f", "crd.yaml"}, 2},
		{"doctor zero timeout", []string{"doctor", "--timeout", "0s", "widgets.example.com"}, 2},
		{"doctor --all, unreachable cluster", []string{"doctor", "--all", "--kubeconfig", "testdata/unreachable.kubeconfig"}, 2},
		{"doctor missing kubeconfig", []string{"doctor", "--kubeconfig", "/nonexistent/config", "widgets.example.com"}, 2},
		{"doctor missing planned CRD", []string{"doctor", "-f", "/nonexistent/crd.yaml", "widgets.example.com"}, 2},
		{"doctor unreachable cluster", []string{"doctor", "--kubeconfig", "testdata/unreachable.kubeconfig", "widgets.example.com"}, 2},
	} {
		t.Run(row.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := cli.Main(context.Background(), row.args, strings.NewReader(""), &out, &errOut)
			if got != row.want {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", got, row.want, out.String(), errOut.String())
			}
		})
	}
}
