package convert

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPatternFastPathIsTheGeneralPath: splitting and joining by the bytes
// the scan recorded gives the same bytes, exactness and errors as the
// general path, for every string and object, however written.
func TestPatternFastPathIsTheGeneralPath(t *testing.T) {
	patterns := []string{"{minute} {hour} {dayOfMonth} {month} {dayOfWeek}", "{a}:{b}", "x{a}-{b}-", "{a}::{b}", "<{a}>", "{a}/{b:[^/]+}"}
	piece := rapid.SampledFrom([]string{"a", "1", " ", ":", "::", "-", "x", "*", "<", "é", `\"`, `\u0041`, `\\`, `/`})
	content := rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(piece, 0, 6).Draw(t, "pieces"), "")
	})
	rapid.Check(t, func(t *rapid.T) {
		p, err := ParsePattern(rapid.SampledFrom(patterns).Draw(t, "pattern"))
		if err != nil {
			t.Fatal(err)
		}
		defaults := map[string]string{}
		for _, f := range p.fields {
			if rapid.Bool().Draw(t, "default?") {
				defaults[f] = rapid.SampledFrom([]string{"*", "0", "<", ""}).Draw(t, "default")
			}
		}
		c := newPatternConv(p, defaults)
		same := func(what string, in []byte, fast func() ([]byte, bool, error), slow func() ([]byte, bool, error)) {
			a, ea, erra := fast()
			b, eb, errb := slow()
			if string(a) != string(b) || ea != eb || fmt.Sprint(erra) != fmt.Sprint(errb) {
				t.Fatalf("%s %s by %q:\nfast %s %v %v\nslow %s %v %v", what, in, p.src, a, ea, erra, b, eb, errb)
			}
		}
		str := []byte(`"` + content.Draw(t, "string") + `"`)
		n := node{raw: str}
		same("split", str, func() ([]byte, bool, error) { return c.split([]byte("x"), n) }, func() ([]byte, bool, error) { return c.splitSlow([]byte("x"), n) })

		keys := append(append([]string{}, p.fields...), "other", `\u0061`)
		var b strings.Builder
		b.WriteString("{")
		for i := range rapid.IntRange(0, 6).Draw(t, "members") {
			if i > 0 {
				b.WriteString(",")
			}
			v := `"` + content.Draw(t, "value") + `"`
			if rapid.IntRange(0, 9).Draw(t, "number?") == 0 {
				v = "1"
			}
			b.WriteString(`"` + rapid.SampledFrom(keys).Draw(t, "key") + `":` + v)
		}
		b.WriteString("}")
		obj := []byte(b.String())
		st := getState()
		defer putState(st)
		o, err := parseWith(st, obj, &trie{}) // as the scan expands it: keys not checked
		if err != nil {
			t.Fatal(err)
		}
		same("join", obj, func() ([]byte, bool, error) { return c.join([]byte("x"), o) }, func() ([]byte, bool, error) { return c.joinSlow([]byte("x"), o) })
	})
}
