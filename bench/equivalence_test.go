package bench_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/bench"
)

// TestEngineEquivalence proves the baseline does the same work: hubspoke's
// engine and controller-runtime's typed conversion give semantically equal
// objects for every generated Widget, in both directions.
func TestEngineEquivalence(t *testing.T) {
	hs := hubspokeConverter(t)
	cr := typedConverter(t)
	for _, d := range directions {
		t.Run(d.name, func(t *testing.T) {
			for i, o := range widgets(t, d.from, 200, 0) {
				got, err := hs.Convert(nil, o, d.to)
				if err != nil {
					t.Fatalf("object %d: hubspoke: %v", i, err)
				}
				want, err := cr.Convert(nil, o, d.to)
				if err != nil {
					t.Fatalf("object %d: controller-runtime: %v", i, err)
				}
				if diff := cmp.Diff(decodeJSON(t, want), decodeJSON(t, got)); diff != "" {
					t.Fatalf("object %d differs (-controller-runtime +hubspoke):\n%s", i, diff)
				}
			}
		})
	}
}

// TestUntouchedFieldsSurvive checks the objects of BenchmarkUntouchedFields
// convert and keep every extra field.
func TestUntouchedFieldsSurvive(t *testing.T) {
	hs := hubspokeConverter(t)
	o := widgets(t, "v1alpha1", 1, 100)[0]
	got, err := hs.Convert(nil, o, "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := decodeJSON(t, o).(map[string]any)
	want["apiVersion"] = "example.com/v1"
	spec := want["spec"].(map[string]any)
	spec["size"] = spec["replicas"]
	delete(spec, "replicas")
	if diff := cmp.Diff(want, decodeJSON(t, got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestReviewEquivalence sends the same ConversionReview to hubspoke's
// handler and to controller-runtime's conversion webhook handler and checks
// that both succeed with semantically equal converted objects.
func TestReviewEquivalence(t *testing.T) {
	handlers := map[string]http.Handler{}
	for _, role := range servers {
		h, err := newHandler(role, nil)
		if err != nil {
			t.Fatal(err)
		}
		handlers[role] = h
	}
	for _, d := range directions {
		t.Run(d.name, func(t *testing.T) {
			body := bench.ReviewBody("3b1c0e6a-equivalence", d.to, widgets(t, d.from, 100, 0))
			got := map[string]any{}
			for role, h := range handlers {
				req := httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					t.Fatalf("%s: HTTP %d: %.300s", role, rec.Code, rec.Body.Bytes())
				}
				var resp struct {
					APIVersion string `json:"apiVersion"`
					Kind       string `json:"kind"`
					Response   struct {
						UID    string `json:"uid"`
						Result struct {
							Status string `json:"status"`
						} `json:"result"`
						ConvertedObjects []any `json:"convertedObjects"`
					} `json:"response"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
					t.Fatalf("%s: decode response: %v", role, err)
				}
				if resp.APIVersion != "apiextensions.k8s.io/v1" || resp.Kind != "ConversionReview" ||
					resp.Response.UID != "3b1c0e6a-equivalence" || resp.Response.Result.Status != "Success" ||
					len(resp.Response.ConvertedObjects) != 100 {
					t.Fatalf("%s: unexpected response %.300s", role, rec.Body.Bytes())
				}
				got[role] = resp.Response.ConvertedObjects
			}
			if diff := cmp.Diff(got["controller-runtime"], got["hubspoke"]); diff != "" {
				t.Errorf("converted objects differ (-controller-runtime +hubspoke):\n%s", diff)
			}
		})
	}
}
