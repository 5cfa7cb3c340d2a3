package convert

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// convertObserved converts in with c and reports whether the scan did a
// rename (fusedList) on the way.
func convertObserved(c *Converter, in []byte, to string) ([]byte, error, bool) {
	st := getState()
	defer putState(st)
	out, err := c.convert(st, nil, in, to)
	return out, err, st.p.fusedDone != 0
}

func mustNew(t testing.TB, def Definition) *Converter {
	t.Helper()
	c, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustRule(t testing.TB) func(Rule, error) Rule {
	return func(r Rule, err error) Rule {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// TestFusedRenameIsTheRule holds the rename the scan does on a list to the
// rule's: the same bytes out, the same errors, on compact lists (the path
// the scan takes) and on everything that makes it give up (space, escaped
// keys, both keys, duplicate keys, items that are not objects, deep or odd
// values, apiVersion not first), through one spoke and through two.
func TestFusedRenameIsTheRule(t *testing.T) {
	r := mustRule(t)
	c := mustNew(t, Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{
		{Version: "v0", Rules: []Rule{
			r(Rename(MustPath("spec.items[*].a"), MustPath("spec.items[*].b"))),
			r(Rename(MustPath("spec.x"), MustPath("spec.y"))),
		}},
		{Version: "v2", Rules: []Rule{r(Rename(MustPath("spec.others[*].b"), MustPath("spec.others[*].bb")))}},
	}})
	keys := []string{`"a"`, `"b"`, `"c"`, `"\u0061"`, `"bb"`, `"a"`}
	values := []string{`1`, `"s"`, `{"x":[1,2]}`, `-0.5`, `true`, `null`, `"é"`, `"a\"b"`, `[]`, `12345678901234567890`, `0`, `"` + strings.Repeat("z", 70) + `"`}
	item := rapid.Custom(func(t *rapid.T) string {
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0:
			return rapid.SampledFrom([]string{`"s"`, `null`, `1`, `[]`, `{}`}).Draw(t, "scalar")
		case 1:
			return `{ "a":1}`
		}
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range rapid.SliceOfN(rapid.SampledFrom(keys), 1, 4).Draw(t, "keys") {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k + ":" + rapid.SampledFrom(values).Draw(t, "value"))
		}
		b.WriteByte('}')
		return b.String()
	})
	rapid.Check(t, func(t *rapid.T) {
		for range 10 {
			fusedCase(t, c, item)
		}
	})
}

func fusedCase(t *rapid.T, c *Converter, item *rapid.Generator[string]) {
	items := rapid.SliceOfN(item, 0, 6).Draw(t, "items")
	sep := ","
	if rapid.IntRange(0, 9).Draw(t, "space") == 0 {
		sep = ", "
	}
	list := "[" + strings.Join(items, sep) + "]"
	field := rapid.SampledFrom([]string{"items", "others"}).Draw(t, "list")
	body := fmt.Sprintf(`"kind":"K","metadata":{"name":"n"},"spec":{"x":1,%q:%s}`, field, list)
	for _, d := range [][2]string{{"g/v0", "g/v1"}, {"g/v1", "g/v0"}, {"g/v0", "g/v2"}, {"g/v2", "g/v0"}, {"g/v1", "g/v2"}} {
		in := `{"apiVersion":"` + d[0] + `",` + body + `}`
		if rapid.IntRange(0, 9).Draw(t, "apiVersion last") == 0 {
			in = `{` + body + `,"apiVersion":"` + d[0] + `"}`
		}
		got, err, _ := convertObserved(c, []byte(in), d[1])
		noFusedRenames = true
		want, werr, ran := convertObserved(c, []byte(in), d[1])
		noFusedRenames = false
		if ran {
			t.Fatal("noFusedRenames did not stop the scan's renames")
		}
		if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("%s to %s:\nscan %s %v\nrule %s %v", in, d[1], got, err, want, werr)
		}
	}
}

// TestFusedRenameRuns: the scan does the rename where it may, so that the
// test above compares two paths, not one.
func TestFusedRenameRuns(t *testing.T) {
	r := mustRule(t)
	c := mustNew(t, Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{
		r(Rename(MustPath("spec.items[*].a"), MustPath("spec.items[*].b"))),
	}}}})
	for _, tc := range []struct {
		in, to, want string
		ran          bool
	}{
		{`{"apiVersion":"g/v0","kind":"K","spec":{"items":[{"a":1,"c":{"a":2}},{"c":3},{"a":"x"}]}}`, "g/v1",
			`{"apiVersion":"g/v1","kind":"K","spec":{"items":[{"b":1,"c":{"a":2}},{"c":3},{"b":"x"}]}}`, true},
		{`{"apiVersion":"g/v1","kind":"K","spec":{"items":[{"c":1,"b":2}]}}`, "g/v0",
			`{"apiVersion":"g/v0","kind":"K","spec":{"items":[{"c":1,"a":2}]}}`, true},
		{`{"apiVersion":"g/v0","kind":"K","spec":{"items":[{"c":1}]}}`, "g/v1",
			`{"apiVersion":"g/v1","kind":"K","spec":{"items":[{"c":1}]}}`, true},
		// Off the scan's path: the rule does it.
		{`{"kind":"K","apiVersion":"g/v0","spec":{"items":[{"a":1}]}}`, "g/v1",
			`{"kind":"K","apiVersion":"g/v1","spec":{"items":[{"b":1}]}}`, false},
		{`{"apiVersion":"g/v0","kind":"K","spec":{"items":[{"a":1}, {"a":2}]}}`, "g/v1",
			`{"apiVersion":"g/v1","kind":"K","spec":{"items":[{"b":1},{"b":2}]}}`, false},
	} {
		out, err, ran := convertObserved(c, []byte(tc.in), tc.to)
		if err != nil || string(out) != tc.want || ran != tc.ran {
			t.Errorf("%s to %s: %s, %v, scan renamed %v; want %s, scan renamed %v", tc.in, tc.to, out, err, ran, tc.want, tc.ran)
		}
	}
	_, err, ran := convertObserved(c, []byte(`{"apiVersion":"g/v0","kind":"K","spec":{"items":[{"a":1,"b":2}]}}`), "g/v1")
	if err == nil || !strings.Contains(err.Error(), "both /spec/items/0/a and /spec/items/0/b are set") || ran {
		t.Errorf("both keys: %v, scan renamed %v; want the rule's error", err, ran)
	}
}

// TestFusedPlans: a rename is done by the scan only when it is the one
// rule on its list in the route, and no rule of the route may touch
// anything.
func TestFusedPlans(t *testing.T) {
	r := mustRule(t)
	rename := func() Rule { return r(Rename(MustPath("spec.items[*].a"), MustPath("spec.items[*].b"))) }
	funcs := r(Funcs("f", func(*Object) error { return nil }, func(*Object) error { return nil }))
	shared := rename()
	tests := []struct {
		name   string
		spokes []Spoke
		routes map[[2]string]int // route -> renames its scan may do
	}{
		{"alone", []Spoke{{Version: "v0", Rules: []Rule{rename(), r(Rename(MustPath("spec.c"), MustPath("spec.d")))}}},
			map[[2]string]int{{"v0", "v1"}: 1, {"v1", "v0"}: 1}},
		{"another rule on the items", []Spoke{{Version: "v0", Rules: []Rule{rename(), r(Enum(MustPath("spec.items[*].c"), MustPath("spec.items[*].c"), map[string]string{"x": "X"}))}}},
			map[[2]string]int{{"v0", "v1"}: 0, {"v1", "v0"}: 0}},
		{"a rule on the list's parent", []Spoke{{Version: "v0", Rules: []Rule{rename(), r(Rename(MustPath("spec"), MustPath("body")))}}},
			map[[2]string]int{{"v0", "v1"}: 0}},
		{"funcs on the route", []Spoke{{Version: "v0", Rules: []Rule{rename(), funcs}}},
			map[[2]string]int{{"v0", "v1"}: 0}},
		{"a rename each way through the hub", []Spoke{{Version: "v0", Rules: []Rule{rename()}}, {Version: "v2", Rules: []Rule{rename()}}},
			map[[2]string]int{{"v0", "v1"}: 1, {"v0", "v2"}: 0, {"v2", "v0"}: 0, {"v1", "v2"}: 1}},
		{"one rule in two spokes", []Spoke{{Version: "v0", Rules: []Rule{shared}}, {Version: "v2", Rules: []Rule{shared}}},
			map[[2]string]int{{"v0", "v2"}: 0, {"v2", "v1"}: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: tc.spokes})
			for route, want := range tc.routes {
				in := []byte(`{"apiVersion":"g/` + route[0] + `","kind":"K"}`)
				if got := len(c.planFor(in, "g/"+route[1])); got != want {
					t.Errorf("route %s -> %s: %d renames in the scan, want %d", route[0], route[1], got, want)
				}
			}
		})
	}
}

// FuzzFusedRename holds the scan's rename to the rule's on lists of any
// bytes, in both directions.
func FuzzFusedRename(f *testing.F) {
	for _, s := range []string{`[{"a":1}]`, `[{"a":1,"b":2}]`, `[{"c":[1,{"a":2}],"a":"x\"y"},{"a":-0}]`, `[{"a":1},{"a":1,"a":2}]`, `[{"\u0061":1}]`, `[{"a":1}, {"a":2}]`, `[{"a":1e400}]`, `[{"b":"é"},null]`} {
		f.Add(s)
	}
	c := mustNew(f, Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{
		mustRule(f)(Rename(MustPath("spec.items[*].a"), MustPath("spec.items[*].b"))),
	}}}})
	f.Fuzz(func(t *testing.T, list string) {
		for _, d := range [][2]string{{"g/v0", "g/v1"}, {"g/v1", "g/v0"}} {
			in := []byte(`{"apiVersion":"` + d[0] + `","kind":"K","spec":{"items":` + list + `}}`)
			got, err, _ := convertObserved(c, in, d[1])
			noFusedRenames = true
			want, werr, _ := convertObserved(c, in, d[1])
			noFusedRenames = false
			if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("%s to %s:\nscan %s %v\nrule %s %v", in, d[1], got, err, want, werr)
			}
		}
	})
}
