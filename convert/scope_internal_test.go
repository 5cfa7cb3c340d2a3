package convert

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestRenameInItemsFastPathIsTheRule: the in-place rename of a key of every
// item gives the same bytes and the same errors as the rename rule run on
// each item.
func TestRenameInItemsFastPathIsTheRule(t *testing.T) {
	fast, err := Rename(MustPath("spec.items[*].a"), MustPath("spec.items[*].b"))
	if err != nil {
		t.Fatal(err)
	}
	if fast.(*scopedRule).rename == nil {
		t.Fatal("the rename of a key of the items does not take the fast path")
	}
	slow := *fast.(*scopedRule)
	slow.rename, slow.toHub, slow.fromHub = nil, slow.inner.ToHub, slow.inner.FromHub
	conv := func(r Rule) *Converter {
		c, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{r}}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cf, cs := conv(fast), conv(&slow)
	item := rapid.OneOf(
		rapid.Just(`"s"`), rapid.Just(`null`), rapid.Just(`{}`),
		rapid.Custom(func(t *rapid.T) string {
			s := "{"
			for i, k := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"a", "b", "c", `"\u0061"`}), rapid.ID).Draw(t, "keys") {
				if i > 0 {
					s += ","
				}
				if k[0] != '"' {
					k = `"` + k + `"`
				}
				s += fmt.Sprintf("%s:%d", k, i)
			}
			return s + "}"
		}))
	rapid.Check(t, func(t *rapid.T) {
		items := rapid.SliceOfN(item, 0, 5).Draw(t, "items")
		list := "["
		for i, it := range items {
			if i > 0 {
				list += ", "
			}
			list += it
		}
		list += "]"
		for _, d := range [][2]string{{"g/v0", "g/v1"}, {"g/v1", "g/v0"}} {
			in := []byte(`{"apiVersion":"` + d[0] + `","kind":"K","spec":{"items":` + list + `}}`)
			of, ef := cf.Convert(nil, in, d[1])
			os, es := cs.Convert(nil, in, d[1])
			if string(of) != string(os) || fmt.Sprint(ef) != fmt.Sprint(es) {
				t.Fatalf("%s to %s:\nfast %s %v\nrule %s %v", in, d[1], of, ef, os, es)
			}
		}
	})
}
