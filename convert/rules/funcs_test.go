package rules_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
)

func noop(*convert.Object) error { return nil }

// TestFuncsOwnedPaths: a funcs rule declares the fields it owns (a path or
// a list of paths on each side) for check; bad ones fail at their line.
func TestFuncsOwnedPaths(t *testing.T) {
	r, err := convert.Funcs("legacy", noop, noop)
	if err != nil {
		t.Fatal(err)
	}
	opts := rules.Options{Funcs: map[string]convert.Rule{"legacy": r}}
	f, err := rules.Parse("f.yaml", []byte(head+"    - funcs: {name: legacy, from: [spec.a, /spec/b~1c], to: spec.d}\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := f.Spokes[0].Rules[0].Params
	want := map[string]any{"from": []string{"spec.a", "/spec/b~1c"}, "to": []string{"spec.d"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ rule, want string }{
		{"    - funcs: {name: legacy, from: metadata.name}\n", "f.yaml:11:35: spec.spokes[0].rules[0].funcs.from: path metadata.name: the API server restores metadata"},
		{"    - funcs: {name: legacy, to: [spec.a, {x: 1}]}\n", "f.yaml:11:42: spec.spokes[0].rules[0].funcs.to: want a path or a list of paths, got a mapping"},
		{"    - funcs: {name: legacy, to: 'spec..a'}\n", `f.yaml:11:33: spec.spokes[0].rules[0].funcs.to: path "spec..a": empty segment`},
	} {
		_, err := rules.Parse("f.yaml", []byte(head+tt.rule), opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(tt.rule), err, tt.want)
		}
	}
}

// TestRegisterFuncs: funcs registered for the whole program are found by
// every load; Options.Funcs wins on a shared name.
func TestRegisterFuncs(t *testing.T) {
	fail := func(*convert.Object) error { return convert.ErrUnknownVersion }
	global, _ := convert.Funcs("registered", fail, fail)
	rules.RegisterFuncs(map[string]convert.Rule{"registered-test": global})
	f, err := rules.Parse("f.yaml", []byte(head+"    - funcs: {name: registered-test}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Spokes[0].Rules[0].Rule != global {
		t.Errorf("the registered rule was not used")
	}
	local, _ := convert.Funcs("local", noop, noop)
	f, err = rules.Parse("f.yaml", []byte(head+"    - funcs: {name: registered-test}\n"), rules.Options{Funcs: map[string]convert.Rule{"registered-test": local}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Spokes[0].Rules[0].Rule != local {
		t.Errorf("Options.Funcs did not win over the registered rule")
	}
	_, err = rules.Parse("f.yaml", []byte(head+"    - funcs: {name: nope}\n"))
	if err == nil || !strings.Contains(err.Error(), "registered: registered-test)") {
		t.Errorf("error %v does not list the registered funcs", err)
	}
}
