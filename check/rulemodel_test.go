package check

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert"
	convrules "github.com/hubspoke/hubspoke/convert/rules"
)

// TestRulesOf: the static checks see each parsed rule by the sides it
// touches; a funcs rule by the fields it declares it owns.
func TestRulesOf(t *testing.T) {
	sp := convrules.SpokeSpec{Version: "v1alpha1", Rules: []convrules.RuleSpec{
		{Type: "rename", Line: 3, From: convert.MustPath("spec.replicas"), To: convert.MustPath("spec.size")},
		{Type: "hubOnly", Line: 4, From: convert.MustPath("spec.paused"), To: convert.MustPath("spec.paused")},
		{Type: "spokeOnly", Line: 5, From: convert.MustPath("spec.legacy"), To: convert.MustPath("spec.legacy")},
		{Type: "funcs", Line: 6, FuncName: "opaque"},
		{Type: "funcs", Line: 7, FuncName: "owns", Params: map[string]any{"from": []string{"spec.a"}, "to": []string{"/spec/b~1c", "spec.d"}}},
	}}
	type side struct {
		Kind     string
		From, To []string
		Line     int
	}
	var got []side
	for _, r := range rulesOf(sp) {
		got = append(got, side{r.Kind, r.From, r.To, r.Line})
	}
	want := []side{
		{"rename", []string{"spec", "replicas"}, []string{"spec", "size"}, 3},
		{"hubOnly", nil, []string{"spec", "paused"}, 4},
		{"spokeOnly", []string{"spec", "legacy"}, nil, 5},
		{"funcs", nil, nil, 6},
		{"funcs", []string{"spec", "a"}, nil, 7},
		{"funcs", nil, []string{"spec", "b/c"}, 7},
		{"funcs", nil, []string{"spec", "d"}, 7},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}
