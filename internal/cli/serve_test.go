package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeExitCodes checks that `hubspoke serve` maps its errors onto the
// CLI's exit codes (the server itself is tested in internal/servecmd).
func TestServeExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: Conversion\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "help lists serve", args: []string{"--help"}, wantCode: exitOK},
		{name: "missing rules", args: []string{"serve", "--cert-dir", "x"}, wantCode: exitUsage, wantErr: "error: serve: --rules (or --watch-conversions) is required"},
		{name: "bad log format", args: []string{"serve", "--rules", bad, "--cert-dir", "x", "--log-format", "xml"}, wantCode: exitUsage, wantErr: `--log-format "xml"`},
		{name: "unknown flag", args: []string{"serve", "--nope"}, wantCode: exitUsage, wantErr: "unknown flag: --nope"},
		{name: "bad rules file", args: []string{"serve", "--rules", bad, "--cert-dir", "x"}, wantCode: exitFail, wantErr: "error: serve: " + bad},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr containing %q", code, stderr.String(), tc.wantCode, tc.wantErr)
			}
			if tc.name == "help lists serve" && !strings.Contains(stdout.String(), "serve ") {
				t.Errorf("help does not list serve:\n%s", stdout.String())
			}
		})
	}
}
