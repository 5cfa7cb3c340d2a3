package apirules_test

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/apirules"
)

// bare is an object without metadata, as the API server's field manager
// sends it in a server-side apply across versions: the fields a manager
// owns, converted to the manager's version.
const bare = `{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"replicas":1}}`

func bareConv(rest string) string {
	return `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1}` + rest + `}`
}

// TestObjectAgreesWithAPIServersConverter holds Object's verdict on a
// converted object to the API server's own webhook converter
// (apiextensions-apiserver's conversion package, restoreObjectMeta and
// validateConvertedObject included): it converts the original through a
// webhook that answers the converted object, and the converter accepts
// exactly the answers Object accepts. The rows are TestObject's, bar the
// ones the rules refuse on purpose, and objects without metadata.
func TestObjectAgreesWithAPIServersConverter(t *testing.T) {
	rows := []struct{ name, orig, out string }{
		{"valid", orig, conv(idMeta+`,"labels":{"app":"x"}`, `,"spec":{"size":1}`)},
		{"labels dropped", orig, conv(idMeta, "")},
		{"name", orig, conv(`"name":"v","namespace":"ns","uid":"u1"`, "")},
		{"namespace", orig, conv(`"name":"w","uid":"u1"`, "")},
		{"uid", orig, conv(`"name":"w","namespace":"ns","uid":"u2"`, "")},
		{"no metadata", orig, `{"apiVersion":"example.com/v1","kind":"Widget"}`},
		{"null metadata", orig, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":null}`},
		{"metadata not an object", orig, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":[]}`},
		{"invalid label key", orig, conv(idMeta+`,"labels":{"bad key":"x"}`, "")},
		{"label not a string", orig, conv(idMeta+`,"labels":{"app":1}`, "")},
		{"invalid annotation key", orig, conv(idMeta+`,"annotations":{"a b":"x"}`, "")},
		{"annotations too large", orig, conv(idMeta+`,"annotations":{"a":"`+strings.Repeat("x", apirules.MaxAnnotationsBytes)+`"}`, "")},

		{"no metadata, answered without", bare, bareConv("")},
		{"no metadata, answered with an empty one", bare, bareConv(`,"metadata":{}`)},
		{"no metadata, answered with null", bare, bareConv(`,"metadata":null`)},
		{"no metadata, answered with an array", bare, bareConv(`,"metadata":[]`)},
		{"no metadata, answered with a name", bare, bareConv(`,"metadata":{"name":"w"}`)},
		{"no metadata, answered with an empty name", bare, bareConv(`,"metadata":{"name":""}`)},
		{"no metadata, answered with a uid", bare, bareConv(`,"metadata":{"uid":"u1"}`)},
		{"no metadata, answered with labels", bare, bareConv(`,"metadata":{"labels":{"app":"x"}}`)},
		{"no metadata, answered with invalid labels", bare, bareConv(`,"metadata":{"labels":{"app":"-x-"}}`)},
		{"no metadata, answered with annotations", bare, bareConv(`,"metadata":{"annotations":{"hubspoke.dev/preserved":"{}"}}`)},
		{"no metadata, answered with an invalid annotation key", bare, bareConv(`,"metadata":{"annotations":{"a b":"x"}}`)},
		{"no metadata, answered with null, then an empty one", bare, bareConv(`,"metadata":null,` + apirules.EmptyMetadata)},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			want := apiServerConverts(t, tc.orig, tc.out)
			got := apirules.Object([]byte(tc.orig), []byte(tc.out), "example.com/v1")
			if (got == nil) != (want == nil) {
				t.Fatalf("Object: %v; the API server's converter: %v\noriginal:  %s\nconverted: %.200s", got, want, tc.orig, tc.out)
			}
		})
	}
}

// apiServerConverts converts orig to example.com/v1 with the API server's
// webhook converter, through a webhook that answers out, and returns its
// error.
func apiServerConverts(t *testing.T, orig, out string) error {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var rv struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.Unmarshal(body, &rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		uid, _ := json.Marshal(rv.Request.UID)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":`+string(uid)+
			`,"convertedObjects":[`+out+`],"result":{"status":"Success"}}}`)
	}))
	defer srv.Close()
	url := srv.URL + "/convert"
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	any := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Schema: any},
				{Name: "v1", Served: true, Storage: true, Schema: any},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: ca},
					ConversionReviewVersions: []string{"v1"},
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
	in := &unstructured.Unstructured{}
	if err := in.UnmarshalJSON([]byte(orig)); err != nil {
		t.Fatal(err)
	}
	_, err = unsafe.ConvertToVersion(in, schema.GroupVersion{Group: "example.com", Version: "v1"})
	return err
}
