package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
)

func TestCheckCommand(t *testing.T) {
	const ex = "../../examples/widget/"
	broken := filepath.Join(t.TempDir(), "crd.yaml")
	b, err := os.ReadFile(ex + "crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// v1 (the hub) now needs size >= 1 while v1alpha1 accepts replicas 0.
	s := strings.Replace(string(b), "size:\n                type: integer\n                format: int32\n                minimum: 0", "size:\n                type: integer\n                format: int32\n                minimum: 1", 1)
	if s == string(b) {
		t.Fatal("edit of the widget CRD did not apply")
	}
	if err := os.WriteFile(broken, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := webhookServer(t)
	// The deployed rules of evolving-widget rounded durations up for
	// v1alpha1; the new ones refuse what is not whole seconds.
	const ew = "../../examples/evolving-widget/"
	oldRules := filepath.Join(t.TempDir(), "old.yaml")
	rb, err := os.ReadFile(ew + "conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs := strings.Replace(string(rb), "unit: s, round: reject", "unit: s, round: ceil", 1)
	if rs == string(rb) {
		t.Fatal("edit of the evolving-widget rules did not apply")
	}
	if err := os.WriteFile(oldRules, []byte(rs), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{
			name:     "clean",
			args:     []string{"--crd", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "--objects", "50", "--seed", "1"},
			wantCode: 0,
			wantOut:  []string{"ok: 0 errors"},
		},
		{
			name:     "violation",
			args:     []string{"--crd", broken, "--rules", ex + "conversion.yaml", "--objects", "50", "--seed", "1", "--shrink-time", "1s"},
			wantCode: 1,
			wantOut:  []string{"v1alpha1 -> v1:", "domain /spec/replicas -> /spec/size", "(v1alpha1: minimum 0; v1: minimum 1)", "FAIL:"},
		},
		{
			name:     "json",
			args:     []string{"--crd", broken, "--rules", ex + "conversion.yaml", "--objects", "0", "-o", "json"},
			wantCode: 1,
			wantOut:  []string{`"fromConstraint": "minimum 0"`, `"ok": false`},
		},
		{
			name:     "fixtures",
			args:     []string{"--rules", "../../examples/evolving-widget/conversion.yaml", "--fixtures", "../../examples/evolving-widget/fixtures"},
			wantCode: 0,
			wantOut:  []string{"fixtures)"},
		},
		{
			name:     "webhook",
			args:     []string{"--crd", ex + "crd.yaml", "--webhook", hook.url, "--ca-file", hook.ca, "--objects", "20", "--seed", "1"},
			wantCode: 0,
			wantOut:  []string{"ok: 0 errors"},
		},
		{name: "webhook without crd", args: []string{"--webhook", hook.url}, wantCode: 2, wantErr: "--webhook needs --crd"},
		{name: "webhook with a bad review version", args: []string{"--crd", ex + "crd.yaml", "--webhook", hook.url, "--review-version", "v2"}, wantCode: 2, wantErr: "review version"},
		{
			name:     "previous revision",
			args:     []string{"--crd", broken, "--previous", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "--objects", "0"},
			wantCode: 1,
			wantOut:  []string{"field-tightened /spec/size", "(v1: minimum 0; v1: minimum 1)"},
		},
		{
			name:     "previous revision without rules",
			args:     []string{"--crd", broken, "--previous", ex + "crd.yaml"},
			wantCode: 1,
			wantOut:  []string{"field-tightened /spec/size", "(v1: minimum 0; v1: minimum 1)"},
		},
		{
			name:     "ignored difference",
			args:     []string{"--crd", broken, "--rules", ex + "conversion.yaml", "--objects", "0", "--ignore", "/spec/replicas=size 0 is never used"},
			wantCode: 0,
			wantOut:  []string{"ignored /spec/replicas (size 0 is never used): 1 findings", "ok: 0 errors"},
		},
		{
			name:     "rollout from old rules",
			args:     []string{"--crd", ew + "crd.yaml", "--rules", ew + "conversion.yaml", "--previous-rules", oldRules, "--laws", "rollout-agreement", "--objects", "100", "--seed", "1", "--shrink-time", "1s"},
			wantCode: 1,
			wantOut:  []string{"v1 -> v1alpha1:", "error   rollout-agreement: the new conversion fails where the old one succeeds"},
		},
		{
			name:     "rollout to the same rules",
			args:     []string{"--crd", ew + "crd.yaml", "--rules", ew + "conversion.yaml", "--previous-rules", ew + "conversion.yaml", "--laws", "rollout-agreement", "--objects", "50", "--seed", "1"},
			wantCode: 0,
			wantOut:  []string{"ok: 0 errors"},
		},
		{
			name:     "rollout between two webhooks",
			args:     []string{"--crd", ex + "crd.yaml", "--webhook", hook.url, "--webhook", hook.url, "--ca-file", hook.ca, "--laws", "rollout-agreement", "--objects", "20", "--seed", "1"},
			wantCode: 0,
			wantOut:  []string{"ok: 0 errors", "2 law runs on 40 generated objects"},
		},
		{name: "webhook without a scheme", args: []string{"--crd", ex + "crd.yaml", "--webhook", "localhost:8443"}, wantCode: 2, wantErr: `--webhook "localhost:8443": want an https URL such as https://127.0.0.1:8443/convert`},
		{name: "webhook over http", args: []string{"--crd", ex + "crd.yaml", "--webhook", "http://127.0.0.1:8443/convert"}, wantCode: 2, wantErr: "want an https URL"},
		{
			name:     "yaml",
			args:     []string{"--crd", broken, "--rules", ex + "conversion.yaml", "--objects", "0", "-o", "yaml"},
			wantCode: 1,
			wantOut:  []string{"ok: false\nerrors: 1\n", "  fromConstraint: minimum 0\n"},
		},
		{name: "negative shrink time", args: []string{"--crd", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "--shrink-time", "-1s"}, wantCode: 2, wantErr: "--shrink-time must not be negative"},
		{name: "no findings printed", args: []string{"--crd", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "--max-findings", "0"}, wantCode: 2, wantErr: "--max-findings 0: want 1 or more"},
		{name: "unknown law", args: []string{"--crd", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "--laws", "nope"}, wantCode: 2, wantErr: `unknown law "nope"`},
		{name: "ignore without reason", args: []string{"--crd", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "--ignore", "/spec"}, wantCode: 2, wantErr: "want POINTER=REASON"},
		{name: "three webhooks", args: []string{"--crd", ex + "crd.yaml", "--webhook", "a", "--webhook", "b", "--webhook", "c"}, wantCode: 2, wantErr: "--webhook given 3 times"},
		{name: "previous without crd", args: []string{"--rules", ex + "conversion.yaml", "--fixtures", "x", "--previous", ex + "crd.yaml"}, wantCode: 2, wantErr: "--previous needs --crd"},
		{name: "no rules", args: []string{"--crd", ex + "crd.yaml"}, wantCode: 2, wantErr: "no rules"},
		{name: "nothing to check", args: []string{"--rules", ex + "conversion.yaml"}, wantCode: 2, wantErr: "nothing to check"},
		{name: "bad output", args: []string{"--crd", ex + "crd.yaml", "--rules", ex + "conversion.yaml", "-o", "xml"}, wantCode: 2, wantErr: "unknown output format"},
		{name: "missing crd file", args: []string{"--crd", "nope.yaml", "--rules", ex + "conversion.yaml"}, wantCode: 2, wantErr: "load crd"},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: 2, wantErr: "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), append([]string{"check"}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if tt.wantErr != "" && !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
			}
			if strings.Contains(strings.Join(tt.args, " "), "-o json") {
				var v map[string]any
				if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
					t.Errorf("json output does not parse: %v", err)
				}
			}
		})
	}
}

type hookInfo struct{ url, ca string }

// webhookServer serves hubspoke's own webhook handler for the widget
// example over TLS and writes its CA certificate to a file.
func webhookServer(t *testing.T) hookInfo {
	t.Helper()
	conv, err := rules.LoadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return hookInfo{url: srv.URL + "/convert", ca: ca}
}

// TestLawProgress: on a terminal, check shows the law run under way on one
// line, rewritten in place and cleared at the end.
func TestLawProgress(t *testing.T) {
	var b bytes.Buffer
	p := lawProgress(&b)
	p(check.LawProgress{Law: check.LawSpokeRoundTrip, From: "v1alpha1", To: "v1", Done: 0, Total: 4})
	p(check.LawProgress{Law: check.LawDeterminism, From: "v1", To: "v1alpha1", Done: 3, Total: 4})
	p(check.LawProgress{Done: 4, Total: 4})
	want := "\r\x1b[Kchecking: law 1/4, spoke-hub-spoke v1alpha1 -> v1 (0s)\r\x1b[Kchecking: law 4/4, determinism v1 -> v1alpha1 (0s)\r\x1b[K"
	if b.String() != want {
		t.Errorf("progress %q, want %q", b.String(), want)
	}
	if isTerminal(&b) {
		t.Error("a buffer is not a terminal")
	}
}
