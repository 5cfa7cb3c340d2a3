// Without the race detector: see apiserver_test.go.

//go:build !race

package review

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/hubspoke/hubspoke/internal/testcert"
)

// TestControllerRuntimeWebhookServer mounts the handler in a
// controller-runtime webhook server, as docs/serve.md shows, and checks it
// behaves as anywhere else.
func TestControllerRuntimeWebhookServer(t *testing.T) {
	dir, crt := selfSigned(t)
	port := freePort(t)
	h, _ := newTestHandler(t, Options{})
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	srv.Register("/convert", h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/convert"
	deadline := time.Now().Add(10 * time.Second)
	for srv.StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatal("controller-runtime webhook server not started after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	status, b := postTLS(t, c, url, reviewBody(APIVersionV1beta1, "u", "example.com/v1", widget("v1alpha1", "a", "")))
	rr := decodeResponse(t, b)
	if status != 200 || rr.APIVersion != APIVersionV1beta1 || rr.Response.Result.Status != "Success" || string(rr.Response.ConvertedObjects[0]) != widget("v1", "a", "") {
		t.Errorf("got %d %s", status, b)
	}
	resp, err := c.Post(url, "text/plain", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: status %d, want 415", resp.StatusCode)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func selfSigned(t *testing.T) (dir string, certPEM []byte) {
	t.Helper()
	dir = t.TempDir()
	return dir, testcert.WriteLoopback(t, dir)
}
