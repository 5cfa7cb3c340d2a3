package check

import (
	"encoding/json"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/hubspoke/hubspoke/schema"
)

func TestDiff(t *testing.T) {
	set, mapList := "set", "map"
	listSchema := &schema.Node{Properties: map[string]schema.Node{
		"set":    {Items: &schema.Node{}, Extensions: schemaExt(&set, nil)},
		"map":    {Items: &schema.Node{}, Extensions: schemaExt(&mapList, []string{"name"})},
		"atomic": {Items: &schema.Node{}},
	}}
	tests := []struct {
		name     string
		a, b     string
		n        *schema.Node
		wantPtr  string
		wantDiff bool
	}{
		{name: "key order never matters", a: `{"a":1,"b":{"c":2,"d":3}}`, b: `{"b":{"d":3,"c":2},"a":1}`},
		{name: "numbers compare by value", a: `{"a":1,"b":100}`, b: `{"a":1.0,"b":1e2}`},
		{name: "big integers are exact", a: `{"a":9223372036854775807}`, b: `{"a":9223372036854775806}`, wantPtr: "/a", wantDiff: true},
		{name: "missing key", a: `{"a":1}`, b: `{}`, wantPtr: "/a", wantDiff: true},
		{name: "null is not missing", a: `{"a":null}`, b: `{}`, wantPtr: "/a", wantDiff: true},
		{name: "empty list is not missing", a: `{"a":[]}`, b: `{}`, wantPtr: "/a", wantDiff: true},
		{name: "string vs number", a: `{"a":"1"}`, b: `{"a":1}`, wantPtr: "/a", wantDiff: true},
		{name: "escaped pointer", a: `{"a/b":{"c~d":1}}`, b: `{"a/b":{"c~d":2}}`, wantPtr: "/a~1b/c~0d", wantDiff: true},
		{name: "list order matters without a schema", a: `{"set":[1,2]}`, b: `{"set":[2,1]}`, wantPtr: "/set/0", wantDiff: true},
		{name: "set order does not matter", a: `{"set":[1,2]}`, b: `{"set":[2,1]}`, n: listSchema},
		{name: "map list order does not matter", a: `{"map":[{"name":"a","v":1},{"name":"b"}]}`, b: `{"map":[{"name":"b"},{"name":"a","v":1}]}`, n: listSchema},
		{name: "map list item content differs", a: `{"map":[{"name":"a","v":1},{"name":"b"}]}`, b: `{"map":[{"name":"b"},{"name":"a","v":2}]}`, n: listSchema, wantPtr: "/map/0/v", wantDiff: true},
		{name: "atomic list order matters", a: `{"atomic":[1,2]}`, b: `{"atomic":[2,1]}`, n: listSchema, wantPtr: "/atomic/0", wantDiff: true},
		{name: "shorter list", a: `{"atomic":[1,2]}`, b: `{"atomic":[1]}`, n: listSchema, wantPtr: "/atomic/1", wantDiff: true},
		{name: "root type differs", a: `{}`, b: `[]`, wantPtr: "", wantDiff: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := decodeJSON([]byte(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := decodeJSON([]byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			ptr, d := Diff(a, b, tt.n)
			if d != tt.wantDiff || ptr != tt.wantPtr {
				t.Errorf("Diff = %q, %v; want %q, %v", ptr, d, tt.wantPtr, tt.wantDiff)
			}
			// Symmetric in whether they differ.
			if _, d2 := Diff(b, a, tt.n); d2 != d {
				t.Errorf("Diff(b, a) differs = %v, Diff(a, b) = %v", d2, d)
			}
		})
	}
}

func FuzzDiffReflexive(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}],"c":"é"}`, `[1e400]`, `{"a":-0.0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := decodeJSON([]byte(s))
		if err != nil {
			return
		}
		if ptr, d := Diff(v, v, nil); d {
			t.Fatalf("value differs from itself at %q: %s", ptr, s)
		}
	})
}

func schemaExt(listType *string, keys []string) structuralschema.Extensions {
	return structuralschema.Extensions{XListType: listType, XListMapKeys: keys}
}

// TestSameBytesAreEqual (issue 27, bug 6): the same JSON decoded by the
// decoders the checker meets (exact literals, the API server's int64 or
// float64, encoding/json's float64 for every number) is equal to itself
// whichever two decodings are compared: a float64 holds the float nearest
// the literal, and equals the literal's other decodings.
func TestSameBytesAreEqual(t *testing.T) {
	decoders := map[string]func([]byte) (any, error){
		"exact": decodeJSON,
		"api-server": func(b []byte) (any, error) {
			m, err := schema.DecodeObject(b)
			return any(m), err
		},
		"float64": func(b []byte) (any, error) {
			var v any
			return v, json.Unmarshal(b, &v)
		},
	}
	lit := rapid.OneOf(
		rapid.SampledFrom([]string{"0.1", "9007199254740993", "-6.854534149169922e-07", "1e21", "1.0", "-0", "123456789012345678901234567890", "0.30000000000000004", "1e-7"}),
		rapid.Map(rapid.Int64(), func(i int64) string { return strconv.FormatInt(i, 10) }),
		rapid.Map(rapid.Float64(), func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }),
	)
	rapid.Check(t, func(t *rapid.T) {
		doc := []byte(`{"a":` + lit.Draw(t, "literal") + `}`)
		for an, da := range decoders {
			for bn, db := range decoders {
				a, err1 := da(doc)
				b, err2 := db(doc)
				if err1 != nil || err2 != nil {
					t.Skip()
				}
				if d := Diffs(a, b, nil); len(d) > 0 {
					t.Fatalf("%s decoded %s as %#v, %s as %#v: Diffs says %v", an, doc, a.(map[string]any)["a"], bn, b.(map[string]any)["a"], d)
				}
			}
		}
	})
}
