package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestMigrateCommandsExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"migrate without crd", []string{"migrate"}, exitUsage, "accepts 1 arg"},
		{"migrate bad output", []string{"migrate", "x.example.com", "-o", "yaml"}, exitUsage, `-o "yaml"`},
		{"migrate bad progress", []string{"migrate", "x.example.com", "--progress", "loud", "--kubeconfig", "nowhere"}, exitUsage, `--progress "loud"`},
		{"migrate without cluster", []string{"migrate", "x.example.com", "--kubeconfig", "nowhere.yaml"}, exitFail, "kubeconfig"},
		{"backup without -o", []string{"backup", "x.example.com"}, exitUsage, "-o FILE is required"},
		{"restore without -f", []string{"restore"}, exitUsage, "-f FILE is required"},
		{"restore missing file", []string{"restore", "-f", "missing.jsonl"}, exitFail, "missing.jsonl"},
		{"plan upgrade without crd", []string{"plan", "upgrade"}, exitUsage, "needs --crd"},
		{"plan upgrade unreadable crd", []string{"plan", "upgrade", "--crd", "missing.yaml"}, exitUsage, "missing.yaml"},
		{"plan rollback without --to", []string{"plan", "rollback", "x.example.com"}, exitUsage, "--to VERSION"},
		{"plan unknown", []string{"plan", "sideways"}, exitUsage, "want upgrade or rollback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.wantErr)
			}
		})
	}
}
