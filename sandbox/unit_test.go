package sandbox

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestResolveEndpoint(t *testing.T) {
	r := newRegistry()
	for _, svc := range []Service{
		{Namespace: "ns", Name: "any", Addr: "127.0.0.1:1000"},
		{Namespace: "ns", Name: "both", Addr: "127.0.0.1:2000"},
		{Namespace: "ns", Name: "both", Port: 8443, Addr: "127.0.0.1:2001"},
		{Namespace: "ns", Name: "exact", Port: 443, Addr: "[::1]:3000"},
	} {
		if err := r.register(svc); err != nil {
			t.Fatalf("register %+v: %v", svc, err)
		}
	}
	tests := []struct {
		name            string
		namespace, svc  string
		port            int32
		wantURL         string
		wantErrContains string
	}{
		{name: "any port", namespace: "ns", svc: "any", port: 443, wantURL: "https://127.0.0.1:1000"},
		{name: "exact port preferred", namespace: "ns", svc: "both", port: 8443, wantURL: "https://127.0.0.1:2001"},
		{name: "other port falls back to any", namespace: "ns", svc: "both", port: 443, wantURL: "https://127.0.0.1:2000"},
		{name: "exact port", namespace: "ns", svc: "exact", port: 443, wantURL: "https://[::1]:3000"},
		{name: "wrong port", namespace: "ns", svc: "exact", port: 444, wantErrContains: "service ns/exact port 444 is not registered"},
		{name: "wrong namespace", namespace: "other", svc: "any", port: 443, wantErrContains: "not registered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := r.ResolveEndpoint(tc.namespace, tc.svc, tc.port)
			if tc.wantErrContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrContains) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErrContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tc.wantURL {
				t.Errorf("url %s, want %s", u, tc.wantURL)
			}
		})
	}

	r.unregister("ns", "both", 8443)
	if u, err := r.ResolveEndpoint("ns", "both", 8443); err != nil || u.Host != "127.0.0.1:2000" {
		t.Errorf("after unregistering port 8443: %v, %v; want the any-port entry", u, err)
	}
}

func TestRegisterRejects(t *testing.T) {
	tests := []struct {
		name    string
		svc     Service
		wantErr string
	}{
		{"no name", Service{Namespace: "ns", Addr: "127.0.0.1:1"}, "namespace and name are required"},
		{"no namespace", Service{Name: "n", Addr: "127.0.0.1:1"}, "namespace and name are required"},
		{"no port", Service{Namespace: "ns", Name: "n", Addr: "127.0.0.1"}, `address "127.0.0.1"`},
		{"not loopback", Service{Namespace: "ns", Name: "n", Addr: "10.0.0.1:443"}, "is not on loopback"},
		{"host name", Service{Namespace: "ns", Name: "n", Addr: "example.com:443"}, "is not on loopback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := newRegistry().register(tc.svc)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestAuthenticateLoopback(t *testing.T) {
	tests := []struct {
		remote string
		want   bool
	}{
		{"127.0.0.1:5000", true},
		{"127.0.0.2:5000", true},
		{"[::1]:5000", true},
		{"10.1.2.3:5000", false},
		{"[2001:db8::1]:5000", false},
		{"garbage", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.remote, func(t *testing.T) {
			resp, ok, err := authenticateLoopback(&http.Request{RemoteAddr: tc.remote, URL: &url.URL{}})
			if err != nil || ok != tc.want {
				t.Fatalf("authenticated %v, %v; want %v", ok, err, tc.want)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff([]string{user.SystemPrivilegedGroup, user.AllAuthenticated}, resp.User.GetGroups()); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWantCABundle(t *testing.T) {
	r := newRegistry()
	for _, svc := range []Service{
		{Namespace: "sys", Name: "hook", Port: 443, Addr: "127.0.0.1:1", CABundle: []byte("CA-443")},
		{Namespace: "sys", Name: "hook", Port: 8443, Addr: "127.0.0.1:2", CABundle: []byte("CA-8443")},
		{Namespace: "sys", Name: "noca", Addr: "127.0.0.1:3"},
	} {
		if err := r.register(svc); err != nil {
			t.Fatal(err)
		}
	}
	crd := func(mutate func(*apiextensionsv1.CustomResourceConversion)) *apiextensionsv1.CustomResourceDefinition {
		conv := &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service: &apiextensionsv1.ServiceReference{Namespace: "sys", Name: "hook"},
			}},
		}
		if mutate != nil {
			mutate(conv)
		}
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: conv}}
	}
	port := func(p int32) *int32 { return &p }
	tests := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want string // "" = no change
	}{
		{"default port 443", crd(nil), "CA-443"},
		{"explicit port", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.Service.Port = port(8443) }), "CA-8443"},
		{"stale bundle replaced", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.CABundle = []byte("old") }), "CA-443"},
		{"bundle already right", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.CABundle = []byte("CA-443") }), ""},
		{"unregistered port", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.Service.Port = port(9) }), ""},
		{"service without CA", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.Service.Name = "noca" }), ""},
		{"URL webhook", crd(func(c *apiextensionsv1.CustomResourceConversion) {
			c.Webhook.ClientConfig.Service = nil
			c.Webhook.ClientConfig.URL = ptr("https://127.0.0.1:1/")
		}), ""},
		{"strategy None", crd(func(c *apiextensionsv1.CustomResourceConversion) {
			*c = apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}), ""},
		{"no conversion", &apiextensionsv1.CustomResourceDefinition{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := wantCABundle(tc.crd, r)
			if ok != (tc.want != "") || string(got) != tc.want {
				t.Errorf("wantCABundle = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestCABundlePatch(t *testing.T) {
	got, err := caBundlePatch([]byte("PEM"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":"UEVN"}}}}}`
	if string(got) != want {
		t.Errorf("patch %s, want %s", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseCRD(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{"ok", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec: {group: b}\n", ""},
		{"json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"}}`, ""},
		{"v1beta1", "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n", `got apiVersion "apiextensions.k8s.io/v1beta1"`},
		{"other kind", "apiVersion: v1\nkind: ConfigMap\n", `kind "ConfigMap"`},
		{"unknown field", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {grupo: b}\n", "grupo"},
		{"not yaml", "{", "decode crd"},
		{"empty", "", "want apiextensions.k8s.io/v1 CustomResourceDefinition"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd, err := ParseCRD([]byte(tc.data))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseCRD: %v", err)
				}
				if crd.Name != "a.b" {
					t.Errorf("name %q, want a.b", crd.Name)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzParseCRD(f *testing.F) {
	f.Add([]byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\n"))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"versions":[{"name":"v1"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		crd, err := ParseCRD(data)
		if err == nil && (crd == nil || crd.Kind != "CustomResourceDefinition") {
			t.Fatalf("ParseCRD accepted %q as %+v", data, crd)
		}
	})
}

func TestNewServiceCert(t *testing.T) {
	c, err := NewServiceCert("hubspoke-system", "hubspoke-webhook")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TLSCertificate(); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CA) {
		t.Fatal("CA is not PEM")
	}
	block, _ := pem.Decode(c.Cert)
	if block == nil {
		t.Fatal("certificate is not PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		wantErr bool
	}{
		{"hubspoke-webhook.hubspoke-system.svc", false},
		{"hubspoke-webhook.hubspoke-system.svc.cluster.local", false},
		{"localhost", false},
		{"127.0.0.1", false},
		{"other.hubspoke-system.svc", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: tc.name, Roots: roots, CurrentTime: time.Now()})
			if (err != nil) != tc.wantErr {
				t.Errorf("verify for %s: %v, want error %v", tc.name, err, tc.wantErr)
			}
		})
	}
	other, err := NewServiceCert("hubspoke-system", "hubspoke-webhook")
	if err != nil {
		t.Fatal(err)
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AppendCertsFromPEM(other.CA)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: otherRoots}); err == nil {
		t.Error("certificate verifies against another call's CA; want a fresh CA per call")
	}
}

func TestKubeconfig(t *testing.T) {
	s := &Sandbox{restConfig: &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("CA")}}}
	data, err := s.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, data)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("no current context:\n%s", data)
	}
	got := map[string]string{
		"context":   cfg.CurrentContext,
		"namespace": ctx.Namespace,
		"server":    cfg.Clusters[ctx.Cluster].Server,
		"ca":        string(cfg.Clusters[ctx.Cluster].CertificateAuthorityData),
	}
	want := map[string]string{"context": KubeconfigContext, "namespace": "default", "server": "https://127.0.0.1:6443", "ca": "CA"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kubeconfig (-want +got):\n%s", diff)
	}
	if cfg.AuthInfos[ctx.AuthInfo].Token == "" {
		t.Error("kubeconfig user has no token; kubectl would prompt for a password")
	}
}

func TestSetGCPercent(t *testing.T) {
	gogc, hadGOGC := os.LookupEnv("GOGC")
	os.Unsetenv("GOGC")
	t.Cleanup(func() {
		if hadGOGC {
			os.Setenv("GOGC", gogc)
		}
	})
	orig := debug.SetGCPercent(123)
	defer debug.SetGCPercent(orig)

	current := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	for _, tc := range []struct {
		name   string
		gogc   string // "" means unset
		option int
		want   int // while the sandbox runs
	}{
		{"default", "", 0, DefaultGCPercent},
		{"option", "", 250, 250},
		{"left alone", "", -1, 123},
		{"GOGC obeyed", "150", 0, 123},
		{"option beats GOGC", "150", 300, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gogc != "" {
				t.Setenv("GOGC", tc.gogc)
			}
			restore := setGCPercent(tc.option)
			if got := current(); got != tc.want {
				t.Errorf("GC percent while running = %d, want %d", got, tc.want)
			}
			if restore != nil {
				restore()
			}
			if got := current(); got != 123 {
				t.Errorf("GC percent after stop = %d, want 123", got)
			}
		})
	}
}
