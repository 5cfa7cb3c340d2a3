package convert

import (
	"fmt"
	"testing"
)

// FuzzFlatItems: flatItems reads an item exactly as objectBody does, or
// leaves it to objectBody. The same document converts to the same bytes,
// or fails with the same error, with flatItems and without it.
func FuzzFlatItems(f *testing.F) {
	for _, s := range []string{
		`[{"crew":1,"engine":"Diesel","img":"r/s:1","name":"a"},{"img":"x","name":"b","paused":true}]`,
		`[{"img" : "x"}, {"img":"y" ,"n":2}]`,
		`[{"img":"x","img":"y"}]`, `[{"image":"x","img":"y"}]`, `[{"img":{"a":1}},{"img":[1,{"b":2}]}]`,
		`[{"\u0069mg":"x"},{"img":"\u0078","engine":"Diesel"}]`, `[{},{"a":{"b":[]}},3,null,"s"]`,
		`[{"img":1e400}]`, `[{"img":-0.5e-3,"crew":12345678901234567890}]`, `[{"img":"x",}]`, `[{"img":"x"`,
		`[{"img":"x"}{"img":"y"}]`, `[{"name":"a","paused":false},{"name":"a","paused":true}]`,
		`[{"engine":"Electric"},{"engine":"Hybrid","img":tru}]`, "[{\"img\":\"\x01\"}]", "[{\"img\":\"\xff\"}]",
	} {
		f.Add(s)
	}
	must := func(r Rule, err error) Rule {
		if err != nil {
			f.Fatal(err)
		}
		return r
	}
	c, err := New(Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []Spoke{{Version: "v0", Rules: []Rule{
		must(Rename(MustPath("spec.ships[*].img"), MustPath("spec.ships[*].image"))),
		must(Enum(MustPath("spec.ships[*].engine"), MustPath("spec.ships[*].engine"), map[string]string{"Diesel": "Fuel", "Electric": "Battery"})),
		must(HubOnly(MustPath("spec.ships[name=*].paused"), nil)),
	}}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ships string) {
		for _, d := range [][2]string{{"g/v0", "g/v1"}, {"g/v1", "g/v0"}} {
			in := []byte(`{"apiVersion":"` + d[0] + `","kind":"K","metadata":{"name":"n"},"spec":{"ships":` + ships + `}}`)
			got, gerr := c.Convert(nil, in, d[1])
			noFlatItems = true
			want, werr := c.Convert(nil, in, d[1])
			noFlatItems = false
			if string(got) != string(want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("%s to %s:\nwith flatItems    %s %v\nwithout flatItems %s %v", in, d[1], got, gerr, want, werr)
			}
		}
	})
}
