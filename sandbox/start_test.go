package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hubspoke/hubspoke/internal/goroutines"
	"github.com/hubspoke/hubspoke/sandbox"
)

// TestStart is the package's one sandbox: it checks what a user of Start
// relies on, then that stopping leaves no files and no goroutines behind.
// Before it starts, a sandbox in a child process is killed with SIGKILL:
// its data directory stays, and the start removes it.
func TestStart(t *testing.T) {
	tmp := t.TempDir()
	killed := sandbox.KillChild(t, "sandbox", tmp)
	if _, err := os.Stat(filepath.Join(killed, "etcd")); err != nil {
		t.Fatalf("the data directory of the sandbox killed with SIGKILL: %v", err)
	}
	before := goroutines.Now()
	var dataDir string
	t.Run("running", func(t *testing.T) {
		s := sandbox.Start(t, sandbox.Options{TempDir: tmp})
		dataDir = s.DataDir()
		ctx := context.Background()
		if _, err := os.Stat(killed); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the data directory of the sandbox killed with SIGKILL, after the next start: %v, want it removed", err)
		}

		fromKubeconfig, err := clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
		if err != nil {
			t.Fatalf("load kubeconfig: %v", err)
		}
		for _, tc := range []struct {
			name string
			cfg  *rest.Config
		}{
			{"RESTConfig", s.RESTConfig()},
			{"kubeconfig", fromKubeconfig},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c, err := apiextensionsclient.NewForConfig(tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{}); err != nil {
					t.Errorf("list CRDs: %v", err)
				}
				// Discovery must be on, or kubectl cannot find anything.
				groups, err := c.Discovery().ServerGroups()
				if err != nil {
					t.Fatalf("discovery: %v", err)
				}
				if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "apiextensions.k8s.io" }) {
					t.Errorf("discovery lists %v, want apiextensions.k8s.io among them", groups.Groups)
				}
			})
		}

		t.Run("caBundle injected into a CRD written directly", func(t *testing.T) {
			wh, err := s.ServeWebhook("hooks", "conv", http.NotFoundHandler())
			if err != nil {
				t.Fatal(err)
			}
			c, err := apiextensionsclient.NewForConfig(s.RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			crds := c.ApiextensionsV1().CustomResourceDefinitions()
			if _, err := crds.Create(ctx, webhookCRD("hooks", "conv"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create crd: %v", err)
			}
			var got []byte
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				crd, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
				if err != nil {
					t.Fatalf("get crd: %v", err)
				}
				if got = crd.Spec.Conversion.Webhook.ClientConfig.CABundle; len(got) > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !bytes.Equal(got, wh.CABundle()) {
				t.Errorf("caBundle = %q, want the webhook's CA %q", got, wh.CABundle())
			}
		})

		t.Run("webhook closes despite connections held open", func(t *testing.T) {
			testWebhookClose(t, s)
		})
	})

	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory %s after Stop: %v, want it removed", dataDir, err)
	}
	if leaked := goroutines.LeftSince(before, 5*time.Second,
		"k8s.io/klog/v2.(*flushDaemon)", // started once per process
		"testing.tRunner"); len(leaked) > 0 {
		t.Errorf("%d goroutines left after Stop:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// testWebhookClose: Webhook.Close waits for a request in flight, but not
// for connections without one (accepted through the pod network or on
// loopback before their first request, HTTP/2 between requests), which
// it closes; none of them is an error.
func testWebhookClose(t *testing.T, s *sandbox.Sandbox) {
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	wh, err := s.ServeWebhook("hooks", "held", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	if err != nil {
		t.Fatal(err)
	}
	// As the API server connects: CONNECT through the pod network,
	// then nothing yet.
	proxy, err := net.Dial("unix", strings.TrimPrefix(s.PodNetworkProxy(), "unix://"))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	pod := net.JoinHostPort(wh.Endpoint().IP().String(), strconv.Itoa(sandbox.DefaultTargetPort))
	fmt.Fprintf(proxy, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", pod, pod)
	resp, err := http.ReadResponse(bufio.NewReader(proxy), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", pod, resp, err)
	}
	// On loopback, a connection that sends nothing.
	raw, err := net.Dial("tcp", wh.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// An HTTP/2 connection, idle after a request, and a request in
	// flight on it.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(wh.CABundle())
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "held.hooks.svc"},
		ForceAttemptHTTP2: true,
	}}
	defer client.CloseIdleConnections()
	get := func(path string) (string, error) {
		resp, err := client.Get("https://" + wh.Addr() + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.Proto + " " + string(body), err
	}
	if got, err := get("/"); err != nil || got != "HTTP/2.0 ok" {
		t.Fatalf("GET /: %q, %v; want HTTP/2.0 ok", got, err)
	}
	slow := make(chan string, 1)
	go func() {
		got, err := get("/slow")
		if err != nil {
			got = err.Error()
		}
		slow <- got
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- wh.Close() }()
	time.Sleep(100 * time.Millisecond) // let Close begin: the request is in flight
	close(release)
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := <-slow; got != "HTTP/2.0 ok" {
		t.Errorf("the request in flight during Close: %q, want HTTP/2.0 ok", got)
	}
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := raw.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the idle loopback connection after Close: read %d, %v; want it closed", n, err)
	}
}

func webhookCRD(namespace, name string) *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr(true),
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						Service: &apiextensionsv1.ServiceReference{Namespace: namespace, Name: name, Path: ptr("/convert")},
					},
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkStart measures New until kube-apiserver is ready, and Stop, with
// the binaries built (target: a start under five seconds).
func BenchmarkStart(b *testing.B) {
	if _, err := sandbox.EnsureAssets(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	var stop time.Duration
	for b.Loop() {
		s, err := sandbox.New(context.Background(), sandbox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		start := time.Now()
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		stop += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(stop.Milliseconds())/float64(b.N), "stop-ms/op")
}
