package webhook

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/schema"
)

// TestExamplesBothModes holds issue 13's "no false alarms": hubspoke's own
// examples pass in rules mode and in black-box mode against hubspoke's own
// webhook handler (over real TLS, in both review versions), and both modes
// grade every outcome the same way (same checks, versions and severities).
func TestExamplesBothModes(t *testing.T) {
	for _, ex := range []string{"widget", "evolving-widget"} {
		t.Run(ex, func(t *testing.T) {
			dir := "../../examples/" + ex + "/"
			crd, err := schema.LoadFile(dir + "crd.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rf, err := rules.ParseFile(dir + "conversion.yaml")
			if err != nil {
				t.Fatal(err)
			}
			conv, err := rf.Converter()
			if err != nil {
				t.Fatal(err)
			}
			opts := check.Options{Objects: 100, Seed: 7}
			rulesMode := check.Static(crd, rf)
			rulesMode.Merge(check.Laws(context.Background(), crd, conv, opts))
			if rulesMode.Errors() > 0 {
				t.Fatalf("rules mode:\n%s", reportText(rulesMode))
			}
			h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewTLSServer(h)
			t.Cleanup(srv.Close)
			for _, rv := range []string{"v1", "v1beta1"} {
				c, err := New(FromCRD(crd, Options{URL: srv.URL + "/convert", HTTPClient: srv.Client(), ReviewVersion: rv}))
				if err != nil {
					t.Fatal(err)
				}
				conf := Conformance(context.Background(), c, crd)
				if len(conf.Findings) > 0 || conf.Checks == 0 {
					t.Errorf("review %s: conformance:\n%s", rv, reportText(conf))
				}
				blackBox := check.Static(crd, nil)
				blackBox.Merge(check.Laws(context.Background(), crd, c, opts))
				if blackBox.Errors() > 0 {
					t.Errorf("review %s: black-box mode:\n%s", rv, reportText(blackBox))
				}
				if diff := cmp.Diff(grades(rulesMode, true), grades(blackBox, true)); diff != "" {
					t.Errorf("review %s: the modes grade the laws differently (-rules +black-box):\n%s", rv, diff)
				}
			}
		})
	}
}

// grades lists "severity check from->to" of every finding (law findings
// only when laws is set), sorted and without duplicates.
func grades(r *check.Report, laws bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range r.Findings {
		if laws && f.Count == 0 {
			continue // not a law finding
		}
		k := fmt.Sprintf("%s %s %s->%s", f.Severity, f.Check, f.From, f.To)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
