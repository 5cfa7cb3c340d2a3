package e2e

import (
	"context"
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// TestEnvtestWithSandboxAssets: the directory `hubspoke sandbox assets`
// prints serves controller-runtime's envtest as KUBEBUILDER_ASSETS, and a
// CRD whose conversion webhook is hubspoke's converts on it.
func TestEnvtestWithSandboxAssets(t *testing.T) {
	ctx := context.Background()
	assets, err := sandbox.EnsureAssets(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	// hubspoke's webhook for the Widget example, on loopback: envtest's
	// API server has no pod network, so the CRD names it by URL.
	conv, err := rules.LoadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := sandbox.NewCert("envtest webhook CA", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	tlsCert, err := cert.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{tlsCert}}
	srv.StartTLS()
	defer srv.Close()

	crd, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/convert"
	crd.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: cert.CA}

	// The CRD is installed after the start, not through
	// Environment.CRDs: envtest drops the conversion webhook of a CRD
	// whose kind its scheme does not know as convertible.
	t.Setenv("KUBEBUILDER_ASSETS", assets) // as a user's test run would set it
	// envtest logs through controller-runtime's logger; a user's suite
	// sets one (without, controller-runtime prints a stack trace).
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest with KUBEBUILDER_ASSETS=%s: %v", assets, err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	}()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("install crd: %v", err)
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "example.com", Version: v, Resource: "widgets"}
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"replicas": int64(4)},
	}}
	// The examples' CRD stores v1: creating through v1alpha1 converts.
	// Right after the CRD is written its resource may not be served yet.
	eventually(t, "create through v1alpha1", func() error {
		_, err := dc.Resource(gvr("v1alpha1")).Namespace("default").Create(ctx, w, metav1.CreateOptions{})
		return err
	})
	got, err := dc.Resource(gvr("v1")).Namespace("default").Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read through v1: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 4 {
		t.Errorf("read through v1: spec %v, want size 4", got.Object["spec"])
	}
}
