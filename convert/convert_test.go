package convert_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
)

const (
	spokeV = "example.com/v1alpha1"
	hubV   = "example.com/v1"
)

func p(s string) convert.Path { return convert.MustPath(s) }

func must(r convert.Rule, err error) convert.Rule {
	if err != nil {
		panic(err)
	}
	return r
}

func newConv(t *testing.T, rules ...convert.Rule) *convert.Converter {
	t.Helper()
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: rules}, {Version: "v1beta1"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// obj builds a compact Widget with the given apiVersion and spec (raw JSON).
func obj(apiVersion, spec string) string {
	s := `{"apiVersion":"` + apiVersion + `","kind":"Widget","metadata":{"name":"w","namespace":"ns"}`
	if spec != "" {
		s += `,"spec":` + spec
	}
	return s + `}`
}

func objAnn(apiVersion, spec, preserved string) string {
	s := `{"apiVersion":"` + apiVersion + `","kind":"Widget","metadata":{"name":"w","namespace":"ns","annotations":{"hubspoke.dev/preserved":` + preserved + `}}`
	if spec != "" {
		s += `,"spec":` + spec
	}
	return s + `}`
}

func convertOK(t *testing.T, c *convert.Converter, in, to string) string {
	t.Helper()
	out, err := c.Convert(nil, []byte(in), to)
	if err != nil {
		t.Fatalf("convert to %s: %v\ninput: %s", to, err, in)
	}
	if !json.Valid(out) {
		t.Fatalf("output is not valid JSON: %s", out)
	}
	return string(out)
}

// TestRulesBothWays converts spoke -> hub and checks the exact bytes, then
// hub -> spoke and checks the spoke comes back exactly (or as back says).
func TestRulesBothWays(t *testing.T) {
	tests := []struct {
		name  string
		rules []convert.Rule
		spoke string // spec of the spoke object
		hub   string // spec of the hub object
		back  string // spec expected back in the spoke, when not spoke itself
	}{
		{name: "rename in place keeps position", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: `{"a":1,"replicas":3,"b":2}`, hub: `{"a":1,"size":3,"b":2}`},
		{name: "rename missing stays missing", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: `{"a":1}`, hub: `{"a":1}`},
		{name: "rename null stays null", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: `{"replicas":null}`, hub: `{"size":null}`},
		{name: "rename zero stays zero", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: `{"replicas":0}`, hub: `{"size":0}`},
		{name: "move into a new nested object", rules: []convert.Rule{must(convert.Rename(p("spec.zone"), p("spec.placement.zone")))},
			spoke: `{"zone":"a","x":1}`, hub: `{"x":1,"placement":{"zone":"a"}}`, back: `{"x":1,"zone":"a"}`},
		{name: "move into an existing nested object", rules: []convert.Rule{must(convert.Rename(p("spec.zone"), p("spec.placement.zone")))},
			spoke: `{"zone":"a","placement":{"region":"r"}}`, hub: `{"placement":{"region":"r","zone":"a"}}`, back: `{"placement":{"region":"r"},"zone":"a"}`},
		{name: "move whole object", rules: []convert.Rule{must(convert.Rename(p("spec.tpl"), p("spec.template")))},
			spoke: `{"tpl":{"a":{"b":1e5}}}`, hub: `{"template":{"a":{"b":1e5}}}`},
		{name: "enum", rules: []convert.Rule{must(convert.Enum(p("spec.mode"), p("spec.mode"), map[string]string{"Fast": "Performance", "Slow": "Economy"}))},
			spoke: `{"mode":"Slow"}`, hub: `{"mode":"Economy"}`},
		{name: "enum with rename", rules: []convert.Rule{must(convert.Enum(p("spec.speed"), p("spec.mode"), map[string]string{"Fast": "Performance"}))},
			spoke: `{"speed":"Fast"}`, hub: `{"mode":"Performance"}`},
		{name: "duration seconds", rules: []convert.Rule{must(convert.Duration(p("spec.timeoutSeconds"), p("spec.timeout"), time.Second, convert.RoundReject))},
			spoke: `{"timeoutSeconds":30}`, hub: `{"timeout":"30s"}`},
		{name: "duration formats as metav1.Duration", rules: []convert.Rule{must(convert.Duration(p("spec.t"), p("spec.t"), time.Second, convert.RoundReject))},
			spoke: `{"t":3600}`, hub: `{"t":"1h0m0s"}`},
		{name: "duration zero", rules: []convert.Rule{must(convert.Duration(p("spec.t"), p("spec.t"), time.Second, convert.RoundReject))},
			spoke: `{"t":0}`, hub: `{"t":"0s"}`},
		{name: "duration milliseconds", rules: []convert.Rule{must(convert.Duration(p("spec.t"), p("spec.t"), time.Millisecond, convert.RoundReject))},
			spoke: `{"t":1500}`, hub: `{"t":"1.5s"}`},
		{name: "int to string big", rules: []convert.Rule{must(convert.IntToString(p("spec.n"), p("spec.s")))},
			spoke: `{"n":123456789012345678901234567890}`, hub: `{"s":"123456789012345678901234567890"}`},
		{name: "int to string negative", rules: []convert.Rule{must(convert.IntToString(p("spec.n"), p("spec.n")))},
			spoke: `{"n":-9223372036854775808}`, hub: `{"n":"-9223372036854775808"}`},
		{name: "string to int", rules: []convert.Rule{must(convert.StringToInt(p("spec.port"), p("spec.port")))},
			spoke: `{"port":"8080"}`, hub: `{"port":8080}`},
		{name: "scale multiply", rules: []convert.Rule{must(convert.Scale(p("spec.memoryMiB"), p("spec.memoryBytes"), 1048576, 0))},
			spoke: `{"memoryMiB":512}`, hub: `{"memoryBytes":536870912}`},
		{name: "scale divide", rules: []convert.Rule{must(convert.Scale(p("spec.bytes"), p("spec.kib"), 0, 1024))},
			spoke: `{"bytes":2048}`, hub: `{"kib":2}`},
		{name: "list to map keep order sorted", rules: []convert.Rule{must(convert.ListToMap(p("spec.endpoints"), p("spec.endpoints"), "name", convert.KeyString, convert.OrderKeep))},
			spoke: `{"endpoints":[{"name":"a","port":1},{"name":"b","port":2}]}`, hub: `{"endpoints":{"a":{"port":1},"b":{"port":2}}}`},
		{name: "list to map empty list", rules: []convert.Rule{must(convert.ListToMap(p("spec.endpoints"), p("spec.endpoints"), "name", convert.KeyString, convert.OrderKeep))},
			spoke: `{"endpoints":[]}`, hub: `{"endpoints":{}}`},
		{name: "list to map key only", rules: []convert.Rule{must(convert.ListToMap(p("spec.e"), p("spec.m"), "name", convert.KeyString, convert.OrderKeep))},
			spoke: `{"e":[{"name":"a"}]}`, hub: `{"m":{"a":{}}}`},
		{name: "list to map integer keys", rules: []convert.Rule{must(convert.ListToMap(p("spec.ports"), p("spec.ports"), "port", convert.KeyInteger, convert.OrderIgnore))},
			spoke: `{"ports":[{"port":80,"proto":"TCP"},{"port":443}]}`, hub: `{"ports":{"443":{},"80":{"proto":"TCP"}}}`,
			back: `{"ports":[{"port":443},{"port":80,"proto":"TCP"}]}`},
		{name: "list to map order ignore comes back sorted", rules: []convert.Rule{must(convert.ListToMap(p("spec.e"), p("spec.e"), "name", convert.KeyString, convert.OrderIgnore))},
			spoke: `{"e":[{"name":"b"},{"name":"a"}]}`, hub: `{"e":{"a":{},"b":{}}}`, back: `{"e":[{"name":"a"},{"name":"b"}]}`},
		{name: "list to map key not first comes back first", rules: []convert.Rule{must(convert.ListToMap(p("spec.e"), p("spec.e"), "name", convert.KeyString, convert.OrderKeep))},
			spoke: `{"e":[{"port":1,"name":"a"}]}`, hub: `{"e":{"a":{"port":1}}}`, back: `{"e":[{"name":"a","port":1}]}`},
		{name: "spec missing", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: ``, hub: ``},
		{name: "spec empty", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: `{}`, hub: `{}`},
		{name: "spec null", rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))},
			spoke: `null`, hub: `null`},
		{name: "rules compose in order", rules: []convert.Rule{
			must(convert.Rename(p("spec.replicas"), p("spec.size"))),
			must(convert.Scale(p("spec.size"), p("spec.size"), 10, 0)),
		}, spoke: `{"replicas":3}`, hub: `{"size":30}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.rules...)
			in := obj(spokeV, tt.spoke)
			got := convertOK(t, c, in, hubV)
			if want := obj(hubV, tt.hub); got != want {
				t.Errorf("to hub:\n got %s\nwant %s", got, want)
			}
			back := convertOK(t, c, got, spokeV)
			want := in
			if tt.back != "" {
				want = obj(spokeV, tt.back)
			}
			if back != want {
				t.Errorf("back to spoke:\n got %s\nwant %s", back, want)
			}
		})
	}
}

// TestUntouchedBytes: whatever no rule names comes out exactly as it went in.
func TestUntouchedBytes(t *testing.T) {
	c := newConv(t, must(convert.Rename(p("spec.replicas"), p("spec.size"))))
	in := `{"kind":"Widget",  "apiVersion" : "example.com/v1alpha1",
	"metadata":{"name":"w\u00e9","annotations":{"a":"x\"y\\z\/\u2028","b":""},"labels":{},"resourceVersion":"12","managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]},
	"spec":{"big":123456789012345678901234567890,"max":9223372036854775807,"min":-9223372036854775808,"dec":0.1000,"exp":-1.5E+300,"nil":null,"empty":{},"list":[ 1 , 2 ],"replicas":3,"unicode":"日本語 🎉","esc":"\ud83c\udf89\t"},
	"status" : {"availableReplicas": 2 , "conditions" : [ {"type":"Ready"} ] },
	"unknownTopLevel":[true,false,null]}`
	got := convertOK(t, c, in, hubV)
	// Everything but apiVersion and the renamed key must be byte-identical;
	// the modified objects (root and spec) are re-joined without whitespace
	// between members, but every member's bytes are kept.
	for _, frag := range []string{
		`"metadata":{"name":"w\u00e9","annotations":{"a":"x\"y\\z\/\u2028","b":""},"labels":{},"resourceVersion":"12","managedFields":[{"manager":"kubectl","fieldsV1":{"f:spec":{}}}]}`,
		`"big":123456789012345678901234567890`, `"max":9223372036854775807`, `"min":-9223372036854775808`,
		`"dec":0.1000`, `"exp":-1.5E+300`, `"nil":null`, `"empty":{}`, `"list":[ 1 , 2 ]`, `"size":3`,
		`"unicode":"日本語 🎉"`, `"esc":"\ud83c\udf89\t"`,
		`"status":{"availableReplicas": 2 , "conditions" : [ {"type":"Ready"} ] }`,
		`"unknownTopLevel":[true,false,null]`, `"kind":"Widget"`, `"apiVersion":"example.com/v1"`,
	} {
		if !strings.Contains(got, frag) {
			t.Errorf("output lost %s\noutput: %s", frag, got)
		}
	}
	// Key order of the root is kept: kind came first.
	if !strings.HasPrefix(got, `{"kind":"Widget","apiVersion":"example.com/v1"`) {
		t.Errorf("root key order changed: %s", got)
	}
	back := convertOK(t, c, got, spokeV)
	if strings.Replace(strings.Replace(back, `"example.com/v1alpha1"`, `"example.com/v1"`, 1), `"replicas":3`, `"size":3`, 1) != got {
		t.Errorf("round trip changed more than apiVersion and the renamed field:\n%s\n%s", got, back)
	}
}

func TestMoveAcrossTopLevelKeys(t *testing.T) {
	c := newConv(t, must(convert.Rename(p("spec.old.deep.v"), p("status.v"))))
	in := obj(spokeV, `{"old":{"deep":{"v":[1,2]}}}`)
	hub := convertOK(t, c, in, hubV)
	// Parents the move emptied go, mirroring the ones it creates on the way back.
	if want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"status":{"v":[1,2]}}`; hub != want {
		t.Errorf("got %s\nwant %s", hub, want)
	}
	if back := convertOK(t, c, hub, spokeV); back != in {
		t.Errorf("got %s\nwant %s", back, in)
	}
}

func TestSameVersionIsByteForByte(t *testing.T) {
	c := newConv(t, must(convert.Rename(p("spec.replicas"), p("spec.size"))))
	in := " { \"apiVersion\":\"example.com/v1alpha1\" ,\"kind\":\"Widget\",\"spec\":{\"replicas\":1.0}}\n"
	out, err := c.Convert([]byte("prefix"), []byte(in), spokeV)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "prefix"+in {
		t.Errorf("got %q", out)
	}
}

func TestSpokeToSpokeGoesThroughHub(t *testing.T) {
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1", Spokes: []convert.Spoke{
		{Version: "v1alpha1", Rules: []convert.Rule{must(convert.Rename(p("spec.replicas"), p("spec.size")))}},
		{Version: "v1beta1", Rules: []convert.Rule{must(convert.Rename(p("spec.count"), p("spec.size")))}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := convertOK(t, c, obj(spokeV, `{"replicas":4}`), "example.com/v1beta1")
	if want := obj("example.com/v1beta1", `{"count":4}`); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if diff := cmp.Diff([]string{"v1", "v1alpha1", "v1beta1"}, c.Versions()); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
}

// TestErrors: every failure names the object, the pointer, the rule and the reason.
func TestErrors(t *testing.T) {
	dur := must(convert.Duration(p("spec.timeoutSeconds"), p("spec.timeout"), time.Second, convert.RoundReject))
	enum := must(convert.Enum(p("spec.mode"), p("spec.mode"), map[string]string{"Fast": "Performance", "Slow": "Economy"}))
	lm := must(convert.ListToMap(p("spec.endpoints"), p("spec.endpoints"), "name", convert.KeyString, convert.OrderKeep))
	scale := must(convert.Scale(p("spec.mib"), p("spec.bytes"), 1048576, 0))
	ren := must(convert.Rename(p("spec.replicas"), p("spec.size")))
	its := must(convert.StringToInt(p("spec.port"), p("spec.port")))
	keyed := must(convert.HubOnly(p("spec.c[name=*].paused"), nil))
	manyNamed := `{"name":"n0"}`
	for i := 1; i < 10; i++ {
		manyNamed += fmt.Sprintf(`,{"name":"n%d"}`, i)
	}
	tests := []struct {
		name    string
		rule    convert.Rule
		in, to  string
		want    []string // substrings of the message
		pointer string
	}{
		{"unmapped enum", enum, obj(spokeV, `{"mode":"Turbo"}`), hubV, []string{`object ns/w`, `value "Turbo" is not mapped; allowed values: "Fast", "Slow"`, `rule enum spec.mode`}, "/spec/mode"},
		{"unmapped enum from hub", enum, obj(hubV, `{"mode":"Balanced"}`), spokeV, []string{`value "Balanced" is not mapped; allowed values: "Economy", "Performance"`}, "/spec/mode"},
		{"enum not a string", enum, obj(spokeV, `{"mode":3}`), hubV, []string{`value 3 is a number, not a string`}, "/spec/mode"},
		{"duration not whole under reject", dur, obj(hubV, `{"timeout":"1.5s"}`), spokeV, []string{`duration "1.5s" is not a whole number of seconds (round: reject`}, "/spec/timeout"},
		{"duration unparsable", dur, obj(hubV, `{"timeout":"soon"}`), spokeV, []string{`value "soon" is not a duration`}, "/spec/timeout"},
		{"duration overflow", dur, obj(spokeV, `{"timeoutSeconds":9223372036854}`), hubV, []string{`too long for a duration`}, "/spec/timeoutSeconds"},
		{"duration not integer", dur, obj(spokeV, `{"timeoutSeconds":1.5}`), hubV, []string{`value 1.5 is not an integer`}, "/spec/timeoutSeconds"},
		{"duplicate keys", lm, obj(spokeV, `{"endpoints":[{"name":"a"},{"name":"b"},{"name":"a"}]}`), hubV, []string{`duplicate key name="a" (also at index 0)`}, "/spec/endpoints/2"},
		{"list item not an object", lm, obj(spokeV, `{"endpoints":["a"]}`), hubV, []string{`item is a string, not an object with key field "name"`}, "/spec/endpoints/0"},
		{"list item with its key twice", lm, obj(spokeV, `{"endpoints":[{"name":"a","name":"b"}]}`), hubV, []string{`duplicate key "name"`}, "/spec/endpoints/0"},
		{"list item without key", lm, obj(spokeV, `{"endpoints":[{"port":1}]}`), hubV, []string{`item has no key field "name"`}, "/spec/endpoints/0"},
		{"list key wrong type", lm, obj(spokeV, `{"endpoints":[{"name":1}]}`), hubV, []string{`key field "name" is a number, not a string`}, "/spec/endpoints/0"},
		{"list not a list", lm, obj(spokeV, `{"endpoints":{}}`), hubV, []string{`value is an object, not a list`}, "/spec/endpoints"},
		{"map key twice", lm, obj(hubV, `{"endpoints":{"a":{"port":1},"a":{"port":2}}}`), spokeV, []string{`duplicate key "a" in the map; the list cannot hold two items with name "a"`}, "/spec/endpoints"},
		{"map key twice, once escaped", lm, obj(hubV, `{"endpoints":{"a":{},"\u0061":{}}}`), spokeV, []string{`duplicate key "\u0061" in the map`}, "/spec/endpoints"},
		{"keyed items with a key twice", keyed, obj(hubV, `{"c":[{"name":"a"},{"name":"b"},{"name":"a","paused":true}]}`), spokeV, []string{`duplicate key name="a" (also at index 0); the items are known by their key`, `rule hubOnly spec.c[name=*].paused`}, "/spec/c/2"},
		{"keyed items with a key twice, once escaped", keyed, obj(hubV, `{"c":[{"name":"a"},{"name":"\u0061"}]}`), spokeV, []string{`duplicate key name="a" (also at index 0)`}, "/spec/c/1"},
		{"many keyed items with a key twice", keyed, obj(hubV, `{"c":[`+manyNamed+`,{"name":"n3"}]}`), spokeV, []string{`duplicate key name="n3" (also at index 3)`}, "/spec/c/10"},
		{"one item by key, matched twice", must(convert.Rename(p("spec.c[name=app].img"), p("spec.c[name=app].image"))), obj(spokeV, `{"c":[{"name":"app","img":"x"},{"name":"app","img":"y"}]}`), hubV, []string{`duplicate key name="app" (also at index 0)`}, "/spec/c/1"},
		{"map value holds key", lm, obj(hubV, `{"endpoints":{"a":{"name":"b"}}}`), spokeV, []string{`value holds the key field "name"`}, "/spec/endpoints/a"},
		{"scale not exact", scale, obj(hubV, `{"bytes":1000}`), spokeV, []string{`1000 is not a multiple of 1048576`}, "/spec/bytes"},
		{"scale overflow", scale, obj(spokeV, `{"mib":9223372036854775807}`), hubV, []string{`overflows int64`}, "/spec/mib"},
		{"string not an integer", its, obj(spokeV, `{"port":"http"}`), hubV, []string{`value "http" is not an integer`}, "/spec/port"},
		{"rename would overwrite", ren, obj(spokeV, `{"replicas":1,"size":2}`), hubV, []string{`both /spec/replicas and /spec/size are set; refusing to overwrite /spec/size`}, "/spec/size"},
		{"unknown target version", ren, obj(spokeV, `{}`), "example.com/v2", []string{`unknown version`, `declares versions v1, v1alpha1, v1beta1`}, ""},
		{"unknown target group", ren, obj(spokeV, `{}`), "other.io/v1", []string{`group "other.io" is not "example.com"`}, ""},
		{"unknown source version", ren, obj("example.com/v9", `{}`), hubV, []string{`"example.com/v9"`, `unknown version`}, "/apiVersion"},
		{"wrong kind", ren, `{"apiVersion":"example.com/v1","kind":"Gadget"}`, spokeV, []string{`kind "Gadget" is not Widget`}, "/kind"},
		{"no apiVersion", ren, `{"kind":"Widget"}`, spokeV, []string{`no apiVersion`}, "/apiVersion"},
		{"not an object", ren, `[1]`, spokeV, []string{`the object is a list, not a JSON object`}, ""},
		{"invalid JSON", ren, `{"apiVersion":"example.com/v1",}`, spokeV, []string{`object (to example.com/v1alpha1): invalid JSON at byte 31`}, ""},
		{"parent not an object", must(convert.Rename(p("spec.zone"), p("spec.placement.zone"))), obj(spokeV, `{"zone":"a","placement":"x"}`), hubV, []string{`/spec/placement is a string, not an object`}, "/spec/placement/zone"},
		{"bad preserved annotation", must(convert.HubOnly(p("spec.paused"), nil)), objAnn(spokeV, `{}`, `"{not json"`), hubV, []string{`annotation hubspoke.dev/preserved is not valid hubspoke data`}, "/metadata/annotations/hubspoke.dev~1preserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.rule)
			out, err := c.Convert([]byte("keep"), []byte(tt.in), tt.to)
			if err == nil {
				t.Fatalf("no error; output %s", out)
			}
			if string(out) != "keep" {
				t.Errorf("dst changed on error: %q", out)
			}
			var ce *convert.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not *convert.Error: %v", err, err)
			}
			if ce.Pointer != tt.pointer {
				t.Errorf("pointer %q, want %q (%v)", ce.Pointer, tt.pointer, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestUnknownVersionIsErrUnknownVersion(t *testing.T) {
	c := newConv(t)
	_, err := c.Convert(nil, []byte(obj(spokeV, `{}`)), "example.com/v3")
	if !errors.Is(err, convert.ErrUnknownVersion) {
		t.Fatalf("err = %v, want ErrUnknownVersion", err)
	}
}

func TestRoundingPolicies(t *testing.T) {
	tests := []struct {
		round convert.Rounding
		hub   string
		want  string
	}{
		{convert.RoundFloor, `"1.5s"`, `1`}, {convert.RoundCeil, `"1.5s"`, `2`}, {convert.RoundHalf, `"1.5s"`, `2`},
		{convert.RoundHalf, `"1.4s"`, `1`}, {convert.RoundFloor, `"-1.5s"`, `-2`}, {convert.RoundCeil, `"-1.5s"`, `-1`},
		{convert.RoundHalf, `"-1.5s"`, `-2`}, {convert.RoundFloor, `"1m0s"`, `60`}, {convert.RoundReject, `"2h"`, `7200`},
	}
	for _, tt := range tests {
		t.Run(string(tt.round)+tt.hub, func(t *testing.T) {
			c := newConv(t, must(convert.Duration(p("spec.s"), p("spec.t"), time.Second, tt.round)))
			got := convertOK(t, c, obj(hubV, `{"t":`+tt.hub+`}`), spokeV)
			if !strings.Contains(got, `"spec":{"s":`+tt.want+`}`) {
				t.Errorf("got %s, want s=%s", got, tt.want)
			}
			// Back to the hub: the exact value returns while s is unchanged.
			back := convertOK(t, c, got, hubV)
			if want := obj(hubV, `{"t":`+tt.hub+`}`); back != want {
				t.Errorf("round trip:\n got %s\nwant %s", back, want)
			}
		})
	}
}

// TestStaleKeptValue: a kept exact value never overwrites an edit made
// through the other version since it was kept.
func TestStaleKeptValue(t *testing.T) {
	c := newConv(t, must(convert.Duration(p("spec.s"), p("spec.t"), time.Second, convert.RoundCeil)))
	spoke := convertOK(t, c, obj(hubV, `{"t":"1.5s"}`), spokeV)
	if !strings.Contains(spoke, `"s":2`) || !strings.Contains(spoke, `exact`) {
		t.Fatalf("expected rounding with a kept exact value: %s", spoke)
	}
	edited := strings.Replace(spoke, `"s":2`, `"s":7`, 1)
	got := convertOK(t, c, edited, hubV)
	if want := obj(hubV, `{"t":"7s"}`); got != want {
		t.Errorf("edit lost:\n got %s\nwant %s", got, want)
	}
}

func TestHubOnlyPreserved(t *testing.T) {
	c := newConv(t,
		must(convert.HubOnly(p("spec.paused"), nil)),
		must(convert.HubOnly(p("spec.placement.zone"), nil)),
	)
	hub := obj(hubV, `{"size":1,"paused":false,"placement":{"zone":"z1","region":"r"}}`)
	spoke := convertOK(t, c, hub, spokeV)
	want := objAnn(spokeV, `{"size":1,"placement":{"region":"r"}}`, `"{\"v1\":{\"fields\":{\"/spec/paused\":false,\"/spec/placement/zone\":\"z1\"}}}"`)
	if spoke != want {
		t.Errorf("to spoke:\n got %s\nwant %s", spoke, want)
	}
	back := convertOK(t, c, spoke, hubV)
	// Restored fields are appended; the annotation (and the annotations map
	// it alone filled) is removed.
	if want := obj(hubV, `{"size":1,"placement":{"region":"r","zone":"z1"},"paused":false}`); back != want {
		t.Errorf("back to hub:\n got %s\nwant %s", back, want)
	}
	// Nothing to keep: no annotation.
	if got := convertOK(t, c, obj(hubV, `{"size":1}`), spokeV); got != obj(spokeV, `{"size":1}`) {
		t.Errorf("annotation added with nothing to keep: %s", got)
	}
	// Other annotations stay; ours goes when no longer needed.
	withOther := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"annotations":{"keep":"me","hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/paused\":true}}}"}},"spec":{}}`
	if got, want := convertOK(t, c, withOther, hubV), `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"annotations":{"keep":"me"}},"spec":{"paused":true}}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	// A value set on the spoke object itself (an edit) wins over the kept one.
	edited := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"annotations":{"hubspoke.dev/preserved":"{\"v1\":{\"fields\":{\"/spec/paused\":true}}}"}},"spec":{"paused":false}}`
	if got, want := convertOK(t, c, edited, hubV), `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{},"spec":{"paused":false}}`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestDefaults(t *testing.T) {
	c := newConv(t, must(convert.HubOnly(p("spec.priority"), []byte(`"Normal"`))))
	tests := []struct{ name, spoke, hub string }{
		{"missing gets the default", `{}`, `{"priority":"Normal"}`},
		{"spec missing stays missing, as with the API server's defaulting", ``, ``},
		{"spec null stays null", `null`, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := convertOK(t, c, obj(spokeV, tt.spoke), hubV), obj(hubV, tt.hub); got != want {
				t.Errorf("got %s\nwant %s", got, want)
			}
		})
	}
	// The default value is not kept (the way back sets it); null and zero
	// values are distinct from it and are kept.
	for _, tt := range []struct{ hub, wantAnn string }{
		{`{"priority":"Normal"}`, ``},
		{`{"priority":null}`, `\"/spec/priority\":null`},
		{`{"priority":""}`, `\"/spec/priority\":\"\"`},
	} {
		spoke := convertOK(t, c, obj(hubV, tt.hub), spokeV)
		if tt.wantAnn == "" && strings.Contains(spoke, "preserved") || tt.wantAnn != "" && !strings.Contains(spoke, tt.wantAnn) {
			t.Errorf("hub %s -> %s, want annotation with %q", tt.hub, spoke, tt.wantAnn)
		}
		if back := convertOK(t, c, spoke, hubV); back != obj(hubV, tt.hub) {
			t.Errorf("round trip of %s gave %s", tt.hub, back)
		}
	}
}

func TestSpokeOnly(t *testing.T) {
	c := newConv(t, must(convert.SpokeOnly(p("spec.debug"), nil)))
	hub := convertOK(t, c, obj(spokeV, `{"debug":true,"x":1}`), hubV)
	if !strings.Contains(hub, `\"v1alpha1\":{\"fields\":{\"/spec/debug\":true}}`) || strings.Contains(hub, `"debug":true`) {
		t.Errorf("spoke-only field not kept: %s", hub)
	}
	// Through another spoke and back: kept all the way.
	other := convertOK(t, c, hub, "example.com/v1beta1")
	back := convertOK(t, c, other, spokeV)
	if want := obj(spokeV, `{"x":1,"debug":true}`); back != want {
		t.Errorf("got %s\nwant %s", back, want)
	}
}

func TestListOrderKept(t *testing.T) {
	c := newConv(t, must(convert.ListToMap(p("spec.e"), p("spec.e"), "name", convert.KeyString, convert.OrderKeep)))
	hub := convertOK(t, c, obj(spokeV, `{"e":[{"name":"b"},{"name":"a"},{"name":"c"}]}`), hubV)
	// The API server stores map keys sorted: simulate it.
	var m map[string]any
	if err := json.Unmarshal([]byte(hub), &m); err != nil {
		t.Fatal(err)
	}
	sorted, _ := json.Marshal(m)
	back := convertOK(t, c, string(sorted), spokeV)
	if !strings.Contains(back, `"e":[{"name":"b"},{"name":"a"},{"name":"c"}]`) || strings.Contains(back, "preserved") {
		t.Errorf("order lost or annotation left: %s", back)
	}
	// An entry added through the hub since comes after the kept order.
	m["spec"].(map[string]any)["e"].(map[string]any)["0"] = map[string]any{}
	delete(m["spec"].(map[string]any)["e"].(map[string]any), "a")
	edited, _ := json.Marshal(m)
	back = convertOK(t, c, string(edited), spokeV)
	if !strings.Contains(back, `"e":[{"name":"b"},{"name":"c"},{"name":"0"}]`) {
		t.Errorf("edit through the hub mishandled: %s", back)
	}
}

func TestAnnotationLimit(t *testing.T) {
	c := newConv(t, must(convert.HubOnly(p("spec.blob"), nil)))
	big := strings.Repeat("x", 200*1024)
	other := strings.Repeat("y", 100*1024)
	in := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","annotations":{"other":"` + other + `"}},"spec":{"blob":"` + big + `"}}`
	_, err := c.Convert(nil, []byte(in), spokeV)
	if err == nil || !strings.Contains(err.Error(), "over the API server's limit of 262144 bytes") {
		t.Fatalf("err = %v, want the annotation limit", err)
	}
	// Under the limit it works.
	in = strings.Replace(in, other, "y", 1)
	convertOK(t, c, in, spokeV)
}

// TestAnnotationLimitBoundary: the preserved annotation may fill the
// annotations to exactly the API server's limit, keys and values counted,
// and not one byte more.
func TestAnnotationLimitBoundary(t *testing.T) {
	c := newConv(t, must(convert.HubOnly(p("spec.blob"), nil)))
	in := func(other int) string {
		return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","annotations":{"example.com/other":"` +
			strings.Repeat("y", other) + `"}},"spec":{"blob":"` + strings.Repeat("x", 100<<10) + `"}}`
	}
	// The size of the converted annotations with a one-byte "other",
	// counted as the API server counts it: keys and values, decoded.
	size := func(out string) int {
		var o struct {
			Metadata struct{ Annotations map[string]string }
		}
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, v := range o.Metadata.Annotations {
			n += len(k) + len(v)
		}
		return n
	}
	base := size(convertOK(t, c, in(1), spokeV))
	atLimit := 1 + apirules.MaxAnnotationsBytes - base
	if got := size(convertOK(t, c, in(atLimit), spokeV)); got != apirules.MaxAnnotationsBytes {
		t.Fatalf("annotations of %d bytes, want exactly %d", got, apirules.MaxAnnotationsBytes)
	}
	_, err := c.Convert(nil, []byte(in(atLimit+1)), spokeV)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("grows metadata.annotations to %d bytes, over the API server's limit of %d bytes", apirules.MaxAnnotationsBytes+1, apirules.MaxAnnotationsBytes)) {
		t.Fatalf("one byte over the limit: err = %v", err)
	}
}

func TestDeterministicAndConcurrent(t *testing.T) {
	c := newConv(t,
		must(convert.ListToMap(p("spec.e"), p("spec.m"), "name", convert.KeyString, convert.OrderKeep)),
		must(convert.HubOnly(p("spec.paused"), nil)),
		must(convert.Rename(p("spec.replicas"), p("spec.size"))),
	)
	in := obj(hubV, `{"m":{"z":{"v":1},"a":{"v":2}},"paused":true,"size":3}`)
	first := convertOK(t, c, in, spokeV)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got, err := c.Convert(nil, []byte(in), spokeV); err != nil || string(got) != first {
					t.Errorf("differs: %s %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"enum not one-to-one", func() error {
			_, err := convert.Enum(p("spec.m"), p("spec.m"), map[string]string{"A": "X", "B": "X"})
			return err
		}, `spoke values "A" and "B" both map to hub value "X"`},
		{"rename into itself", func() error { _, err := convert.Rename(p("spec.a"), p("spec.a.b")); return err }, "into or out of itself"},
		{"rename metadata", func() error { _, err := convert.Rename(p("metadata.name"), p("spec.x")); return err }, "restores metadata"},
		{"rename the labels", func() error { _, err := convert.Rename(p("metadata.labels"), p("spec.x")); return err }, "restores metadata"},
		{"bad label key", func() error { _, err := convert.Rename(p(`metadata.labels["a b"]`), p("spec.x")); return err }, `"a b" is not a label key`},
		{"hubspoke's annotation", func() error {
			_, err := convert.Rename(p(`metadata.annotations["hubspoke.dev/preserved"]`), p("spec.x"))
			return err
		}, "hubspoke's own"},
		{"rename apiVersion", func() error { _, err := convert.Rename(p("apiVersion"), p("spec.x")); return err }, "set by the engine"},
		{"scale both", func() error { _, err := convert.Scale(p("spec.a"), p("spec.b"), 2, 2); return err }, "exactly one of multiply and divide"},
		{"bad rounding", func() error { _, err := convert.Duration(p("spec.a"), p("spec.b"), time.Second, "up"); return err }, "round must be one of"},
		{"funcs one-way", func() error {
			_, err := convert.Funcs("x", func(*convert.Object) error { return nil }, nil)
			return err
		}, "cannot invert Go code"},
		{"hub as spoke", func() error {
			_, err := convert.New(convert.Definition{Group: "g", Kind: "K", Hub: "v1", Spokes: []convert.Spoke{{Version: "v1"}}})
			return err
		}, "is the hub and cannot also be a spoke"},
		{"listToMap bad order", func() error {
			_, err := convert.ListToMap(p("spec.a"), p("spec.a"), "k", "", "random")
			return err
		}, "order must be keep or ignore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestEncodeNamesWhatIsNotJSON: a Go func writing +Inf gets an error that
// names the value and the pointer, not encoding/json's.
func TestEncodeNamesWhatIsNotJSON(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{math.Inf(1), "rule funcs inf: /spec/ratio: +Inf is not a JSON value"},
		{math.NaN(), "/spec/ratio: NaN is not a JSON value"},
		{make(chan int), "/spec/ratio: a value of Go type chan int has no JSON form"},
	} {
		f := must(convert.Funcs("inf", func(o *convert.Object) error { return o.Encode(p("spec.ratio"), tc.v) }, func(*convert.Object) error { return nil }))
		c := newConv(t, f)
		_, err := c.Convert(nil, []byte(obj(spokeV, `{}`)), hubV)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "json: ") {
			t.Errorf("%v: err = %v, want it to say %q", tc.v, err, tc.want)
		}
	}
}
