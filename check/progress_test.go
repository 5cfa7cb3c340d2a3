package check

import (
	"context"
	"testing"
)

// TestLawsProgress: Progress hears of every law run as it starts, in
// order, and once at the end.
func TestLawsProgress(t *testing.T) {
	crd := loadCRD(t, "testdata/crd.yaml")
	var got []LawProgress
	opts := lawOpts()
	opts.Objects = 5
	opts.Progress = func(p LawProgress) { got = append(got, p) }
	r := Laws(context.Background(), crd, &fakeConverter{}, opts)
	if len(got) != r.Laws+1 {
		t.Fatalf("%d progress calls for %d law runs: %v", len(got), r.Laws, got)
	}
	for i, p := range got {
		if p.Done != i || p.Total != r.Laws || (i < r.Laws) != (p.Law != "") {
			t.Errorf("call %d: %+v", i, p)
		}
	}
}
