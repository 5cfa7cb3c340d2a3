package operatorcmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/exitcode"
)

// TestUsage: every bad command line is a usage error (exit 2) named on
// stderr, found before anything reaches a cluster.
func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad selector", []string{"--selector", "a==b==c"}, `--selector "a==b==c"`},
		{"admission without certificates", []string{"--admission-addr", ":9443"}, "--admission-addr needs --admission-cert-dir"},
		{"admission address without port", []string{"--admission-addr", "localhost", "--admission-cert-dir", "d"}, `--admission-addr "localhost": want HOST:PORT`},
		{"no check objects", []string{"--check-objects", "0"}, "--check-objects must be at least 1"},
		{"bad proxy", []string{"--pod-network-proxy", "ftp://x"}, "--pod-network-proxy: pod network proxy \"ftp://x\": want unix:///PATH or http://HOST:PORT"},
		{"bad log format", []string{"--log-format", "xml"}, `--log-format "xml"`},
		{"no cluster", []string{"--kubeconfig", "/nonexistent/kubeconfig"}, "no cluster configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := &cobra.Command{Use: "hubspoke", SilenceUsage: true, SilenceErrors: true}
			root.AddCommand(New())
			var stdout, stderr bytes.Buffer
			code := exitcode.Run(context.Background(), root, append([]string{"operator"}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if code != exitcode.Usage || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}
