package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/schema"
)

const widgetDir = "../../examples/widget/"

// brokenHandler is a hand-written conversion webhook around the engine,
// with knobs that break it the way webhooks break.
type brokenHandler struct {
	conv           check.Converter
	onlyFirst      bool // converts only the first object of a batch
	wrongUID       bool // answers with another uid
	apiVersionOnly bool // rewrites apiVersion without restructuring
	alwaysV1       bool // answers v1beta1 reviews in v1
	upperUID       bool // answers "UID" for "uid"
}

func (h *brokenHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		APIVersion string `json:"apiVersion"`
		Request    *struct {
			UID               string            `json:"uid"`
			DesiredAPIVersion string            `json:"desiredAPIVersion"`
			Objects           []json.RawMessage `json:"objects"`
		} `json:"request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	status, msg := "Success", ""
	var out []json.RawMessage
	for i, o := range req.Request.Objects {
		switch {
		case h.onlyFirst && i > 0:
			out = append(out, o)
		case h.apiVersionOnly:
			var m map[string]any
			_ = json.Unmarshal(o, &m)
			m["apiVersion"] = req.Request.DesiredAPIVersion
			b, _ := json.Marshal(m)
			out = append(out, b)
		default:
			b, err := h.conv.Convert(nil, o, req.Request.DesiredAPIVersion)
			if err != nil {
				status, msg = "Failure", err.Error()
			}
			out = append(out, b)
		}
	}
	if status != "Success" {
		out = nil
	}
	uid := req.Request.UID
	if h.wrongUID {
		uid = "not-" + uid
	}
	av := req.APIVersion
	if h.alwaysV1 {
		av = "apiextensions.k8s.io/v1"
	}
	uidKey := "uid"
	if h.upperUID {
		uidKey = "UID" // encoding/json reads it as uid; the API server does not
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": av, "kind": "ConversionReview",
		"response": map[string]any{uidKey: uid, "convertedObjects": out, "result": map[string]any{"status": status, "message": msg}},
	})
}

func setup(t *testing.T, h http.Handler) (*Client, *schema.CRD) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	crd, err := schema.LoadFile(widgetDir + "crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(FromCRD(crd, Options{URL: srv.URL + "/convert", HTTPClient: srv.Client()}))
	if err != nil {
		t.Fatal(err)
	}
	return c, crd
}

func engine(t *testing.T) check.Converter {
	t.Helper()
	conv, err := rules.LoadFile(widgetDir + "conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

func reportText(r *check.Report) string {
	var b strings.Builder
	_ = r.WriteText(&b)
	return b.String()
}

func TestHubspokeServerConforms(t *testing.T) {
	conv, err := rules.LoadFile(widgetDir + "conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		t.Fatal(err)
	}
	c, crd := setup(t, h)
	r := Conformance(context.Background(), c, crd)
	r.Merge(check.Laws(context.Background(), crd, c, check.Options{Objects: 30, Seed: 1}))
	if len(r.Findings) > 0 || r.Checks == 0 {
		t.Fatalf("hubspoke's own webhook is not clean:\n%s", reportText(r))
	}
}

func TestConformanceCatchesBrokenWebhooks(t *testing.T) {
	tests := []struct {
		name string
		h    *brokenHandler
		laws bool
		want []string // every finding, as findingKeys renders them
	}{
		{name: "only the first object of a batch converted", h: &brokenHandler{onlyFirst: true}, want: []string{
			"error protocol-batch v1->v1alpha1 ",
			"error protocol-batch v1alpha1->v1 ",
		}},
		{name: "wrong uid", h: &brokenHandler{wrongUID: true}, want: []string{
			"error protocol-uid v1->v1 ",
			"error protocol-uid v1->v1alpha1 ",
			"error protocol-uid v1alpha1->v1 ",
			"error protocol-uid v1alpha1->v1alpha1 ",
			"error protocol-v1beta1 ->v1 ",
		}},
		{name: "uid spelt UID", h: &brokenHandler{upperUID: true}, want: []string{
			"error protocol-uid v1->v1 ",
			"error protocol-uid v1->v1alpha1 ",
			"error protocol-uid v1alpha1->v1 ",
			"error protocol-uid v1alpha1->v1alpha1 ",
			"error protocol-v1beta1 ->v1 ",
		}},
		{name: "v1beta1 review answered in v1", h: &brokenHandler{alwaysV1: true}, want: []string{
			"error protocol-v1beta1 ->v1 ",
		}},
		{name: "apiVersion changed without restructuring", h: &brokenHandler{apiVersionOnly: true}, laws: true, want: []string{
			"error protocol-malformed-review -> ",
			"error protocol-unsupported-target ->v999nope ",
			"error spoke-hub-spoke v1alpha1->v1 /spec/replicas",
			"warning api-server-coerced v1alpha1->v1 /spec/replicas",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.conv = engine(t)
			c, crd := setup(t, tt.h)
			r := Conformance(context.Background(), c, crd)
			if tt.laws {
				r.Merge(check.Laws(context.Background(), crd, c, check.Options{Objects: 30, Seed: 1, Laws: []string{check.LawSpokeRoundTrip}}))
			}
			if diff := cmp.Diff(tt.want, findingKeys(r)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s\n%s", diff, reportText(r))
			}
		})
	}
}

// findingKeys renders the findings as "severity check from->to path",
// sorted, for exact comparisons.
func findingKeys(r *check.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %s->%s %s", f.Severity, f.Check, f.From, f.To, f.Path))
	}
	sort.Strings(out)
	return out
}

func TestClientErrors(t *testing.T) {
	c, _ := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusInternalServerError)
	}))
	_, err := c.Convert(nil, []byte(`{}`), "example.com/v1")
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Fatalf("error = %v, want HTTP 500", err)
	}
	if _, err := New(Options{Group: "g", Kind: "K", Hub: "v1"}); err == nil {
		t.Error("New without URL succeeded")
	}
	if _, err := New(Options{URL: "https://x", Group: "g", Kind: "K", Hub: "v1", ReviewVersion: "v2"}); err == nil {
		t.Error("New with review version v2 succeeded")
	}
	if _, err := New(Options{URL: "https://x", Group: "g", Kind: "K", Hub: "v1", CAFile: "nope.pem"}); err == nil {
		t.Error("New with a missing CA file succeeded")
	}
}

// TestRolloutTwoWebhooks: old and new webhooks side by side. The same
// webhook twice agrees; a new webhook that rewrites apiVersion only
// disagrees with the old, correct one, with an object that shows it.
func TestRolloutTwoWebhooks(t *testing.T) {
	conv := engine(t)
	old, crd := setup(t, &brokenHandler{conv: conv})
	same, _ := setup(t, &brokenHandler{conv: conv})
	broken, _ := setup(t, &brokenHandler{conv: conv, apiVersionOnly: true})
	opts := check.Options{Objects: 40, Seed: 1, ShrinkTime: time.Second}
	if r := check.Rollout(context.Background(), crd, same, old, opts); len(r.Findings) > 0 || r.Laws != 2 {
		t.Errorf("the same webhook twice (%d law runs):\n%s", r.Laws, reportText(r))
	}
	r := check.Rollout(context.Background(), crd, broken, old, opts)
	// The API server prunes the field left under its old name: what
	// differs is the field missing under its new one.
	want := []string{
		"error rollout-agreement v1->v1alpha1 /spec/replicas",
		"error rollout-agreement v1alpha1->v1 /spec/size",
	}
	if diff := cmp.Diff(want, findingKeys(r)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s\n%s", diff, reportText(r))
	}
	for _, f := range r.Findings {
		if f.Input == nil || f.Output == nil || f.Expected == nil {
			t.Errorf("finding without the object that shows it: %+v", f)
		}
	}
}
