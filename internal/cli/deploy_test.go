package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDeployExitCodes: a value deploy would refuse to render is a usage
// error (exit 2) found before any file is read; a directory is read as
// kubectl reads one, its files without CRDs left out.
func TestDeployExitCodes(t *testing.T) {
	crd, rules := "../../examples/widget/crd.yaml", "../../examples/widget/conversion.yaml"
	rows := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
		wantOut  string
	}{
		{name: "bad namespace", args: []string{"-n", "Bad_NS"}, wantCode: exitUsage, wantErr: `error: deploy: namespace "Bad_NS": a lowercase RFC 1123 label`},
		{name: "bad name", args: []string{"--name", "a.b"}, wantCode: exitUsage, wantErr: `error: deploy: name "a.b"`},
		{name: "negative shutdown delay", args: []string{"--shutdown-delay", "-5s"}, wantCode: exitUsage, wantErr: "shutdown delay must not be negative"},
		{name: "zero shutdown grace", args: []string{"--shutdown-grace", "-1s"}, wantCode: exitUsage, wantErr: "shutdown grace must be positive"},
		{name: "request limit under 1Mi", args: []string{"--max-request-bytes", "512Ki"}, wantCode: exitUsage, wantErr: "at least 1 MiB"},
		{name: "one replica", args: []string{"--replicas", "1"}, wantCode: exitUsage, wantErr: "at least 2"},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: exitUsage, wantErr: "unknown flag: --nope"},
		{name: "a directory", args: []string{"-f", "../../examples/widget"}, wantCode: exitOK, wantOut: "kind: CustomResourceDefinition"},
		{name: "a directory without CRDs", args: []string{"-f", "../../examples/widget/fixtures", "-R"}, wantCode: exitFail, wantErr: "no CustomResourceDefinition in the directory"},
		{name: "a file without a CRD", args: []string{"-f", rules}, wantCode: exitFail, wantErr: "no CustomResourceDefinition found"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"deploy", "--rules", rules}
			if !strings.HasPrefix(strings.Join(tc.args, " "), "-f ") {
				args = append(args, "-f", crd)
			}
			args = append(args, tc.args...)
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) || !strings.Contains(stdout.String(), tc.wantOut) {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr containing %q, stdout %q", code, stderr.String(), tc.wantCode, tc.wantErr, tc.wantOut)
			}
			if tc.wantCode != exitOK && stdout.Len() > 0 {
				t.Errorf("printed on a failure:\n%.300s", stdout.String())
			}
		})
	}
}
