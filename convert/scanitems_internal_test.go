package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestScanExpandsItemsOnRulePaths: the lists and maps on a rule's path
// through selectors are expanded by the first scan, their items read on
// the rule's paths, so that a rule on every item never scans them again.
func TestScanExpandsItemsOnRulePaths(t *testing.T) {
	tr := &trie{}
	tr.add(MustPath("spec.ships[*].img").innerPath())
	tr.add(MustPath("spec.fleets.*.ships[name=a].crew").innerPath())
	st := getState()
	defer putState(st)
	in := `{"spec":{"ships":[{"img":"x","n":{"a":1}}, 2, {"img":"y"}],"fleets":{"f":{"ships":[{"name":"a","crew":{"c":1}}]}}}}`
	root, err := parseWith(st, []byte(in), tr)
	if err != nil {
		t.Fatal(err)
	}
	at := func(n node, keys ...string) node {
		t.Helper()
		for _, k := range keys {
			if n.obj == nil {
				t.Fatalf("not expanded before %q", k)
			}
			i := n.obj.find(k)
			if i < 0 {
				t.Fatalf("no key %q", k)
			}
			n = n.obj.members[i].val
		}
		return n
	}
	ships := at(root, "spec", "ships")
	if ships.list == nil || len(ships.list.items) != 3 {
		t.Fatalf("spec.ships not expanded by the scan: %+v", ships.list)
	}
	if ships.list.items[0].obj == nil || ships.list.items[2].obj == nil || ships.list.items[1].obj != nil {
		t.Errorf("items not expanded as objects where they are objects")
	}
	if it := ships.list.items[0].obj; len(it.members) != 1 || it.others != 1 || it.t == nil {
		t.Errorf("item 0 holds %d members and %d others, want only img held, n not", len(it.members), it.others)
	}
	inner := at(root, "spec", "fleets", "f", "ships")
	if inner.list == nil || at(inner.list.items[0], "crew").obj == nil {
		t.Errorf("items under a map's values not expanded along the rule's path")
	}
}

// stripSelectors returns a copy of t without the tries below selectors:
// the scan then leaves lists and map values as they are, and the rules
// expand them when they reach them.
func stripSelectors(t *trie) *trie {
	c := &trie{}
	for _, ch := range t.children {
		c.children = append(c.children, trieChild{quoted: ch.quoted, key: ch.key, t: stripSelectors(ch.t)})
	}
	return c
}

// TestItemsReadByTheScanAreLazyItems: a conversion whose lists were
// expanded by the first scan, their items read partially, gives the same
// JSON (but for the space between members of a changed item) and the same
// errors as one that expands the lists when a rule reaches them and reads
// every member of their items.
func TestItemsReadByTheScanAreLazyItems(t *testing.T) {
	must := func(r Rule, err error) Rule {
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	pat, err := ParsePattern("{a} {b}")
	if err != nil {
		t.Fatal(err)
	}
	rules := []Rule{
		must(Rename(MustPath("spec.items[*].img"), MustPath("spec.items[*].image"))),
		must(Rename(MustPath("spec.keyed[name=*].x.y"), MustPath("spec.keyed[name=*].z"))),
		must(Enum(MustPath("spec.keyed[name=a].mode"), MustPath("spec.keyed[name=a].mode"), map[string]string{"Fast": "Performance", "Slow": "Economy"})),
		must(HubOnly(MustPath("spec.keyed[name=*].paused"), nil)),
		must(Scale(MustPath("spec.backends.*.weight"), MustPath("spec.backends.*.weight"), 100, 0)),
		must(Rename(MustPath("spec.groups[*].members[*].img"), MustPath("spec.groups[*].members[*].image"))),
		must(Split(MustPath("spec.groups[*].when"), MustPath("spec.groups[*].when"), pat, nil, OtherwiseKeep)),
		must(Duration(MustPath("spec.items[*].ttl"), MustPath("spec.items[*].ttl"), time.Second, RoundReject)),
		must(ListToItem(MustPath("spec.items"), MustPath("spec.item"), OtherwiseKeep)),
	}
	eager, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	lazy := *eager
	lazy.trie = stripSelectors(eager.trie)
	sp := rapid.SampledFrom([]string{"", " ", "\n  "})
	scalar := rapid.SampledFrom([]string{`1`, `-2`, `"a"`, `"b"`, `null`, `true`, `"Fast"`, `"Slow"`, `"Performance"`, `"1 2"`, `"30s"`, `30`, `1.5`})
	// Keys are distinct (a key written twice is refused by the scan, not
	// by the rule, so the messages differ).
	key := rapid.SampledFrom([]string{"name", "img", "image", "mode", "paused", "x", "y", "z", "ttl", "weight", "when", "members", `"\u006fther"`})
	var value func(t *rapid.T, depth int) string
	value = func(t *rapid.T, depth int) string {
		// Mostly lists of objects of objects, as the rules' paths go.
		k := rapid.IntRange(0, 9).Draw(t, "kind")
		if depth > 3 || k == 0 {
			return scalar.Draw(t, "scalar")
		}
		var b strings.Builder
		if depth%2 == 0 && k > 2 || depth%2 == 1 && k == 1 {
			b.WriteString("[" + sp.Draw(t, "sp"))
			for i := range rapid.IntRange(0, 3).Draw(t, "n") {
				if i > 0 {
					b.WriteString("," + sp.Draw(t, "sp"))
				}
				b.WriteString(value(t, depth+1))
			}
			b.WriteString(sp.Draw(t, "sp") + "]")
			return b.String()
		}
		b.WriteString("{" + sp.Draw(t, "sp"))
		keys := rapid.SliceOfNDistinct(key, 0, 4, rapid.ID).Draw(t, "keys")
		if depth == 1 && rapid.IntRange(0, 9).Draw(t, "named") > 0 {
			// An item, mostly with its list-map key.
			keys = append(keys[:0:0], keys...)
			for i := 0; i < len(keys); i++ {
				if keys[i] == "name" {
					keys = append(keys[:i], keys[i+1:]...)
				}
			}
			keys = append([]string{"name"}, keys...)
		}
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			if k == "name" && depth == 1 {
				b.WriteString(`"name"` + sp.Draw(t, "sp") + ":" + rapid.SampledFrom([]string{`"a"`, `"b"`, `"\u0061"`}).Draw(t, "name"))
				continue
			}
			if k[0] != '"' {
				k = `"` + k + `"`
			}
			b.WriteString(k + sp.Draw(t, "sp") + ":" + value(t, depth+1))
		}
		b.WriteString("}")
		return b.String()
	}
	rapid.Check(t, func(t *rapid.T) {
		var spec strings.Builder
		spec.WriteString("{")
		for i, k := range rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"items", "keyed", "backends", "groups", "item", "other"}), 0, 5, rapid.ID).Draw(t, "top") {
			if i > 0 {
				spec.WriteString(", ")
			}
			spec.WriteString(`"` + k + `":` + value(t, 0))
		}
		spec.WriteString("}")
		for _, d := range [][2]string{{"g/v0", "g/v1"}, {"g/v1", "g/v0"}} {
			in := []byte(`{"apiVersion":"` + d[0] + `","kind":"K","metadata":{"name":"n"},"spec":` + spec.String() + `}`)
			oe, ee := eager.Convert(nil, in, d[1])
			itemsInFull = true
			ol, el := lazy.Convert(nil, in, d[1])
			itemsInFull = false
			if compactJSON(oe) != compactJSON(ol) || fmt.Sprint(ee) != fmt.Sprint(el) {
				t.Fatalf("%s to %s:\nscan %s %v\nlazy %s %v", in, d[1], oe, ee, ol, el)
			}
		}
	})
}

// compactJSON removes the space between tokens, and nothing else.
func compactJSON(b []byte) string {
	var out bytes.Buffer
	if len(b) > 0 {
		if err := json.Compact(&out, b); err != nil {
			return "invalid: " + err.Error()
		}
	}
	return out.String()
}

// TestTrieKeysAsWritten: a rule's key holding a byte encoding/json escapes
// (<, >, &) is found as a document writes it, so the scan refuses it twice.
func TestTrieKeysAsWritten(t *testing.T) {
	r, err := Rename(MustPath(`spec["a<b"]`), MustPath("spec.c"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{r}}}})
	if err != nil {
		t.Fatal(err)
	}
	in := `{"apiVersion":"g/v0","kind":"K","spec":{"a<b":1,"a\u003cb":2}}`
	if out, err := c.Convert(nil, []byte(in), "g/v1"); err == nil || !strings.Contains(err.Error(), `duplicate key`) {
		t.Errorf("a key written twice, once escaped, converted: %s %v", out, err)
	}
}

// TestTrieLongKeys: keys of 62 bytes and more, quotes included, are found
// on the trie (the length filter works modulo 64), at the top and inside
// list items, and keys of other lengths that share their length modulo 64
// are not taken for them.
func TestTrieLongKeys(t *testing.T) {
	for _, n := range []int{61, 62, 63, 64, 70, 126, 127, 200} {
		long := strings.Repeat("k", n)
		other := strings.Repeat("k", n+64) // the same length modulo 64
		for _, tc := range []struct{ from, to, in, want string }{
			{"spec." + long, "spec.x",
				`{"apiVersion":"g/v0","kind":"K","spec":{"` + other + `":1,"` + long + `":2}}`,
				`{"apiVersion":"g/v1","kind":"K","spec":{"` + other + `":1,"x":2}}`},
			{"spec.l[*]." + long, "spec.l[*].x",
				`{"apiVersion":"g/v0","kind":"K","spec":{"l":[{"` + other + `":1,"` + long + `":2}]}}`,
				`{"apiVersion":"g/v1","kind":"K","spec":{"l":[{"` + other + `":1,"x":2}]}}`},
			// Two children of one length modulo 64.
			{"spec.l[*]." + long, "spec.l[*]." + other,
				`{"apiVersion":"g/v0","kind":"K","spec":{"l":[{"y":1,"` + long + `":2}]}}`,
				`{"apiVersion":"g/v1","kind":"K","spec":{"l":[{"y":1,"` + other + `":2}]}}`},
			{"spec." + other, "spec." + long,
				`{"apiVersion":"g/v0","kind":"K","spec":{"y":1,"` + other + `":2}}`,
				`{"apiVersion":"g/v1","kind":"K","spec":{"y":1,"` + long + `":2}}`},
		} {
			r, err := Rename(MustPath(tc.from), MustPath(tc.to))
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{r}}}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Convert(nil, []byte(tc.in), "g/v1")
			if err != nil {
				t.Fatalf("key of %d bytes, %s: %v", n, tc.from, err)
			}
			if string(out) != tc.want {
				t.Errorf("key of %d bytes, %s:\n got %s\nwant %s", n, tc.from, out, tc.want)
			}
		}
	}
}

// BenchmarkScanListItems scans a list of 20 items on a rule's path (the
// items read partially, only the key a rule renames held) against the same
// bytes only validated: the cost of reading items in the first scan.
func BenchmarkScanListItems(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"ships":[`)
	for j := 0; j < 20; j++ {
		if j > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"crew":%d,"engine":"Diesel","img":"registry.example.com/fleet/ship-%d:1.2","name":"ship-%02d"}`, 100+j, j, j)
	}
	sb.WriteString(`]}`)
	doc := []byte(sb.String())
	items := &trie{}
	items.add(MustPath("ships[*].img").innerPath())
	items.add(MustPath("ships[*].image").innerPath())
	for _, tc := range []struct {
		name string
		t    *trie
	}{{"validated", &trie{}}, {"items-read", items}} {
		b.Run(tc.name, func(b *testing.B) {
			st := getState()
			defer putState(st)
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				st.objs, st.members, st.lists, st.items, st.spans = st.objs[:0], st.members[:0], st.lists[:0], st.items[:0], st.spans[:0]
				if _, err := parseWith(st, doc, tc.t); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// shipsRenamer converts between g/v0 and g/v1 by renaming img to image in
// the items of spec.ships.
func shipsRenamer(t *testing.T) *Converter {
	t.Helper()
	r, err := Rename(MustPath("spec.ships[*].img"), MustPath("spec.ships[*].image"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{r}}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRenamedItemsKeepTheirBytes: renaming a key inside every item changes
// that key and nothing else of the item, space included; an item no rule
// changes, and the space between items of an unchanged list, stay too.
func TestRenamedItemsKeepTheirBytes(t *testing.T) {
	c := shipsRenamer(t)
	for _, tc := range []struct{ in, want string }{
		{`[ {"a" : 1, "img" : "x" , "b":{ "c" : [1, 2] } }, {"n": 2} ]`, `[{"a" : 1, "image" : "x" , "b":{ "c" : [1, 2] } },{"n": 2}]`},
		{`[{"img":"x"}]`, `[{"image":"x"}]`},
		{`[ {"n": 2} , 3 ]`, `[ {"n": 2} , 3 ]`},
	} {
		in := `{"apiVersion":"g/v0","kind":"K","spec":{"ships":` + tc.in + `}}`
		want := `{"apiVersion":"g/v1","kind":"K","spec":{"ships":` + tc.want + `}}`
		out, err := c.Convert(nil, []byte(in), "g/v1")
		if err != nil || string(out) != want {
			t.Errorf("%s:\n got %s %v\nwant %s", tc.in, out, err, want)
		}
	}
}

// TestHeldItemMembersRemoved: a member a rule removes from the items of a
// list read partially (a hubOnly field in each item, going to the spoke)
// is gone from every written item, whether it was the item's only member,
// one beside members not held, or held beside another; and it comes back
// on the way to the hub.
func TestHeldItemMembersRemoved(t *testing.T) {
	only, err := HubOnly(MustPath("spec.ships[*].x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rename, err := Rename(MustPath("spec.ships[*].img"), MustPath("spec.ships[*].image"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{only, rename}}}})
	if err != nil {
		t.Fatal(err)
	}
	hub := `{"apiVersion":"g/v1","kind":"K","spec":{"ships":[{"n":1,"x":5},{"x":6},{"n":2},{"image":"i","x":7}]}}`
	wantShips := `"ships":[{"n":1},{},{"n":2},{"img":"i"}]`
	spoke, err := c.Convert(nil, []byte(hub), "g/v0")
	if err != nil || !strings.Contains(string(spoke), wantShips) {
		t.Fatalf("to the spoke:\n got %s %v\nwant ships %s", spoke, err, wantShips)
	}
	back, err := c.Convert(nil, spoke, "g/v1")
	if err != nil {
		t.Fatal(err)
	}
	// The spec as it was (the annotation that carried x is gone; the
	// metadata it was written in stays, as for any object).
	var got, want struct{ Spec any }
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(hub), &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Spec) != fmt.Sprint(want.Spec) {
		t.Errorf("back to the hub:\n got %s\nwant %s", back, hub)
	}
}

// TestItemsRefuseDuplicateHeldKeys: a key a rule on the items reads,
// written twice in an item, is refused where the second one starts, in
// compact JSON (read by flatItems) as with space (read by objectBody).
func TestItemsRefuseDuplicateHeldKeys(t *testing.T) {
	c := shipsRenamer(t)
	for _, items := range []string{
		`[{"n":1},{"img":"x","a":2,"img":"y"}]`,
		`[{"n":1},{"img" : "x", "a":2, "img":"y"}]`,
	} {
		in := `{"apiVersion":"g/v0","kind":"K","spec":{"ships":` + items + `}}`
		want := `duplicate key "img"`
		_, err := c.Convert(nil, []byte(in), "g/v1")
		var se *syntaxError
		if !errors.As(err, &se) || se.Msg != want || in[se.Off:se.Off+5] != `"img"` || se.Off < strings.Index(in, `"a"`) {
			t.Errorf("%s: got %v, want %s at the second \"img\"", items, err, want)
		}
	}
}
