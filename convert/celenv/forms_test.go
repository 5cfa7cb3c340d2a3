package celenv_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
)

// obj is a Job of version v with the metadata members meta (after the
// name) and the spec spec.
func obj(v, meta, spec string) string {
	return `{"apiVersion":"example.com/` + v + `","kind":"Job","metadata":{"name":"j"` + meta + `},"spec":` + spec + `}`
}

// pres is the metadata member of a preserved annotation holding data.
func pres(data string) string {
	return `,"annotations":{"hubspoke.dev/preserved":` + strconvQuote(data) + `}`
}

func strconvQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// TestRulesV3BothWays (issue 27, "what the rules cannot say yet"): each
// new form converts as written, and its output converts back to the input
// byte for byte (through the preserved annotation where the other version
// cannot tell).
func TestRulesV3BothWays(t *testing.T) {
	tests := []struct {
		name, rules string
		in, to      string
		want        string
		back        string // what the way back gives when it is not in
	}{
		// Rules on absence.
		{"missing spoke field is false in the hub", "    - missing: {path: spec.enabled, hub: false}\n",
			obj("v1alpha1", "", `{}`), "v1", obj("v1", "", `{"enabled":false}`), ""},
		{"explicit false is told from missing", "    - missing: {path: spec.enabled, hub: false}\n",
			obj("v1alpha1", "", `{"enabled":false}`), "v1", obj("v1", pres(`{"v1alpha1":{"presence":{"/spec/enabled":true}}}`), `{"enabled":false}`), ""},
		{"hub false is a missing spoke field", "    - missing: {path: spec.enabled, hub: false}\n",
			obj("v1", "", `{"enabled":false}`), "v1alpha1", obj("v1alpha1", "", `{}`), ""},
		{"missing on both sides stays missing", "    - missing: {path: spec.enabled, hub: false}\n",
			obj("v1", "", `{}`), "v1alpha1", obj("v1alpha1", pres(`{"v1":{"presence":{"/spec/enabled":false}}}`), `{}`), ""},
		{"nil is the default", "    - missing: {path: spec.replicas, spoke: 1}\n",
			obj("v1", "", `{}`), "v1alpha1", obj("v1alpha1", "", `{"replicas":1}`), ""},
		{"a value is written inside an existing parent only", "    - missing: {path: spec.enabled, hub: false}\n",
			`{"apiVersion":"example.com/v1alpha1","kind":"Job","metadata":{"name":"j"}}`, "v1", `{"apiVersion":"example.com/v1","kind":"Job","metadata":{"name":"j"}}`, ""},

		// constant and drop.
		{"constant in the hub", "    - constant: {path: spec.format.version, value: 2}\n",
			obj("v1alpha1", "", `{"a":1}`), "v1", obj("v1", "", `{"a":1,"format":{"version":2}}`), ""},
		{"another hub value is kept", "    - constant: {path: spec.format, value: v2}\n",
			obj("v1", "", `{"format":"v3"}`), "v1alpha1", obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/format":"v3"}}}`), `{}`), ""},
		{"a constant in the spoke", "    - constant: {path: spec.legacy, value: true, in: spoke}\n",
			obj("v1", "", `{}`), "v1alpha1", obj("v1alpha1", "", `{"legacy":true}`), ""},
		{"drop keeps what fits", "    - drop: {path: spec.debug, acknowledgeLoss: debug output is for v1alpha1 only}\n",
			obj("v1alpha1", "", `{"debug":{"trace":true},"a":1}`), "v1", obj("v1", pres(`{"v1alpha1":{"fields":{"/spec/debug":{"trace":true}}}}`), `{"a":1}`),
			obj("v1alpha1", "", `{"a":1,"debug":{"trace":true}}`)}, // restored last, as spokeOnly restores
		{"drop in the hub", "    - drop: {path: spec.debug, in: hub, acknowledgeLoss: v1alpha1 clients do not need it}\n",
			obj("v1", "", `{"debug":1}`), "v1alpha1", obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/debug":1}}}`), `{}`), ""},

		// Integer, number and boolean enums.
		{"integer enum", "    - enum: {from: spec.level, values: {0: Low, 1: Medium, 2: High}}\n",
			obj("v1alpha1", "", `{"level":2}`), "v1", obj("v1", "", `{"level":"High"}`), ""},
		{"integer enum spelled 2.0 is kept exact", "    - enum: {from: spec.level, values: {0: Low, 2: High}}\n",
			obj("v1alpha1", "", `{"level":2.0}`), "v1", obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/level":{"value":2.0,"as":"High"}}}}`), `{"level":"High"}`), ""},
		{"string to integer enum", "    - enum: {from: spec.level, values: {Low: 0, High: 2}}\n",
			obj("v1", "", `{"level":2}`), "v1alpha1", obj("v1alpha1", "", `{"level":"High"}`), ""},
		{"boolean enum", "    - enum: {from: spec.on, values: {true: Enabled, false: Disabled}}\n",
			obj("v1alpha1", "", `{"on":false}`), "v1", obj("v1", "", `{"on":"Disabled"}`), ""},
		{"number enum", "    - enum: {from: spec.ratio, values: {0.5: Half, 1: Full}}\n",
			obj("v1", "", `{"ratio":"Half"}`), "v1alpha1", obj("v1alpha1", "", `{"ratio":0.5}`), ""},
		{"a quoted number is a string", `    - enum: {from: spec.v, values: {"1": one}}` + "\n",
			obj("v1alpha1", "", `{"v":"1"}`), "v1", obj("v1", "", `{"v":"one"}`), ""},

		// Quantities.
		{"quantity to bytes", "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer}\n",
			obj("v1alpha1", "", `{"memory":"50Gi"}`), "v1", obj("v1", "", `{"memoryBytes":53687091200}`), ""},
		{"non-canonical quantity kept exact", "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer}\n",
			obj("v1alpha1", "", `{"memory":"1024Mi"}`), "v1", obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/memory":{"value":"1024Mi","as":1073741824}}}}`), `{"memoryBytes":1073741824}`), ""},
		{"bytes to quantity", "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer}\n",
			obj("v1", "", `{"memoryBytes":1536}`), "v1alpha1", obj("v1alpha1", "", `{"memory":"1536"}`), ""},
		{"decimal format", "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer, format: DecimalSI}\n",
			obj("v1", "", `{"memoryBytes":2000}`), "v1alpha1", obj("v1alpha1", "", `{"memory":"2k"}`), ""},
		{"quantity to object", "    - quantity: {from: spec.size, spoke: string, hub: object}\n",
			obj("v1alpha1", "", `{"size":"50Gi"}`), "v1", obj("v1", "", `{"size":{"value":50,"unit":"Gi"}}`), ""},
		{"quantity to object, spelling kept", "    - quantity: {from: spec.size, spoke: string, hub: object}\n",
			obj("v1alpha1", "", `{"size":"1.50Gi"}`), "v1", obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/size":{"value":"1.50Gi","as":{"value":1.5,"unit":"Gi"}}}}}`), `{"size":{"value":1.5,"unit":"Gi"}}`), ""},
		{"object without unit", "    - quantity: {from: spec.size, spoke: string, hub: object}\n",
			obj("v1", "", `{"size":{"value":250}}`), "v1alpha1", obj("v1alpha1", "", `{"size":"250"}`), ""},
		{"no integer form kept aside", "    - quantity: {from: spec.cpu, to: spec.cores, spoke: string, hub: integer, otherwise: keep}\n",
			obj("v1alpha1", "", `{"cpu":"1500m"}`), "v1", obj("v1", pres(`{"v1alpha1":{"fields":{"/spec/cpu":"1500m"}}}`), `{}`), ""},

		// scale by a non-divisor.
		{"rounded, exact value kept", "    - scale: {from: spec.bytes, to: spec.kib, divide: 1024, round: ceil}\n",
			obj("v1alpha1", "", `{"bytes":1000}`), "v1", obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/bytes":{"value":1000,"as":1}}}}`), `{"kib":1}`), ""},
		{"a divisor needs nothing kept", "    - scale: {from: spec.bytes, to: spec.kib, divide: 1024, round: floor}\n",
			obj("v1alpha1", "", `{"bytes":2048}`), "v1", obj("v1", "", `{"kib":2}`), ""},

		// Recursive selectors.
		{"routes to any depth", "    - rename: {from: 'spec.routes[**].t', to: 'spec.routes[**].timeout'}\n",
			obj("v1alpha1", "", `{"routes":[{"t":1,"routes":[{"t":2,"routes":[{"t":3}]},{"x":1}]},{"t":4}]}`), "v1",
			obj("v1", "", `{"routes":[{"timeout":1,"routes":[{"timeout":2,"routes":[{"timeout":3}]},{"x":1}]},{"timeout":4}]}`), ""},
		{"kept by position at any depth", "    - hubOnly: {path: 'spec.routes[**].weight'}\n",
			obj("v1", "", `{"routes":[{"routes":[{"weight":2}]}]}`), "v1alpha1",
			obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/routes/0/routes/0/weight":2}}}`), `{"routes":[{"routes":[{}]}]}`), ""},

		// listToItem with an empty list that is absent.
		{"empty list is absent", "    - listToItem: {from: spec.homes, to: spec.home, empty: absent}\n",
			obj("v1alpha1", "", `{"homes":[]}`), "v1", obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/homes":{"value":[]}}}}`), `{}`), ""},
		{"absent is absent", "    - listToItem: {from: spec.homes, to: spec.home, empty: absent}\n",
			obj("v1", "", `{}`), "v1alpha1", obj("v1alpha1", "", `{}`), ""},
		{"one item", "    - listToItem: {from: spec.homes, to: spec.home, empty: absent}\n",
			obj("v1alpha1", "", `{"homes":[{"a":1}]}`), "v1", obj("v1", "", `{"home":{"a":1}}`), ""},
		{"empty list in the hub", "    - itemToList: {from: spec.home, to: spec.homes, empty: absent}\n",
			obj("v1", "", `{"homes":[]}`), "v1alpha1", obj("v1alpha1", pres(`{"v1":{"exact":{"/spec/homes":{"value":[]}}}}`), `{}`), ""},

		// Restore policy and drop if empty.
		{"the kept value wins", "    - hubOnly: {path: spec.paused, restore: kept}\n",
			obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/paused":true}}}`), `{"paused":false}`), "v1", obj("v1", "", `{"paused":true}`),
			obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/paused":true}}}`), `{}`)},
		{"the edit wins by default", "    - hubOnly: {path: spec.paused}\n",
			obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/paused":true}}}`), `{"paused":false}`), "v1", obj("v1", "", `{"paused":false}`),
			obj("v1alpha1", pres(`{"v1":{"fields":{"/spec/paused":false}}}`), `{}`)},
		{"the kept exact value wins", "    - enum: {from: spec.mode, values: {Fast: Performance, Quick: Performance, Slow: Economy}, restore: kept}\n",
			obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/mode":{"value":"Quick","as":"Performance"}}}}`), `{"mode":"Economy"}`), "v1alpha1", obj("v1alpha1", "", `{"mode":"Quick"}`),
			obj("v1", pres(`{"v1alpha1":{"exact":{"/spec/mode":{"value":"Quick","as":"Performance"}}}}`), `{"mode":"Performance"}`)},
		{"an empty object is dropped", `    - cel: {from: spec.poolRef, toHub: self, fromHub: '{?"apiGroup": self.apiGroup != "" ? optional.of(self.apiGroup) : optional.none()}', otherwise: keep, dropIfEmpty: true}` + "\n",
			obj("v1", "", `{"poolRef":{"apiGroup":""}}`), "v1alpha1", obj("v1alpha1", pres(`{"v1":{"exact":{"/spec/poolRef":{"value":{"apiGroup":""}}}}}`), `{}`), ""},

		// Conditions and the object context.
		{"when holds", `    - rename: {from: spec.a, to: spec.b, when: 'object.metadata.namespace == "prod"'}` + "\n",
			obj("v1alpha1", `,"namespace":"prod"`, `{"a":1}`), "v1", obj("v1", `,"namespace":"prod"`, `{"b":1}`), ""},
		{"when does not hold", `    - rename: {from: spec.a, to: spec.b, when: 'object.metadata.namespace == "prod"'}` + "\n",
			obj("v1alpha1", `,"namespace":"dev"`, `{"a":1}`), "v1", obj("v1", `,"namespace":"dev"`, `{"a":1}`), ""},
		{"when on each item", `    - rename: {from: 'spec.items[*].a', to: 'spec.items[*].b', when: 'self.kind == "x"'}` + "\n",
			obj("v1alpha1", "", `{"items":[{"kind":"x","a":1},{"kind":"y","a":2}]}`), "v1", obj("v1", "", `{"items":[{"kind":"x","b":1},{"kind":"y","a":2}]}`), ""},
		{"derived from a label", `    - hubOnly: {path: spec.clusterName, derive: 'object.metadata.labels["example.com/cluster"]'}` + "\n",
			obj("v1alpha1", `,"labels":{"example.com/cluster":"c1"}`, `{}`), "v1", obj("v1", `,"labels":{"example.com/cluster":"c1"}`, `{"clusterName":"c1"}`), ""},
		{"the derived value is not kept", `    - hubOnly: {path: spec.clusterName, derive: 'object.metadata.labels["example.com/cluster"]'}` + "\n",
			obj("v1", `,"labels":{"example.com/cluster":"c1"}`, `{"clusterName":"c1"}`), "v1alpha1", obj("v1alpha1", `,"labels":{"example.com/cluster":"c1"}`, `{}`), ""},
		{"cel reads the namespace", `    - cel: {from: spec.ns, toHub: 'self == object.metadata.namespace ? optional.none() : optional.of(self)', fromHub: self, otherwise: keep}` + "\n",
			obj("v1alpha1", `,"namespace":"a"`, `{"ns":"b"}`), "v1", obj("v1", `,"namespace":"a"`, `{"ns":"b"}`), ""},

		// Data in labels and annotations.
		{"a label to a field", `    - rename: {from: 'metadata.labels["example.com/cluster"]', to: spec.clusterName}` + "\n",
			obj("v1alpha1", `,"labels":{"app":"x","example.com/cluster":"c1"}`, `{"a":1}`), "v1", obj("v1", `,"labels":{"app":"x"}`, `{"a":1,"clusterName":"c1"}`), ""},
		{"a field to a label the hub has too", `    - rename: {from: 'metadata.labels["example.com/cluster"]', to: spec.clusterName}` + "\n",
			obj("v1", `,"labels":{"example.com/cluster":"c2"}`, `{"clusterName":"c1"}`), "v1alpha1",
			obj("v1alpha1", `,"labels":{"example.com/cluster":"c1"},"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/metadata/labels/example.com~1cluster\":\"c2\"}}}"}`, `{}`), ""},
		{"an annotation", `    - intToString: {from: spec.build, to: 'metadata.annotations["example.com/build"]'}` + "\n",
			obj("v1alpha1", "", `{"build":42}`), "v1", obj("v1", `,"annotations":{"example.com/build":"42"}`, `{}`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := load(t, tt.rules)
			out, err := c.Convert(nil, []byte(tt.in), "example.com/"+tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(out)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			from := tt.in[len(`{"apiVersion":"`):strings.Index(tt.in, `","kind"`)]
			back, err := c.Convert(nil, out, from)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.in
			if tt.back != "" {
				want = tt.back
			}
			if diff := cmp.Diff(want, string(back)); diff != "" {
				t.Errorf("back (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRulesV3Errors: what the new forms refuse, and how they say it.
func TestRulesV3Errors(t *testing.T) {
	tests := []struct{ name, rules, in, to, want string }{
		{"fail refuses with its message", `    - cel: {from: spec.n, toHub: 'self < 0 ? fail("n must not be negative") : self', fromHub: self}` + "\n",
			obj("v1alpha1", "", `{"n":-1}`), "v1", `at /spec/n: rule cel spec.n: toHub refuses -1: n must not be negative`},
		{"a label value the API server refuses", `    - rename: {from: 'metadata.labels["example.com/cluster"]', to: spec.clusterName}` + "\n",
			obj("v1", "", `{"clusterName":"not a label"}`), "v1alpha1", `value "not a label" cannot be the value of label example.com/cluster`},
		{"a label holds strings", `    - rename: {from: 'metadata.labels["example.com/n"]', to: spec.n}` + "\n",
			obj("v1", "", `{"n":3}`), "v1alpha1", `value 3 is a number; labels hold strings`},
		{"no integer form", "    - quantity: {from: spec.cpu, to: spec.cores, spoke: string, hub: integer}\n",
			obj("v1alpha1", "", `{"cpu":"1500m"}`), "v1", `quantity "1500m" is not a whole number of base units within int64 (otherwise: fail`},
		{"not a quantity", "    - quantity: {from: spec.cpu, to: spec.cores, spoke: string, hub: integer}\n",
			obj("v1alpha1", "", `{"cpu":"lots"}`), "v1", `value "lots" is not a quantity`},
		{"an enum value outside the mapping", "    - enum: {from: spec.level, values: {0: Low, 2: High}}\n",
			obj("v1alpha1", "", `{"level":1}`), "v1", `value 1 is not mapped; allowed values: 0, 2`},
		{"scale still refuses by default", "    - scale: {from: spec.bytes, to: spec.kib, divide: 1024}\n",
			obj("v1alpha1", "", `{"bytes":1000}`), "v1", `1000 is not a multiple of 1024`},
		{"when must give a boolean", `    - rename: {from: spec.a, to: spec.b, when: 'object.metadata.name'}` + "\n",
			obj("v1alpha1", "", `{"a":1}`), "v1", `rule rename spec.a -> spec.b: when object.metadata.name gives "j", not a boolean`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := load(t, tt.rules)
			_, err := c.Convert(nil, []byte(tt.in), "example.com/"+tt.to)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestRulesV3LoadErrors: what the loader refuses in the new forms.
func TestRulesV3LoadErrors(t *testing.T) {
	tests := []struct{ name, rules, want string }{
		{"drop without a reason", "    - drop: {path: spec.debug}\n", "spec.spokes[0].rules[0].drop.acknowledgeLoss: missing: a drop loses data"},
		{"missing without a value", "    - missing: {path: spec.a}\n", "spec.spokes[0].rules[0].missing.hub: missing: give hub"},
		{"quantity forms", "    - quantity: {from: spec.a, spoke: string, hub: string}\n", "both hold the string form"},
		{"quantity form unknown", "    - quantity: {from: spec.a, spoke: string, hub: bytes}\n", "quantity.hub: want string, integer or object"},
		{"bad restore", "    - rename: {from: spec.a, to: spec.b, restore: always}\n", "rename.restore: want edit"},
		{"bad when", "    - rename: {from: spec.a, to: spec.b, when: 'self +'}\n", "rename.when: compiling"},
		{"renaming the children's key", "    - rename: {from: 'spec.routes[**].routes', to: 'spec.routes[**].children'}\n", `change "routes", the key under which the items of [**] hold their children`},
		{"tree selector without its key", "    - rename: {from: 'spec.a[*][**].x', to: 'spec.a[*][**].y'}\n", "[**] follows the key of its list"},
		{"a hub-only label", `    - hubOnly: {path: 'metadata.labels["a"]'}` + "\n", "labels and annotations are in every version"},
		{"metadata name", "    - rename: {from: metadata.name, to: spec.name}\n", "a rule may name one label or annotation by its key"},
		{"a merge key that is not a mapping", "    - <<: 3\n", "a merge key takes a mapping"},
		{"derive and default", "    - hubOnly: {path: spec.a, default: 1, derive: self}\n", "give a default or a derived value, not both"},
		{"null enum value", "    - enum: {from: spec.a, values: {1: null}}\n", "want a string, a number or a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadErr(tt.rules)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func loadErr(rs string) (*convert.Converter, error) { return rules.Load("f.yaml", []byte(head+rs)) }

// TestRulesV3CELRoundTrip: the round-trip laws hold for the forms of
// rules v3 that run CEL (when, derive, object, dropIfEmpty on a cel rule),
// through JSON as the API server stores it, both ways.
func TestRulesV3CELRoundTrip(t *testing.T) {
	c := load(t, `    - rename: {from: spec.a, to: spec.b, when: 'object.metadata.namespace == "prod"'}
    - hubOnly: {path: spec.clusterName, derive: 'object.metadata.?labels[?"example.com/cluster"]'}
    - cel: {from: spec.ns, toHub: 'self == object.metadata.namespace ? optional.none() : optional.of(self)', fromHub: self, otherwise: keep}
    - cel: {from: spec.ref, toHub: self, fromHub: '{?"group": self.?group.orValue("") != "" ? self.?group : optional.none()}', otherwise: keep, dropIfEmpty: true}
`)
	str := rapid.SampledFrom([]string{"", "c1", "prod", "dev"})
	object := func(t *rapid.T, v string, fields ...string) map[string]any {
		spec := map[string]any{}
		md := map[string]any{"name": "j", "namespace": rapid.SampledFrom([]string{"prod", "dev"}).Draw(t, "namespace")}
		if rapid.Bool().Draw(t, "label?") {
			md["labels"] = map[string]any{"example.com/cluster": str.Draw(t, "label")}
		}
		for _, f := range fields {
			if !rapid.Bool().Draw(t, f+"?") {
				continue
			}
			if f == "ref" {
				ref := map[string]any{}
				if rapid.Bool().Draw(t, "group?") {
					ref["group"] = str.Draw(t, "group")
				}
				spec[f] = ref
				continue
			}
			spec[f] = str.Draw(t, f)
		}
		return map[string]any{"apiVersion": "example.com/" + v, "kind": "Job", "metadata": md, "spec": spec}
	}
	check := func(t *rapid.T, in map[string]any, there, back string) {
		raw, _ := json.Marshal(in)
		mid, err := c.Convert(nil, raw, there)
		if err != nil {
			t.Fatalf("to %s: %v\n%s", there, err, raw)
		}
		var stored any
		_ = json.Unmarshal(mid, &stored)
		mid, _ = json.Marshal(stored) // as the API server stores it
		out, err := c.Convert(nil, mid, back)
		if err != nil {
			t.Fatalf("back to %s: %v\nvia %s", back, err, mid)
		}
		var got any
		_ = json.Unmarshal(out, &got)
		if diff := cmp.Diff(stored0(raw), got); diff != "" {
			t.Fatalf("round trip through %s (-want +got):\n%s\nvia %s", there, diff, mid)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		check(t, object(t, "v1alpha1", "a", "ns", "ref"), "example.com/v1", "example.com/v1alpha1")
	})
	rapid.Check(t, func(t *rapid.T) {
		check(t, object(t, "v1", "b", "clusterName", "ns", "ref"), "example.com/v1alpha1", "example.com/v1")
	})
}

func stored0(raw []byte) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}
