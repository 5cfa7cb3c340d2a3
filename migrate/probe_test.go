package migrate

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// reviewServer answers ConversionReviews with renameConverter, after
// letting tamper change the answer.
func reviewServer(t *testing.T, tamper func(*apiextensionsv1.ConversionReview)) (*httptest.Server, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, o := range review.Request.Objects {
			out, err := renameConverter{}.Convert(nil, o.Raw, review.Request.DesiredAPIVersion)
			if err != nil {
				t.Error(err)
			}
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
		}
		review.Request, review.Response = nil, resp
		if tamper != nil {
			tamper(&review)
		}
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	f := newFakeAPI("v1", nil, "v1")
	crd := f.crd.DeepCopy()
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, crd
}

func TestWebhookProber(t *testing.T) {
	obj := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a","uid":"u"},"spec":{"replicas":2}}`)
	tests := []struct {
		name   string
		tamper func(*apiextensionsv1.ConversionReview)
		want   string // error substring; "" for success
	}{
		{"answers", nil, ""},
		{"wrong uid", func(r *apiextensionsv1.ConversionReview) { r.Response.UID = "other" }, `response.uid is "other", want "`},
		{"failure", func(r *apiextensionsv1.ConversionReview) {
			r.Response.Result = metav1.Status{Status: metav1.StatusFailure, Message: "no way"}
		}, "conversion failed: no way"},
		{"no objects", func(r *apiextensionsv1.ConversionReview) { r.Response.ConvertedObjects = nil }, "0 converted objects, want 1"},
		{"wrong apiVersion", func(r *apiextensionsv1.ConversionReview) {
			r.Response.ConvertedObjects[0].Raw = obj
		}, `apiVersion "example.com/v1alpha1", want "example.com/v1"`},
		{"wrong kind of review", func(r *apiextensionsv1.ConversionReview) { r.APIVersion = "apiextensions.k8s.io/v1beta1" }, "want apiextensions.k8s.io/v1, ConversionReview"},
		// The rules the API server applies to each converted object (package apirules).
		{"renamed", func(r *apiextensionsv1.ConversionReview) {
			r.Response.ConvertedObjects[0].Raw = []byte(strings.Replace(string(r.Response.ConvertedObjects[0].Raw), `"name":"a"`, `"name":"b"`, 1))
		}, `converted object 0: the converted object has metadata.name "b", want "a"`},
		{"invalid label", func(r *apiextensionsv1.ConversionReview) {
			r.Response.ConvertedObjects[0].Raw = []byte(strings.Replace(string(r.Response.ConvertedObjects[0].Raw), `"uid":"u"`, `"uid":"u","labels":{"bad key":"x"}`, 1))
		}, `metadata.labels are invalid: key "bad key"`},
		{"number the API server cannot decode", func(r *apiextensionsv1.ConversionReview) {
			r.Response.ConvertedObjects[0].Raw = []byte(strings.Replace(string(r.Response.ConvertedObjects[0].Raw), `"size":2`, `"size":1e400`, 1))
		}, "number 1e400 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, crd := reviewServer(t, tt.tamper)
			out, err := (&WebhookProber{URL: srv.URL + "/convert"}).Probe(context.Background(), crd, obj, "example.com/v1")
			if tt.want == "" {
				if err != nil || !strings.Contains(string(out), `"size":2`) {
					t.Fatalf("Probe = %s, %v", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Probe error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestWebhookProberUnreachable(t *testing.T) {
	srv, crd := reviewServer(t, nil)
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = nil // not trusted
	if _, err := (&WebhookProber{URL: srv.URL}).Probe(context.Background(), crd, []byte(`{}`), "example.com/v1"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v", err)
	}
	crd.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "ns", Name: "hook"}}
	if _, err := (&WebhookProber{}).Probe(context.Background(), crd, []byte(`{}`), "example.com/v1"); err == nil || !strings.Contains(err.Error(), "service ns/hook, which cannot be reached from here") {
		t.Errorf("service without URL: %v", err)
	}
}
