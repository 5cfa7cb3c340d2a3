package check

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert/rules"
)

// liveObject is an EvolvingWidget as a cluster stores it (v1), with spec
// changed by mod.
func liveObject(t *testing.T, name string, mod func(spec map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile("../examples/evolving-widget/objects/v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]any)["name"] = name
	obj["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Update"}}
	if mod != nil {
		mod(obj["spec"].(map[string]any))
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newLiveWidget(t *testing.T, rulesYAML string) *Live {
	t.Helper()
	crd := loadCRD(t, "../examples/evolving-widget/crd.yaml")
	data, err := os.ReadFile("../examples/evolving-widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if rulesYAML != "" {
		data = []byte(rulesYAML)
	}
	conv, err := rules.Load("conversion.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(crd, conv, "v1")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLiveCleanObjects(t *testing.T) {
	l := newLiveWidget(t, "")
	if diff := cmp.Diff([]string{"v1", "v1alpha1", "v1beta1"}, l.Versions()); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	for _, name := range []string{"a", "b", "c"} {
		if fs := l.Check(liveObject(t, name, nil)); len(fs) > 0 {
			t.Errorf("%s: findings on a clean object: %+v", name, fs)
		}
	}
	r := l.Report()
	if r.LiveObjects != 3 || len(r.Findings) != 0 || len(r.Cases) != 3 {
		t.Fatalf("report: %d objects, %d findings, %d cases; want 3, 0, 3", r.LiveObjects, len(r.Findings), len(r.Cases))
	}
	if !strings.Contains(r.Summary(), "3 live objects") {
		t.Errorf("summary %q does not count the live objects", r.Summary())
	}
}

// TestLiveFindsWhatFails: an object one version refuses (v1alpha1 and its
// round: reject duration), an object the rules lose data of (paused, with
// its hubOnly rule removed), an object that is not an EvolvingWidget and
// one its own schema no longer accepts: each is reported by object, as an
// error but the schema warning, and the objects that pass have no
// finding.
func TestLiveFindsWhatFails(t *testing.T) {
	data, err := os.ReadFile("../examples/evolving-widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lossy := strings.Replace(string(data), "    - hubOnly: {path: spec.paused}\n", "", 1)
	if lossy == string(data) {
		t.Fatal("the example's rule file changed: no hubOnly rule for spec.paused to remove")
	}
	l := newLiveWidget(t, lossy)
	noPaused := func(s map[string]any) { delete(s, "paused") }
	objs := map[string][]byte{
		"ok":      liveObject(t, "ok", noPaused),
		"rounded": liveObject(t, "rounded", func(s map[string]any) { noPaused(s); s["timeout"] = "1.5s" }),
		"paused1": liveObject(t, "paused1", nil),
		"paused2": liveObject(t, "paused2", nil),
		"gizmo":   []byte(`{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"gizmo","namespace":"default"}}`),
		"invalid": liveObject(t, "invalid", func(s map[string]any) { noPaused(s); s["size"] = -1 }),
	}
	got := map[string][]string{}
	for _, name := range []string{"ok", "rounded", "paused1", "paused2", "gizmo", "invalid"} {
		for _, f := range l.Check(objs[name]) {
			got[name] = append(got[name], string(f.Severity)+" "+f.Check+" "+f.From+"->"+f.To+" "+f.Path)
		}
	}
	lostPaused := []string{
		"warning api-server-coerced v1->v1alpha1 /spec/paused", // the API server prunes what v1alpha1 lacks
		"error hub-spoke-hub v1->v1alpha1 /spec/paused",
		"warning api-server-coerced v1beta1->v1alpha1 /spec/paused",
		"error round-trip v1beta1->v1alpha1 /spec/paused",
		"error path-agreement v1->v1beta1 /spec/paused",
	}
	want := map[string][]string{
		"rounded": {"error refused v1->v1alpha1 /spec/timeout", "error refused v1beta1->v1alpha1 /spec/timeout"},
		"paused1": lostPaused,
		"paused2": lostPaused,
		"gizmo":   {"error live-object v1-> "},
		"invalid": {
			"warning live-object v1-> /spec/size",
			// what v1 refuses, the other versions refuse too: warnings
			"warning valid-output v1->v1alpha1 /spec/replicas",
			"warning valid-output v1->v1beta1 /spec/size",
			"warning valid-output v1alpha1->v1 /spec/size",
			"warning valid-output v1beta1->v1 /spec/size",
			"warning valid-output v1alpha1->v1beta1 /spec/size",
			"warning valid-output v1beta1->v1alpha1 /spec/replicas",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings by object (-want +got):\n%s", diff)
	}

	r := l.Report()
	if r.LiveObjects != 6 || len(r.Cases) != 6 {
		t.Errorf("%d objects, %d cases; want 6, 6", r.LiveObjects, len(r.Cases))
	}
	var lost *Finding
	for i, f := range r.Findings {
		if f.Check == LawHubRoundTrip {
			lost = &r.Findings[i]
		}
	}
	if lost == nil {
		t.Fatalf("no hub-spoke-hub finding in the report:\n%s", textOf(r))
	}
	if lost.Count != 2 || !cmp.Equal(lost.Objects, []string{"default/paused1", "default/paused2"}) || lost.Input == nil {
		t.Errorf("the lost field's finding: count %d, objects %v, input %v; want 2 objects and the first as input", lost.Count, lost.Objects, lost.Input)
	}
	if in, _ := lost.Input.(map[string]any); in["metadata"].(map[string]any)["managedFields"] != nil {
		t.Errorf("the finding shows the object's managedFields: %v", in["metadata"])
	}
	text := textOf(r)
	for _, s := range []string{
		"error   refused /spec/timeout: the object as v1 is refused converting to v1alpha1",
		"(objects: default/paused1, default/paused2)",
		"the object read cannot be checked: it is example.com/v1 Gizmo, want example.com/v1 EvolvingWidget (objects: default/gizmo)",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("report lacks %q:\n%s", s, text)
		}
	}
	if r.Errors() != 6 {
		t.Errorf("%d errors, want 6 (refused twice, hub-spoke-hub, round-trip, path-agreement, live-object):\n%s", r.Errors(), text)
	}
}

func TestNewLiveUnknownVersion(t *testing.T) {
	crd := loadCRD(t, "../examples/evolving-widget/crd.yaml")
	conv, err := rules.LoadFile("../examples/evolving-widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewLive(crd, conv, "v2"); err == nil || !strings.Contains(err.Error(), "v2, which the conversion does not know") {
		t.Errorf("NewLive at v2: %v", err)
	}
}
