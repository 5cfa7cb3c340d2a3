package deploy_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/schema"
)

// TestCheckRolloutPairs: each CRD is compared with the previous rules of
// its group and kind; a CRD new in the revision is not compared; the
// reports are merged.
func TestCheckRolloutPairs(t *testing.T) {
	prev, err := rules.ParseFile(widgetRules)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	chk := func(_ context.Context, crd *schema.CRD, next, old check.Converter, _ check.Options) *check.Report {
		got = append(got, crd.Object.Name+": "+next.Kind()+" vs "+old.Kind())
		r := &check.Report{}
		r.Add(check.Finding{Check: "rollout-agreement", Message: "differs"})
		return r
	}
	report, err := deploy.CheckRollout(context.Background(), inputs(t), []*rules.File{prev}, chk, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"widgets.example.com: Widget vs Widget"}, got); diff != "" {
		t.Errorf("comparisons (-want +got):\n%s", diff)
	}
	if report.Errors() != 1 {
		t.Errorf("%d errors in the merged report, want 1", report.Errors())
	}
}
