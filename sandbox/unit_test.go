package sandbox

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hubspoke/hubspoke/pki"
)

func TestWantCABundle(t *testing.T) {
	r := &network{cas: map[[2]string][]byte{
		{"sys", "hook"}: []byte("CA"),
		{"sys", "noca"}: nil,
	}}
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
		{"default port", crd(nil), "CA"},
		{"any port", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.Service.Port = port(8443) }), "CA"},
		{"stale bundle replaced", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.CABundle = []byte("old") }), "CA"},
		{"bundle already right", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.CABundle = []byte("CA") }), ""},
		{"unregistered service", crd(func(c *apiextensionsv1.CustomResourceConversion) { c.Webhook.ClientConfig.Service.Name = "other" }), ""},
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

// TestReadCRDFile: a CRD file is read as check, deploy and migrate read
// it (schema.LoadFile): as the API server decodes it with strict field
// validation, every problem at its file:line:col.
func TestReadCRDFile(t *testing.T) {
	const versions = "  versions: [{name: v1, served: true, storage: true}]\n"
	tests := []struct {
		name    string
		data    string
		wantErr string // "" for success, else what the error says after the file's name
	}{
		{"ok", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec:\n  group: b\n" + versions, ""},
		{"json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b"},"spec":{"versions":[{"name":"v1"}]}}`, ""},
		{"the first of several documents", "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\nspec:\n" + versions, ""},
		{"v1beta1", "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n", `:1: apiVersion "apiextensions.k8s.io/v1beta1": only apiextensions.k8s.io/v1`},
		{"other kind", "apiVersion: v1\nkind: ConfigMap\n", ": no CustomResourceDefinition found"},
		{"unknown field", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  grupo: b\n" + versions, ":4:3: unknown field spec.grupo"},
		{"a key in another case", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  Group: b\n" + versions, ":4:3: unknown field spec.Group"},
		{"a value of the wrong type", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: [b]\n" + versions, ":4:3: spec.group is an array, want a string"},
		{"not yaml", "{", ":1:"},
		{"empty", "", ": no CustomResourceDefinition found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crd.yaml")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			crd, err := ReadCRDFile(path)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ReadCRDFile: %v", err)
				}
				if crd.Name != "a.b" || crd.Kind != "CustomResourceDefinition" {
					t.Errorf("name %q, kind %q, want a.b, CustomResourceDefinition", crd.Name, crd.Kind)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), path+tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, path+tc.wantErr)
			}
		})
	}
	if _, err := ReadCRDFile(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v, want an error wrapping os.ErrNotExist", err)
	}
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

// TestClusterPKI: the files kube-apiserver starts with, as it reads them:
// a serving certificate for every name and address clients use, an admin
// client certificate in system:masters for client authentication only,
// both from the client CA, and a service-account key pair.
func TestClusterPKI(t *testing.T) {
	p, err := newClusterPKI()
	if err != nil {
		t.Fatal(err)
	}
	files, err := p.write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(files[name])
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(read("ca.crt")) {
		t.Fatal("ca.crt holds no certificate")
	}
	serving, err := tls.X509KeyPair(read("apiserver.crt"), read("apiserver.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"localhost", "127.0.0.1", "::1", "10.96.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if _, err := serving.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	admin, err := tls.X509KeyPair(read("admin.crt"), read("admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	if got := admin.Leaf.Subject.String(); got != "CN="+AdminUser+",O=system:masters" {
		t.Errorf("admin subject %q, want user %s in group system:masters", got, AdminUser)
	}
	if _, err := admin.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate for client authentication: %v", err)
	}
	if diff := cmp.Diff([]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, admin.Leaf.ExtKeyUsage); diff != "" {
		t.Errorf("admin extended key usage (-want +got):\n%s", diff)
	}
	saKey, err := pki.ParsePrivateKey(read("sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(read("sa.pub"))
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("sa.pub is not a PEM public key: %v", block)
	}
	saPub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !saKey.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(saPub) {
		t.Error("sa.pub is not sa.key's public key")
	}
}

func TestKubeconfig(t *testing.T) {
	s := &Sandbox{restConfig: &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{
		CAData: []byte("CA"), CertData: []byte("CERT"), KeyData: []byte("KEY")}}}
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
		"cert":      string(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData),
		"key":       string(cfg.AuthInfos[ctx.AuthInfo].ClientKeyData),
	}
	want := map[string]string{"context": KubeconfigContext, "namespace": "default", "server": "https://127.0.0.1:6443",
		"ca": "CA", "cert": "CERT", "key": "KEY"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kubeconfig (-want +got):\n%s", diff)
	}
}
