package review

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// serveBoth answers body with the fast path (convertInline) and with the
// general path (decodeLazy, convertReview), each with fresh state. fast is
// nil when the fast path gave up; slow is nil when the general path
// rejected the body.
func serveBoth(t testing.TB, h *Handler, body []byte) (fast, slow []byte) {
	t.Helper()
	ctx := context.Background()
	wf := new(work)
	wf.body = body
	wf.scan.Reset(body)
	if h.convertInline(ctx, wf, time.Now()) {
		fast = wf.out
	}
	ws := new(work)
	ws.body = body
	ws.scan.Reset(body)
	if ws.rv.decodeLazy(&ws.scan) == nil && h.convertReview(ctx, ws, time.Now()) == nil {
		slow = ws.out
		if fast != nil && len(ws.errs) > 0 {
			t.Fatalf("the fast path answered a review the general path fails: %s", slow)
		}
	}
	return fast, slow
}

// TestInline holds when the fast path answers a review: a review in the
// API server's field order whose objects all convert with the engine and
// pass the self-check. Every other review gives up there and is answered by
// the general path, and the answers of both paths are the same bytes.
func TestInline(t *testing.T) {
	w := func(version, name, extra string) string { return widgetMeta(version, name, extra, `"replicas":2`) }
	rows := []struct {
		name string
		body string
		fast bool
	}{
		{name: "widgets", fast: true, body: reviewBody(APIVersionV1, "u", "example.com/v1", w("v1alpha1", "a", `,"labels":{"x":"y"}`), w("v1", "b", ""), w("v1alpha1", "c", ""))},
		{name: "no objects", fast: true, body: reviewBody(APIVersionV1, "u", "example.com/v1")},
		{name: "v1beta1 review", fast: true, body: reviewBody(APIVersionV1beta1, "u", "example.com/v1alpha1", w("v1", "a", ""))},
		{name: "kind first", fast: true, body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"kind":"Widget","apiVersion":"example.com/v1alpha1","metadata":{"name":"a"},"spec":{"replicas":1}}`)},
		{name: "head not leading", fast: true, body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"metadata":{"name":"a"},"kind":"Widget","spec":{"replicas":1},"apiVersion":"example.com/v1alpha1"}`)},
		{name: "escaped apiVersion", fast: true, body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"example.com\/v1alpha1","kind":"Widget","metadata":{"name":"a"}}`)},
		{name: "metadata twice", fast: true, body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"metadata":{"name":"b","uid":"x"}}`)},
		{name: "kind twice, the last another kind", body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"kind":"Gadget"}`)},
		{name: "objects before desiredAPIVersion", body: `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u","objects":[` + w("v1alpha1", "a", "") + `],"desiredAPIVersion":"example.com/v1"}}`},
		{name: "uid after objects", body: `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"desiredAPIVersion":"example.com/v1","objects":[` + w("v1alpha1", "a", "") + `],"uid":"u"}}`},
		{name: "review apiVersion last", body: `{"kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[` + w("v1alpha1", "a", "") + `]},"apiVersion":"apiextensions.k8s.io/v1"}`},
		{name: "another converter", body: reviewBody(APIVersionV1, "u", "other.io/v1", `{"apiVersion":"other.io/v1","kind":"Gadget","metadata":{"name":"a"}}`)},
		{name: "no converter", body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"nowhere.io/v1","kind":"Widget","metadata":{"name":"a"}}`)},
		{name: "conversion fails", body: reviewBody(APIVersionV1, "u", "example.com/v1", w("v1alpha1", "a", ""), widgetMeta("v1beta1", "b", "", `"break":"fail"`))},
		{name: "self-check fails", body: reviewBody(APIVersionV1, "u", "example.com/v1", widgetMeta("v1beta1", "b", "", `"break":"rename"`))},
		{name: "invalid object", body: reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":01}}`)},
		{name: "duplicate objects", body: `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[],"objects":[]}}`},
	}
	h, _ := newTestHandler(t, Options{Converters: []Converter{engine(t), &fakeConverter{group: "other.io", kind: "Gadget", versions: []string{"v1"}}}})
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			fast, slow := serveBoth(t, h, []byte(tc.body))
			if (fast != nil) != tc.fast {
				t.Fatalf("fast path answered: %v, want %v (general path: %s)", fast != nil, tc.fast, slow)
			}
			if fast != nil && !bytes.Equal(fast, slow) {
				t.Fatalf("fast path answered\n%s\ngeneral path\n%s", fast, slow)
			}
		})
	}
}

// widgetMeta is a Widget with the given spec members.
func widgetMeta(version, name, extra, spec string) string {
	return strings.Replace(widget(version, name, extra), `"spec":{"size":3}`, `"spec":{`+spec+`}`, 1)
}

// TestInlineMetrics: a review the fast path answers is counted as the
// general path counts it.
func TestInlineMetrics(t *testing.T) {
	h, _ := newTestHandler(t, Options{Converters: []Converter{engine(t)}})
	body := reviewBody(APIVersionV1, "u", "example.com/v1", widgetMeta("v1alpha1", "a", "", `"replicas":1`), widgetMeta("v1alpha1", "b", "", `"replicas":2`))
	if status, b := post(t, h, body); status != 200 || !strings.Contains(string(b), `"status":"Success"`) {
		t.Fatalf("status %d: %s", status, b)
	}
	if got := testutil.ToFloat64(h.metrics.objects.WithLabelValues("Widget.example.com", "v1alpha1", "v1", "success")); got != 2 {
		t.Errorf("objects counted %v, want 2", got)
	}
	if got := testutil.ToFloat64(h.metrics.reviews.WithLabelValues("Widget.example.com", "v1alpha1", "v1", "success")); got != 1 {
		t.Errorf("reviews counted %v, want 1", got)
	}
}

// FuzzInline holds the fast path to the general one: whenever it answers a
// review, the general path answers it with the same bytes, and succeeds.
// The fuzzer varies two objects of a review in the API server's field
// order (so that most inputs reach the fast path) and the desired version.
func FuzzInline(f *testing.F) {
	for _, o := range []string{
		widgetMeta("v1alpha1", "a", `,"labels":{"x":"y"},"annotations":{"a":"b"}`, `"replicas":2,"x":[1,{"y":null}]`),
		widgetMeta("v1beta1", "b", "", `"break":"label"`),
		widgetMeta("v1beta1", "b", "", `"break":"apiVersion"`),
		`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a\u0041","uid":"u"},"metadata":{"name":"b"},"spec":{"replicas":1}}`,
		`{"kind":"Widget","apiVersion":"example.com/v1","metadata":null}`,
		`{"apiVersion":"other.io/v1","kind":"Gadget","metadata":{"name":"g"}}`,
	} {
		f.Add(o, widget("v1", "z", ""), "example.com/v1")
		f.Add(o, o, "example.com/v1alpha1")
	}
	h, _ := newTestHandler(f, Options{Converters: []Converter{engine(f), &fakeConverter{group: "other.io", kind: "Gadget", versions: []string{"v1"}}}})
	f.Fuzz(func(t *testing.T, o1, o2, desired string) {
		q, err := json.Marshal(desired)
		if err != nil {
			return
		}
		b := []byte(`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","request":{"uid":"u","desiredAPIVersion":` + string(q) + `,"objects":[` + o1 + `,` + o2 + `]}}`)
		fast, slow := serveBoth(t, h, b)
		if fast != nil && !bytes.Equal(fast, slow) {
			t.Fatalf("fast path answered\n%s\ngeneral path\n%s", fast, slow)
		}
	})
}

// TestLeadingHead reads apiVersion and kind wherever the object lies in
// the body, its strings crossing a word of stop bits or not.
func TestLeadingHead(t *testing.T) {
	obj := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{}}`
	for pad := 0; pad < 64; pad++ {
		var s jsonscan.Scanner
		s.Reset([]byte(strings.Repeat(" ", pad) + obj))
		av, kind, ok := leadingHead(&s, pad)
		if !ok || string(av) != "example.com/v1alpha1" || string(kind) != "Widget" {
			t.Fatalf("at %d: %q %q %v", pad, av, kind, ok)
		}
	}
	for _, obj := range []string{`{"kind":"Widget","metadata":{},"apiVersion":"a/b"}`, `{"apiVersion":"a\/b","kind":"Widget","x":1}`, `{"apiVersion":"a/b","kind":"Widget"}`, `{"apiVersion":"a/b","apiVersion":"a/b","kind":"W"}`} {
		var s jsonscan.Scanner
		s.Reset([]byte(obj))
		if av, kind, ok := leadingHead(&s, 0); ok {
			t.Errorf("%s: read %q %q", obj, av, kind)
		}
	}
}
