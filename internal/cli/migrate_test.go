package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/migrate"
)

func TestMigrateCommandsExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"migrate without crd", []string{"migrate"}, exitUsage, "accepts 1 arg"},
		{"migrate bad output", []string{"migrate", "x.example.com", "-o", "wide"}, exitUsage, `-o "wide": want text, json or yaml`},
		{"migrate bad progress", []string{"migrate", "x.example.com", "--progress", "loud", "--kubeconfig", "nowhere"}, exitUsage, `--progress "loud"`},
		{"migrate without kubeconfig file", []string{"migrate", "x.example.com", "--kubeconfig", "nowhere.yaml"}, exitUsage, "nowhere.yaml"},
		{"migrate -n and -A", []string{"migrate", "x.example.com", "-n", "a", "-A"}, exitUsage, "-n a and -A (--all-namespaces) exclude each other"},
		{"migrate bad dry-run", []string{"migrate", "x.example.com", "--dry-run=maybe"}, exitUsage, `--dry-run "maybe": want none, client or server`},
		{"backup without --file", []string{"backup", "x.example.com"}, exitUsage, "--file FILE is required"},
		{"backup -o is a format", []string{"backup", "x.example.com", "--file", "b.jsonl", "-o", "b.jsonl"}, exitUsage, `-o "b.jsonl": want text, json or yaml (the backup file is --file)`},
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

// TestMigrateReportDryRun: a dry run's report says what it counted, and
// never "rewritten" for objects only accepted (the line docs/migrate.md
// shows).
func TestMigrateReportDryRun(t *testing.T) {
	res := &migrate.Result{CRD: "widgets.example.com", StorageVersion: "v1", Elapsed: 31 * time.Millisecond,
		Progress: migrate.Progress{Total: 4, Done: 4, Accepted: 4}, PruneMessage: "dry run: nothing pruned"}
	var b strings.Builder
	if err := writeMigrateReport(&b, "text", res, nil); err != nil {
		t.Fatal(err)
	}
	want := "widgets.example.com: 4 objects at storage version v1 in 31ms (129/s): 0 rewritten, 0 already current, 0 deleted meanwhile, 4 accepted by a dry run (rewritten by the real run if stored at another version than v1)\ndry run: nothing pruned\n"
	if b.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestRunCheckReasons: the plan's check gate lists check's errors, each
// with its version pair, pointer and file:line, not only a count.
func TestRunCheckReasons(t *testing.T) {
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	rulesText := "apiVersion: hubspoke.dev/v1alpha1\nkind: Conversion\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  kind: Widget\n  hub: v1\n  spokes:\n  - version: v1alpha1\n    rules:\n    - rename: {from: spec.replicaz, to: spec.size}\n"
	if err := os.WriteFile(rulesFile, []byte(rulesText), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runCheck(context.Background(), "../../examples/widget/crd.yaml", nil, rulesFile)
	var ge *migrate.GateError
	if !errors.As(err, &ge) {
		t.Fatalf("runCheck = %v, want a *migrate.GateError", err)
	}
	want := "v1alpha1: error   rule-path /spec/replicaz: rule rename /spec/replicaz -> /spec/size names a field that does not exist in v1alpha1"
	found := false
	for _, r := range ge.Reasons {
		found = found || strings.HasPrefix(r, want) && strings.HasSuffix(r, "["+rulesFile+":11]")
	}
	if !found {
		t.Errorf("reasons %q\nwant one starting %q and naming %s:11", ge.Reasons, want, rulesFile)
	}
	if !strings.Contains(ge.Summary, "hubspoke check --crd ../../examples/widget/crd.yaml --rules "+rulesFile) {
		t.Errorf("summary %q", ge.Summary)
	}
}
