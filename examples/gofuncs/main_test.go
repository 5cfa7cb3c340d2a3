package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/internal/testcert"
)

// build compiles this example program, as its README says to.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "runner-webhook")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func fixture(t *testing.T, name, file string) any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("fixtures", name, file))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBinary builds the program and runs every subcommand a user runs:
// check (with the funcs in the loop), convert offline, and serve over real
// TLS, converting a ConversionReview.
func TestBinary(t *testing.T) {
	bin := build(t)

	t.Run("check", func(t *testing.T) {
		out, err := exec.Command(bin, "check", "--crd", "crd.yaml", "--rules", "conversion.yaml", "--fixtures", "fixtures", "--objects", "200", "--seed", "1").CombinedOutput()
		if err != nil {
			t.Fatalf("check: %v\n%s", err, out)
		}
		if !strings.HasPrefix(string(out), "ok: 0 errors, 0 warnings") {
			t.Errorf("check output:\n%s", out)
		}
	})

	t.Run("convert", func(t *testing.T) {
		out, err := exec.Command(bin, "convert", "-f", "fixtures/v1alpha1-unknown-flag-to-v1/input.yaml", "--to", "v1", "--rules", "conversion.yaml", "-o", "json").Output()
		if err != nil {
			t.Fatalf("convert: %v", err)
		}
		var got any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if diff := cmp.Diff(fixture(t, "v1alpha1-unknown-flag-to-v1", "expected.yaml"), got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("serve", func(t *testing.T) {
		dir := t.TempDir()
		crt := testcert.WriteLoopback(t, dir)
		cmd := exec.Command(bin, "serve", "--rules", "conversion.yaml", "--cert-dir", dir,
			"--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-delay", "10ms")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		addrs := make(chan string, 1)
		var logs bytes.Buffer
		logsDone := make(chan struct{})
		go func() {
			defer close(logsDone)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				logs.Write(sc.Bytes())
				logs.WriteByte('\n')
				var rec struct{ Msg, Addr string }
				if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving conversion webhook" {
					addrs <- rec.Addr
				}
			}
		}()
		var addr string
		select {
		case addr = <-addrs:
		case <-logsDone:
			t.Fatalf("exited before serving:\n%s", logs.String())
		case <-time.After(30 * time.Second):
			t.Fatal("not serving after 30s")
		}

		in := fixture(t, "v1alpha1-to-v1", "input.yaml").(map[string]any)
		in["metadata"].(map[string]any)["uid"] = "6d1f0f8e-3c1a-4a5e-9b1e-2f7f1f0b8c01"
		review, _ := json.Marshal(map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"request": map[string]any{"uid": "r-1", "desiredAPIVersion": "example.com/v1", "objects": []any{in}},
		})
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(crt)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
		resp, err := client.Post("https://"+addr+"/convert", "application/json", bytes.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Response struct {
				UID              string
				ConvertedObjects []map[string]any
				Result           struct{ Status string }
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || got.Response.Result.Status != "Success" || len(got.Response.ConvertedObjects) != 1 {
			t.Fatalf("status %d, %v, response %+v", resp.StatusCode, err, got)
		}
		want := fixture(t, "v1alpha1-to-v1", "expected.yaml").(map[string]any)
		want["metadata"].(map[string]any)["uid"] = "6d1f0f8e-3c1a-4a5e-9b1e-2f7f1f0b8c01"
		var gotObj any = got.Response.ConvertedObjects[0]
		if diff := cmp.Diff(any(want), gotObj); diff != "" {
			t.Errorf("converted object (-want +got):\n%s", diff)
		}

		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-logsDone
		if err := cmd.Wait(); err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	})
}
