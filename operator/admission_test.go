package operator

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert/rules"
)

func conversionDoc(t *testing.T, extra string, rs ...string) *unstructured.Unstructured {
	t.Helper()
	doc := "apiVersion: hubspoke.dev/v1alpha1\nkind: Conversion\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  kind: Widget\n  hub: v1\n  spokes:\n  - version: v1alpha1\n    rules:\n    - " + strings.Join(rs, "\n    - ") + "\n" + extra
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

func parse(t *testing.T, u *unstructured.Unstructured) *rules.File {
	t.Helper()
	f, err := v1alpha1.Parse(u, rules.Options{Funcs: standIns(u)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSameRules(t *testing.T) {
	base := parse(t, conversionDoc(t, "", "rename: {from: spec.replicas, to: spec.size}"))
	tests := []struct {
		name string
		u    *unstructured.Unstructured
		same bool
	}{
		{"the operator's fields only", conversionDoc(t, "  storage: {migrate: true}\n", "rename: {from: spec.replicas, to: spec.size}"), true},
		{"another target", conversionDoc(t, "", "rename: {from: spec.replicas, to: spec.count}"), false},
		{"an equivalent rule of another kind", conversionDoc(t, "", "scale: {from: spec.replicas, to: spec.size, multiply: 1}"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameRules(base, parse(t, tt.u)); got != tt.same {
				t.Errorf("sameRules = %v, want %v", got, tt.same)
			}
		})
	}
}

func TestFuncsPresent(t *testing.T) {
	u := conversionDoc(t, "", "funcs: {name: args-to-options}")
	funcs := standIns(u)
	if len(funcs) != 1 || funcs["args-to-options"] == nil {
		t.Fatalf("standIns = %v", funcs)
	}
	a := &admission{hook: hook}
	with := func(fs ...string) replica {
		return replica{endpoint: endpoint{name: "pod-" + strings.Join(fs, "-"), ready: true}, served: &v1alpha1.Served{Funcs: fs}}
	}
	tests := []struct {
		name string
		reps []replica
		want string // "" allowed
	}{
		{"every ready replica has it", []replica{with("args-to-options", "x"), with("args-to-options")}, ""},
		{"one lacks it", []replica{with("args-to-options"), with("x")}, `replica pod-x has no Go func "args-to-options" (it has: x)`},
		{"an unready replica is not asked", []replica{with("args-to-options"), {endpoint: endpoint{name: "old", ready: false}, served: &v1alpha1.Served{}}}, ""},
		{"nobody to ask", nil, "no ready replica of service hubspoke-system/hubspoke-webhook could be asked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := a.funcsPresent("widgets.example.com", funcs, tt.reps)
			if tt.want == "" {
				if !ok {
					t.Errorf("refused: %s", v.message)
				}
				return
			}
			if ok || !strings.Contains(v.message, tt.want) {
				t.Errorf("got %v %q, want refused with %q", ok, v.message, tt.want)
			}
		})
	}
}
