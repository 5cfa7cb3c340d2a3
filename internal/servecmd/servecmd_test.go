package servecmd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/internal/testcert"
)

// certDir writes a self-signed loopback certificate and returns the
// directory and the certificate's PEM.
func certDir(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	return dir, testcert.WriteLoopback(t, dir)
}

// TestServe runs the webhook command line on the examples, converts the
// sample review the docs use with curl, and stops it as SIGTERM would.
func TestServe(t *testing.T) {
	dir, crt := certDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logR, logW := io.Pipe()
	addrs := make(chan string, 1)
	var logs bytes.Buffer
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			logs.Write(sc.Bytes())
			logs.WriteByte('\n')
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving conversion webhook" {
				addrs <- rec.Addr
			}
		}
	}()
	code := make(chan int, 1)
	var stdout bytes.Buffer
	go func() {
		code <- Main(ctx, []string{"serve",
			"--rules", "../../examples/widget/conversion.yaml",
			"--rules", "../../examples/evolving-widget/conversion.yaml",
			"--cert-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug",
			"--shutdown-delay", "10ms", "--max-request-bytes", "1Mi",
		}, strings.NewReader(""), &stdout, logW)
		logW.Close()
	}()
	var addr string
	select {
	case addr = <-addrs:
	case c := <-code:
		<-logsDone
		t.Fatalf("exit %d before serving:\n%s", c, logs.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not serving after 20s")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	body, err := os.ReadFile("../../examples/widget/review-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Post("https://"+addr+"/convert", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"0f5c3b1e-7a8d-4a39-9d0e-5b6c2f1a9e11","convertedObjects":[` +
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"my-widget","namespace":"default","uid":"6d1f0f8e-3c1a-4a5e-9b1e-2f7f1f0b8c01","labels":{"app":"demo"}},"spec":{"size":3},"status":{"availableReplicas":2}}` +
		`],"result":{"status":"Success"}}}`
	var gotV, wantV any
	if err := json.Unmarshal(out, &gotV); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	if err := json.Unmarshal([]byte(want), &wantV); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantV, gotV); resp.StatusCode != 200 || diff != "" {
		t.Errorf("status %d, response (-want +got):\n%s", resp.StatusCode, diff)
	}
	// --max-request-bytes reaches the handler: a review padded to
	// exactly 1Mi is converted, one byte more is refused.
	for _, tc := range []struct {
		size, want int
	}{{1 << 20, 200}, {1<<20 + 1, 413}} {
		padded := append(bytes.TrimSpace(body), bytes.Repeat([]byte(" "), tc.size-len(bytes.TrimSpace(body)))...)
		resp, err := client.Post("https://"+addr+"/convert", "application/json", bytes.NewReader(padded))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("a review of %d bytes with --max-request-bytes 1Mi: status %d, want %d: %.200s", tc.size, resp.StatusCode, tc.want, msg)
		}
	}
	resp, err = client.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"hubspoke_conversion_reviews_total{", "hubspoke_webhook_certificate_expiry_timestamp_seconds ", "go_goroutines ", "process_cpu_seconds_total "} {
		if !bytes.Contains(metrics, []byte(m)) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	cancel()
	select {
	case c := <-code:
		<-logsDone
		if c != 0 {
			t.Errorf("exit %d after shutdown, want 0:\n%s", c, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not exit 20s after cancel")
	}
	for _, want := range []string{`"msg":"loaded rules"`, `"crd":"Widget.example.com"`, `"msg":"converted"`, `"uid":"0f5c3b1e-7a8d-4a39-9d0e-5b6c2f1a9e11"`, `"msg":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), `"replicas"`) {
		t.Errorf("logs hold object contents:\n%s", logs.String())
	}
}

func TestUsage(t *testing.T) {
	dir, _ := certDir(t)
	rules := "../../examples/widget/conversion.yaml"
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: hubspoke.dev/v1alpha1\nkind: Conversion\nspec:\n  group: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string // substring of stderr
		wantOut  string
	}{
		{name: "version", args: []string{"version"}, wantCode: 0, wantOut: "hubspoke-webhook "},
		{name: "no rules", args: []string{"serve", "--cert-dir", dir}, wantCode: 2, wantErr: "error: serve: --rules (or --watch-conversions) is required"},
		{name: "no cert dir", args: []string{"serve", "--rules", rules}, wantCode: 2, wantErr: "error: serve: --cert-dir is required"},
		{name: "bad log format", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--log-format", "xml"}, wantCode: 2, wantErr: `--log-format "xml": want text or json`},
		{name: "bad log level", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--log-level", "loud"}, wantCode: 2, wantErr: `--log-level "loud"`},
		{name: "bad size", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--max-request-bytes", "lots"}, wantCode: 2, wantErr: `--max-request-bytes: "lots" is not a positive size`},
		{name: "addr without port", args: []string{"serve", "--rules", rules, "--cert-dir", t.TempDir(), "--addr", "127.0.0.1"}, wantCode: 2, wantErr: `error: serve: --addr "127.0.0.1": want HOST:PORT (e.g. :8443 or 127.0.0.1:8443): address 127.0.0.1: missing port in address`},
		{name: "addr with a bad port", args: []string{"serve", "--rules", rules, "--cert-dir", t.TempDir(), "--addr", ":99999"}, wantCode: 2, wantErr: `--addr ":99999": want HOST:PORT with a port from 0 to 65535: address 99999: invalid port`},
		{name: "path without slash", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--path", "convert"}, wantCode: 2, wantErr: `error: serve: --path "convert": want an absolute path such as /convert`},
		{name: "path of the health endpoint", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--path", "/healthz"}, wantCode: 2, wantErr: `error: serve: --path "/healthz": /healthz is the server's own endpoint`},
		{name: "path of the metrics endpoint", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--path", "/metrics"}, wantCode: 2, wantErr: `--path "/metrics": /metrics is the server's own endpoint`},
		{name: "path with a method", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--path", "GET /x"}, wantCode: 2, wantErr: `--path "GET /x": want an absolute path`},
		{name: "path with a space", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--path", "/a b"}, wantCode: 2, wantErr: `--path "/a b": segment "a b"`},
		{name: "negative shutdown delay", args: []string{"serve", "--rules", rules, "--cert-dir", dir, "--shutdown-delay", "-5s"}, wantCode: 2, wantErr: "--shutdown-delay must not be negative"},
		{name: "unknown flag", args: []string{"serve", "--nope"}, wantCode: 2, wantErr: "unknown flag: --nope"},
		{name: "argument", args: []string{"serve", "x"}, wantCode: 2, wantErr: `unknown command "x"`},
		{name: "no such command", args: []string{"sandbox"}, wantCode: 2, wantErr: `unknown command "sandbox"`},
		{name: "bad rules file", args: []string{"serve", "--rules", bad, "--cert-dir", dir}, wantCode: 1, wantErr: "error: serve: " + bad + ":"},
		{name: "rules and watch", args: []string{"serve", "--rules", rules, "--watch-conversions", "--cert-dir", dir}, wantCode: 2, wantErr: "error: serve: --rules and --watch-conversions exclude each other"},
		{name: "selector without watch", args: []string{"serve", "--rules", rules, "--selector", "a=b", "--cert-dir", dir}, wantCode: 2, wantErr: "error: serve: --selector, --kubeconfig and --context need --watch-conversions"},
		{name: "bad selector", args: []string{"serve", "--watch-conversions", "-l", "a==b==c", "--cert-dir", dir}, wantCode: 2, wantErr: `error: serve: --selector "a==b==c": `},
		{name: "watch without a cluster", args: []string{"serve", "--watch-conversions", "--kubeconfig", "/nonexistent/kubeconfig", "--cert-dir", dir, "--addr", "127.0.0.1:0"}, wantCode: 1, wantErr: "error: serve: --watch-conversions: no cluster to watch"},
		{name: "missing certs", args: []string{"serve", "--rules", rules, "--cert-dir", t.TempDir(), "--addr", "127.0.0.1:0"}, wantCode: 1, wantErr: "error: server: reading certificate: open "},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) || !strings.HasPrefix(stdout.String(), tc.wantOut) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q..., stderr containing %q", code, stdout.String(), stderr.String(), tc.wantCode, tc.wantOut, tc.wantErr)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	rows := []struct {
		in   string
		want int64
	}{{"1", 1}, {"1048576", 1 << 20}, {"512Ki", 512 << 10}, {"128Mi", 128 << 20}, {"2Gi", 2 << 30}, {"0", 0}, {"-1", 0}, {"1Ti", 0}, {"Mi", 0}, {"1.5Mi", 0}}
	for _, tc := range rows {
		got, err := parseBytes(tc.in)
		if got != tc.want || (err != nil) != (tc.want == 0) {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
