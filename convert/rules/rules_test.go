package rules_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
)

const head = `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
`

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // substring, including file:line
	}{
		{"not yaml", "a: [", "f.yaml:1:4: not valid YAML"},
		{"wrong apiVersion", strings.Replace(head, "hubspoke.dev/v1alpha1", "v1", 1), "f.yaml:1:13: apiVersion: want hubspoke.dev/v1alpha1"},
		{"wrong kind", strings.Replace(head, "kind: Conversion", "kind: Foo", 1), `f.yaml:2:7: kind: want Conversion, got "Foo"`},
		{"unknown top field", head + "    - rename: {from: spec.a, to: spec.b}\nextra: 1\n", "f.yaml:12:1: extra: unknown field"},
		{"missing hub", strings.Replace(head, "  hub: v1\n", "", 1), "spec.hub: missing"},
		{"unknown rule", head + "    - frobnicate: {from: spec.a}\n", `f.yaml:11:7: spec.spokes[0].rules[0]: unknown rule kind "frobnicate"`},
		{"two keys", head + "    - rename: {from: spec.a, to: spec.b}\n      enum: {}\n", "f.yaml:11:7: spec.spokes[0].rules[0]: a rule is a mapping with exactly one key"},
		{"unknown param", head + "    - rename: {from: spec.a, too: spec.b}\n", "f.yaml:11:30: spec.spokes[0].rules[0].rename.too: unknown field (allowed: from, to, when, restore, dropIfEmpty)"},
		{"rename without to", head + "    - rename: {from: spec.a}\n", "spec.spokes[0].rules[0].rename.to: missing"},
		{"bad path", head + "    - rename: {from: spec..a, to: spec.b}\n", `f.yaml:11:22: spec.spokes[0].rules[0].rename.from: path "spec..a": empty segment`},
		{"metadata path", head + "    - rename: {from: metadata.name, to: spec.b}\n", "f.yaml:11:7: spec.spokes[0].rules[0].rename: rename: from: path metadata.name: the API server restores metadata"},
		{"enum hub value not hub-only", head + "    - enum:\n        from: spec.m\n        values: {A: X, B: Y}\n        hubValues: {X: A}\n", `f.yaml:14:24: spec.spokes[0].rules[0].enum.hubValues.X: hub value "X" is not hub-only: spoke value "A" maps to it`},
		{"enum many to one listed out of order", head + "    - enum:\n        from: spec.m\n        values: {B: X, A: X}\n", `f.yaml:13:21: spec.spokes[0].rules[0].enum.values.B: hub value "X" is reached from spoke values "B", "A" and converts back to "A", the first in sorted order (a Conversion object's mapping keeps no order), not to "B" listed first: name the one it converts back to in hubValues ({X: B})`},
		{"enum many to one back to another", head + "    - enum:\n        from: spec.m\n        values: {A: X, B: X, C: Y}\n        hubValues: {X: C}\n", `f.yaml:14:24: spec.spokes[0].rules[0].enum.hubValues.X: hub value "X" converts back to one of the spoke values that map to it ("A", "B"), not "C"`},
		{"numeric pointer", head + "    - rename: {from: /spec/items/0/x, to: spec.b}\n", `f.yaml:11:22: spec.spokes[0].rules[0].rename.from: path "/spec/items/0/x": segment "0" is a list index`},
		{"numeric dotted", head + "    - rename: {from: spec.items.0.x, to: spec.b}\n", `f.yaml:11:22: spec.spokes[0].rules[0].rename.from: path "spec.items.0.x": segment "0" is a list index`},
		{"different scopes", head + "    - rename: {from: 'spec.a[*].x', to: 'spec.b[*].x'}\n", `f.yaml:11:7: spec.spokes[0].rules[0].rename: rename: spec.a[*].x and spec.b[*].x go through different lists or maps`},
		{"bad selector", head + "    - rename:\n        from: spec.a[x].y\n        to: spec.a[x].z\n", `f.yaml:12:15: spec.spokes[0].rules[0].rename.from: path "spec.a[x].y": [x] is not a selector`},
		{"hubOnly on items", head + "    - hubOnly:\n        path: spec.a[*]\n", `spec.spokes[0].rules[0].hubOnly: hubOnly spec.a[*]: name a field inside the items`},
		{"bad otherwise", head + "    - listToItem: {from: spec.a, otherwise: drop}\n", `otherwise must be fail or keep, got "drop"`},
		{"bad pattern", head + "    - split: {from: spec.a, pattern: \"{a}{b}\"}\n", `spec.spokes[0].rules[0].split.pattern: pattern "{a}{b}": fields "a" and "b" need literal text between them`},
		{"pattern default not a field", head + "    - split: {from: spec.a, pattern: \"{a} {b}\", defaults: {c: x}}\n", `default for "c", which is not a field`},
		{"bad duration spoke", head + "    - duration: {from: spec.a, spoke: float}\n", `spec.spokes[0].rules[0].duration.spoke: want integer`},
		{"yaml missing brace", head + "    - rename: {from: spec.a, to: spec.b\n    - rename: {from: spec.c, to: spec.d}\n", "f.yaml:12:5: not valid YAML"},
		{"yaml selector in a flow mapping", head + "    - rename: {from: spec.a[*].x, to: spec.a[*].y}\n", `f.yaml:11:28: not valid YAML: ',' or '}' must be specified (did not find expected alphabetic or numeric character); in a { } mapping, [ starts a list: quote a path holding [ ] (from: "spec.items[*].img") or write the rule in block style`},
		{"yaml bad indent", head + "    - rename: {from: spec.a, to: spec.b}\n   - rename: {from: spec.c, to: spec.d}\n", "f.yaml:12:4: not valid YAML"},
		{"bad unit", head + "    - duration: {from: spec.a, to: spec.b, unit: days}\n", `f.yaml:11:50: spec.spokes[0].rules[0].duration.unit: unknown unit "days"`},
		{"bad round", head + "    - duration: {from: spec.a, to: spec.b, round: up}\n", `round must be one of reject, floor, ceil, round; got "up"`},
		{"scale zero", head + "    - scale: {from: spec.a, to: spec.b, multiply: 0}\n", `spec.spokes[0].rules[0].scale.multiply: want a positive integer, got "0"`},
		{"scale both", head + "    - scale: {from: spec.a, to: spec.b, multiply: 2, divide: 2}\n", "set exactly one of multiply and divide"},
		{"listToMap without key", head + "    - listToMap: {from: spec.a, to: spec.b}\n", "key is required"},
		{"listToMap bad keyType", head + "    - listToMap: {from: spec.a, key: k, keyType: bool}\n", "keyType must be string or integer"},
		{"unregistered funcs", head + "    - funcs: {name: legacy}\n", `f.yaml:11:21: spec.spokes[0].rules[0].funcs.name: no Go function "legacy" is registered`},
		{"hub as spoke", strings.Replace(head, "version: v1alpha1", "version: v1", 1), "f.yaml:9:14: spec.spokes[0].version: v1 is the hub"},
		{"duplicate spoke", head + "    - rename: {from: spec.a, to: spec.b}\n  - version: v1alpha1\n", "spoke v1alpha1 is already declared at line 9"},
		{"bad default", head + "    - hubOnly: {path: spec.a, default: [}\n", "f.yaml:"},
		{"two documents", head + "    - rename: {from: spec.a, to: spec.b}\n---\nfoo: 1\n", "a rule file holds one document"},
		{"rules not a list", strings.TrimSuffix(head, "\n") + " {}\n", "spec.spokes[0].rules: want a list of rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Load("f.yaml", []byte(tt.doc))
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.doc)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, tt.want)
			}
		})
	}
}

func TestLoadEveryRuleKind(t *testing.T) {
	f, err := rules.ParseFile("../../examples/evolving-widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, s := range f.Spokes {
		for _, r := range s.Rules {
			kinds[r.Type] = true
			if r.Line == 0 || r.Rule == nil {
				t.Errorf("rule %s: line %d, rule %v", r.Type, r.Line, r.Rule)
			}
		}
	}
	for _, k := range []string{"rename", "enum", "duration", "intToString", "listToMap", "scale", "hubOnly", "spokeOnly"} {
		if !kinds[k] {
			t.Errorf("evolving-widget does not use rule kind %s", k)
		}
	}
	c, err := f.Converter()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Versions(), ","); got != "v1,v1alpha1,v1beta1" {
		t.Errorf("versions %s", got)
	}
}

func TestFuncsRegistered(t *testing.T) {
	r, err := convert.Funcs("double", func(o *convert.Object) error {
		var n int
		if ok, err := o.Decode(convert.MustPath("spec.n"), &n); err != nil || !ok {
			return err
		}
		return o.Encode(convert.MustPath("spec.n"), n*2)
	}, func(o *convert.Object) error {
		var n int
		if ok, err := o.Decode(convert.MustPath("spec.n"), &n); err != nil || !ok {
			return err
		}
		if n%2 != 0 {
			return errors.New("odd value cannot be halved")
		}
		return o.Encode(convert.MustPath("spec.n"), n/2)
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rules.Load("f.yaml", []byte(head+"    - funcs: {name: double}\n"), rules.Options{Funcs: map[string]convert.Rule{"double": r}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"n":21}}`), "example.com/v1")
	if err != nil || string(out) != `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"n":42}}` {
		t.Fatalf("got %s, %v", out, err)
	}
	_, err = c.Convert(nil, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","spec":{"n":3}}`), "example.com/v1alpha1")
	if err == nil || !strings.Contains(err.Error(), "rule funcs double: odd value cannot be halved") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzLoad: any bytes give a converter or an error, never a panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(head + "    - rename: {from: spec.a, to: spec.b}\n"))
	f.Add([]byte(head + "    - enum: {from: spec.m, values: {A: B}}\n    - listToMap: {from: spec.l, key: k, order: ignore}\n"))
	f.Add([]byte(head + "    - duration: {from: spec.a, to: spec.b, unit: ms, round: floor}\n    - hubOnly: {path: spec.p, default: {a: [1]}}\n"))
	f.Add([]byte(head + "    - rename:\n        from: spec.s[name=*].a\n        to: spec.s[name=*].b\n"))
	f.Add([]byte(head + "    - split: {from: spec.s, pattern: \"{a} {b}\", defaults: {b: x}, otherwise: keep}\n"))
	f.Add([]byte(head + "    - enum: {from: spec.m, values: {A: X, B: X}, hubValues: {Y: A}}\n"))
	f.Add([]byte(head + "    - rename: {from: spec.a, to: spec.b\n"))
	f.Add([]byte("a: *b\n"))
	f.Add([]byte("- &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := rules.Load("f.yaml", data)
		if err == nil && c == nil {
			t.Fatal("nil converter without an error")
		}
		if err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// TestFleetUsesEveryNewForm: the fleet example loads, and uses every rule
// kind added with the paths through lists and maps, with those paths.
func TestFleetUsesEveryNewForm(t *testing.T) {
	f, err := rules.ParseFile("../../examples/fleet/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	selectors := map[string]bool{}
	for _, s := range f.Spokes {
		for _, r := range s.Rules {
			kinds[r.Type] = true
			if r.Line == 0 || r.Rule == nil {
				t.Errorf("rule %s: line %d, rule %v", r.Type, r.Line, r.Rule)
			}
			for _, p := range []convert.Path{r.From, r.To} {
				if s := p.String(); strings.Contains(s, "[name=*]") {
					selectors["[name=*]"] = true
				} else if strings.Contains(s, ".*") {
					selectors[".*"] = true
				}
			}
			if r.Type == "duration" && r.Params["spoke"] == "string" {
				kinds["duration spoke string"] = true
			}
			if v, ok := r.Params["hubValues"].(map[string]string); ok && len(v) > 0 {
				kinds["enum hubValues"] = true
			}
		}
	}
	for _, k := range []string{"rename", "enum", "enum hubValues", "hubOnly", "scale", "duration", "duration spoke string",
		"mapToList", "listToItem", "itemToList", "split", "join", "cel"} {
		if !kinds[k] {
			t.Errorf("fleet does not use %s", k)
		}
	}
	for _, s := range []string{"[name=*]", ".*"} {
		if !selectors[s] {
			t.Errorf("fleet has no path with %s", s)
		}
	}
}

// TestKindsAreDocumented: every rule kind the loader knows has a section in
// docs/rules.md.
func TestKindsAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rules.Load("f.yaml", []byte(head+"    - frobnicate: {}\n"))
	msg := err.Error()
	list := msg[strings.Index(msg, "want one of ")+len("want one of ") : strings.LastIndex(msg, ")")]
	for _, k := range strings.Split(list, ", ") {
		if !strings.Contains(string(doc), "### "+k) && !strings.Contains(string(doc), " and "+k+"\n") && !strings.Contains(string(doc), "- "+k+": ") {
			t.Errorf("rule kind %s has no section in docs/rules.md", k)
		}
	}
}

// TestMergeKeys: YAML merge keys in rule files, as Kubernetes' YAML reader
// takes them: a rule shared by anchor and merged into another that
// overrides what differs; a key of the mapping wins over a merged one, an
// earlier merged mapping over a later one; errors at the merged key's own
// line.
func TestMergeKeys(t *testing.T) {
	f, err := rules.Parse("f.yaml", []byte(head+`    - duration: &d {from: spec.timeout, to: spec.timeoutSeconds, unit: s, round: floor, spoke: string}
    - duration:
        <<: *d
        from: spec.interval
        to: spec.intervalSeconds
    - duration:
        <<: [{unit: ms}, *d]
        from: spec.delay
        to: spec.delayMillis
    - <<: {rename: {from: spec.a, to: spec.b}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range f.Spokes[0].Rules {
		got = append(got, r.Rule.String())
	}
	want := []string{
		"duration spec.timeout -> spec.timeoutSeconds (unit s, round floor, spoke string)",
		"duration spec.interval -> spec.intervalSeconds (unit s, round floor, spoke string)",
		"duration spec.delay -> spec.delayMillis (unit ms, round floor, spoke string)",
		"rename spec.a -> spec.b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = rules.Parse("f.yaml", []byte(head+"    - rename: &r {from: spec.a, to: spec.b}\n    - rename: {<<: *r, too: spec.c}\n"))
	if err == nil || !strings.Contains(err.Error(), "f.yaml:12:24: spec.spokes[0].rules[1].rename.too: unknown field") {
		t.Errorf("error %v, want the unknown field at its own line", err)
	}
	_, err = rules.Parse("f.yaml", []byte(head+"    - rename: {from: spec.a, from: spec.b, to: spec.c}\n"))
	if err == nil || !strings.Contains(err.Error(), "rename.from: set twice") {
		t.Errorf("error %v, want a key set twice", err)
	}
}

// TestEnumWayBackIgnoresOrder: a hub value several spoke values map to
// converts back to the one hubValues names, else to the first in sorted
// order, however the mapping is listed: a Conversion object stored by the
// API server holds its keys sorted, and must mean what its file meant.
func TestEnumWayBackIgnoresOrder(t *testing.T) {
	tests := []struct{ name, enum, want string }{
		{"sorted first", "{from: spec.m, values: {Fast: P, Quick: P}}", "Fast"},
		{"named, listed second", "{from: spec.m, values: {Fast: P, Quick: P}, hubValues: {P: Quick}}", "Quick"},
		{"named, listed first", "{from: spec.m, values: {Quick: P, Fast: P}, hubValues: {P: Quick}}", "Quick"},
		{"named, sorted first, listed second", "{from: spec.m, values: {Quick: P, Fast: P}, hubValues: {P: Fast}}", "Fast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := rules.Load("f.yaml", []byte(head+"    - enum: "+tt.enum+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"m":"P"}}`), "example.com/v1alpha1")
			if err != nil {
				t.Fatal(err)
			}
			if want := `"spec":{"m":"` + tt.want + `"}`; !strings.Contains(string(out), want) {
				t.Errorf("got %s, want %s", out, want)
			}
		})
	}
}
