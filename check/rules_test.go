package check

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadRules(t *testing.T) {
	rs, err := LoadRulesFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if rs.Group != "example.com" || rs.Kind != "Gadget" || rs.Hub != "v1" || len(rs.Spokes) != 2 {
		t.Fatalf("rules = %+v", rs)
	}
	var got []string
	for _, r := range rs.Spoke("v1alpha1").Rules {
		got = append(got, r.Name())
	}
	want := []string{
		"rename /spec/replicas -> /spec/size",
		"enum /spec/mode -> /spec/mode",
		"listToMap /spec/endpoints -> /spec/endpoints",
		"hubOnly /spec/paused",
		"hubOnly /spec/extra",
		"spokeOnly /spec/legacy",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if l := rs.Spoke("v1alpha1").Rules[0].Line; l != 11 {
		t.Errorf("line of the first rule = %d, want 11", l)
	}
}

func TestLoadRulesErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{name: "yaml", data: "kind: [", want: "r.yaml: yaml:"},
		{name: "no conversion", data: "kind: Other\n", want: "no Conversion document"},
		{name: "no spec", data: "kind: Conversion\n", want: "r.yaml:1: no spec"},
		{name: "spokes not a list", data: "kind: Conversion\nspec:\n  spokes: {}\n", want: "r.yaml:3: spec.spokes: not a list"},
		{name: "rule with two kinds", data: "kind: Conversion\nspec:\n  spokes:\n  - version: v1\n    rules:\n    - {rename: {from: a, to: b}, enum: {from: c}}\n", want: "r.yaml:6: spoke v1: a rule is a map with exactly one key"},
		{name: "bad path", data: "kind: Conversion\nspec:\n  spokes:\n  - version: v1\n    rules:\n    - rename: {from: a..b, to: b}\n", want: "empty segment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadRules("r.yaml", []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func FuzzLoadRules(f *testing.F) {
	f.Add([]byte("kind: Conversion\nspec:\n  hub: v1\n  spokes:\n  - version: v1alpha1\n    rules:\n    - rename: {from: spec.a, to: spec.b}\n    - hubOnly: {path: /spec/c~1d}\n"))
	f.Add([]byte("kind: Conversion\nspec: {spokes: [{version: v1, rules: [{enum: {from: x, values: {A: B}}}]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := LoadRules("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, sp := range rs.Spokes {
			for _, r := range sp.Rules {
				_ = r.Name()
				// Mapping a path through any rule set never panics.
				_ = mapPath(sp.Rules, []string{"spec", "a", "*", "b"}, true)
				_ = mapPath(sp.Rules, []string{"spec", "a"}, false)
			}
		}
	})
}
