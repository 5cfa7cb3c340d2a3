package convwatch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/internal/convwatch"
	"github.com/hubspoke/hubspoke/review"
)

// conversion is a Conversion object renaming spec.size to spec.<to>.
func conversion(name string, gen int64, to string, created time.Time) *unstructured.Unstructured {
	rule := map[string]any{"rename": map[string]any{"from": "spec.size", "to": "spec." + to}}
	if to == "" {
		rule = map[string]any{"rename": map[string]any{"from": "spec..size", "to": "spec.x"}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.Group + "/" + v1alpha1.Version,
		"kind":       v1alpha1.Kind,
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"group": "example.com", "kind": "Widget", "hub": "v1",
			"spokes": []any{map[string]any{"version": "v1alpha1", "rules": []any{rule}}},
		},
	}}
	u.SetGeneration(gen)
	u.SetUID(k8stypes.UID("uid-" + types(name)))
	u.SetCreationTimestamp(metav1.NewTime(created))
	return u
}

func types(s string) string { return strings.ReplaceAll(s, ".", "-") }

const widget = `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","namespace":"default","uid":"u-w"},"spec":{"size":3}}`

// convertWidget sends one Widget through the handler and returns the
// response body.
func convertWidget(t *testing.T, h http.Handler) string {
	t.Helper()
	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"r","desiredAPIVersion":"example.com/v1","objects":[` + widget + `]}}`
	r := httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Body.String()
}

type fixture struct {
	t       *testing.T
	client  *dynamicfake.FakeDynamicClient
	handler *review.Handler
	w       *convwatch.Watcher
	reg     *prometheus.Registry
}

func start(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	gvr := v1alpha1.GroupVersionResource
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: v1alpha1.ListKind}, objs...)
	reg := prometheus.NewRegistry()
	h, err := review.NewHandler(review.Options{Replaceable: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	w, err := convwatch.New(convwatch.Options{Client: client, Handler: h, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(); err == nil {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	f := &fixture{t: t, client: client, handler: h, w: w, reg: reg}
	f.waitFor("ready", func(v1alpha1.Served) bool { return w.Ready() == nil })
	return f
}

// waitFor waits until cond holds of what the watcher serves.
func (f *fixture) waitFor(what string, cond func(v1alpha1.Served) bool) v1alpha1.Served {
	f.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := f.w.Changed()
		s := f.w.Served()
		if cond(s) {
			return s
		}
		select {
		case <-ch:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s; serving %+v", what, s)
		}
	}
}

func (f *fixture) update(u *unstructured.Unstructured) {
	f.t.Helper()
	if _, err := f.client.Resource(v1alpha1.GroupVersionResource).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func served(name string, gen int64) func(v1alpha1.Served) bool {
	return func(s v1alpha1.Served) bool {
		for _, c := range s.Conversions {
			if c.Name == name && c.Generation == gen {
				return true
			}
		}
		return false
	}
}

func TestWatchServesGenerations(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := start(t, conversion("widgets.example.com", 1, "a", t0))
	if out := convertWidget(t, f.handler); !strings.Contains(out, `"a":3`) {
		t.Fatalf("generation 1 not served: %s", out)
	}

	f.update(conversion("widgets.example.com", 2, "b", t0))
	f.waitFor("generation 2", served("widgets.example.com", 2))
	if out := convertWidget(t, f.handler); !strings.Contains(out, `"b":3`) {
		t.Fatalf("generation 2 not served: %s", out)
	}

	// A generation that does not load: generation 2 keeps serving.
	f.update(conversion("widgets.example.com", 3, "", t0))
	s := f.waitFor("generation 3 refused", func(s v1alpha1.Served) bool {
		return len(s.Conversions) == 1 && s.Conversions[0].FailedGeneration == 3
	})
	want := v1alpha1.ServedConversion{Name: "widgets.example.com", UID: "uid-widgets-example-com", Generation: 2, CRD: "Widget.example.com", FailedGeneration: 3,
		Error: `conversion widgets.example.com: spec.spokes[0].rules[0].rename.from: path "spec..size": empty segment`}
	if diff := cmp.Diff([]v1alpha1.ServedConversion{want}, s.Conversions); diff != "" {
		t.Errorf("served (-want +got):\n%s", diff)
	}
	if out := convertWidget(t, f.handler); !strings.Contains(out, `"b":3`) {
		t.Fatalf("the last good generation does not serve: %s", out)
	}
	if err := testutil.GatherAndCompare(f.reg, strings.NewReader(`# HELP hubspoke_conversion_loads_total Generations of Conversion objects loaded, by result (success, failure).
# TYPE hubspoke_conversion_loads_total counter
hubspoke_conversion_loads_total{result="failure"} 1
hubspoke_conversion_loads_total{result="success"} 2
`), "hubspoke_conversion_loads_total"); err != nil {
		t.Error(err)
	}
	if got := gauge(t, f.reg, "hubspoke_conversion_served_generation"); got != 2 {
		t.Errorf("served generation gauge = %v, want 2", got)
	}

	// A second Conversion of the same kind, created later, is not served.
	f.update(conversion("widgets.example.com", 4, "d", t0))
	f.waitFor("generation 4", served("widgets.example.com", 4))
	if _, err := f.client.Resource(v1alpha1.GroupVersionResource).Create(context.Background(), conversion("other", 1, "c", t0.Add(time.Hour)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s = f.waitFor("the second conversion", func(s v1alpha1.Served) bool { return len(s.Conversions) == 2 })
	if got := s.Conversions[0]; got.Name != "other" || got.Generation != 0 || got.Error != "not served: Widget.example.com is converted by Conversion widgets.example.com, created earlier" {
		t.Errorf("the later Conversion of a served kind: %+v", got)
	}
	if out := convertWidget(t, f.handler); !strings.Contains(out, `"d":3`) {
		t.Fatalf("the older Conversion must keep serving: %s", out)
	}

	// Deleting the first hands the kind to the second.
	if err := f.client.Resource(v1alpha1.GroupVersionResource).Delete(context.Background(), "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFor("the second conversion served", served("other", 1))
	if out := convertWidget(t, f.handler); !strings.Contains(out, `"c":3`) {
		t.Fatalf("after the delete: %s", out)
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func TestServedEndpoint(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := start(t, conversion("widgets.example.com", 7, "a", t0))
	get := func(path string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		w := httptest.NewRecorder()
		f.w.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	code, body := get(v1alpha1.ServedPath)
	if want := `{"funcs":[],"synced":true,"conversions":[{"name":"widgets.example.com","uid":"uid-widgets-example-com","generation":7,"crd":"Widget.example.com"}]}`; code != 200 || body != want {
		t.Errorf("GET %s: %d %s\nwant %s", v1alpha1.ServedPath, code, body, want)
	}
	code, body = get(v1alpha1.ServedPath + "/widgets.example.com")
	var one v1alpha1.ServedConversion
	if err := json.Unmarshal([]byte(body), &one); code != 200 || err != nil || one.Generation != 7 {
		t.Fatalf("GET one: %d %s %v", code, body, err)
	}
	if !strings.Contains(string(one.Document), `"rename":{"from":"spec.size","to":"spec.a"}`) {
		t.Errorf("the document served: %s", one.Document)
	}
	if code, body = get(v1alpha1.ServedPath + "/nope"); code != 404 || !strings.Contains(body, "conversion nope is not loaded here") {
		t.Errorf("GET unknown: %d %s", code, body)
	}
	r := httptest.NewRequest(http.MethodPost, v1alpha1.ServedPath, nil)
	w := httptest.NewRecorder()
	f.w.ServeHTTP(w, r)
	if w.Code != 405 {
		t.Errorf("POST: %d", w.Code)
	}
}
