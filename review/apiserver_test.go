// The tests that run the handler inside others' machinery (the API server's
// converter, controller-runtime's webhook server) check interoperability,
// not concurrency: make test runs them once, without the race detector,
// which would otherwise compile the API server's libraries and
// controller-runtime with its instrumentation for them alone.

//go:build !race

package review

import (
	"encoding/json"
	"encoding/pem"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAPIServerConvertsObjectsWithoutMetadata converts an object without
// metadata with the API server's own webhook converter
// (apiextensions-apiserver's conversion package), calling the handler over
// TLS with the engine behind it, in both directions: the API server
// accepts the answer and ends with the converted object, metadata {}.
func TestAPIServerConvertsObjectsWithoutMetadata(t *testing.T) {
	h, _ := newTestHandler(t, Options{Converters: []Converter{engine(t)}})
	srv, _ := tlsServer(t, h)
	url := srv.URL + "/convert"
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Schema: schemaProps},
				{Name: "v1", Served: true, Storage: true, Schema: schemaProps},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
					ConversionReviewVersions: []string{"v1", "v1beta1"},
				}},
		},
	}
	f, err := conversion.NewCRConverterFactory(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, unsafe, err := f.NewConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct{ in, to, want string }{
		{`{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"replicas":3}}`, "v1", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{},"spec":{"size":3}}`},
		{`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":3}}`, "v1alpha1", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{},"spec":{"replicas":3}}`},
	}
	for _, tc := range rows {
		in := &unstructured.Unstructured{}
		if err := in.UnmarshalJSON([]byte(tc.in)); err != nil {
			t.Fatal(err)
		}
		out, err := unsafe.ConvertToVersion(in, schema.GroupVersion{Group: "example.com", Version: tc.to})
		if err != nil {
			t.Fatalf("%s to %s: %v", tc.in, tc.to, err)
		}
		got, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s to %s: the API server ends with\n%s\nwant\n%s", tc.in, tc.to, got, tc.want)
		}
	}
}
