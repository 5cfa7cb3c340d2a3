package convert_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert"
)

func pat(s string) *convert.Pattern {
	p, err := convert.ParsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

const cron = "{minute} {hour} {dayOfMonth} {month} {dayOfWeek}"

// specOf returns the spec and the preserved annotation of a converted object.
func specOf(t *testing.T, out string) (spec, preserved string) {
	t.Helper()
	var o struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	return string(o.Spec), o.Metadata.Annotations[convert.PreservedAnnotation]
}

func sameJSON(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: %v: %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want: %v: %s", what, err, want)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// TestNewFormsBothWays: each new form converts the spoke to the hub as
// written, and the hub back to the spoke exactly (through the preserved
// annotation where a value has no form in the hub).
func TestNewFormsBothWays(t *testing.T) {
	tests := []struct {
		name      string
		rules     []convert.Rule
		spoke     string
		hub       string
		preserved string // the annotation on the hub object, "" for none
	}{
		{name: "rename in every item", rules: []convert.Rule{must(convert.Rename(p("spec.items[*].img"), p("spec.items[*].image")))},
			spoke: `{"items":[{"img":"a","x":1},{"x":2},"s",{"img":"c"}]}`, hub: `{"items":[{"image":"a","x":1},{"x":2},"s",{"image":"c"}]}`},
		{name: "rename in items of nested lists", rules: []convert.Rule{must(convert.Rename(p("spec.groups[*].members[*].n"), p("spec.groups[*].members[*].name")))},
			spoke: `{"groups":[{"members":[{"n":"a"},{"n":"b"}]},{"members":[]},{}]}`, hub: `{"groups":[{"members":[{"name":"a"},{"name":"b"}]},{"members":[]},{}]}`},
		{name: "rename in one item by key", rules: []convert.Rule{must(convert.Rename(p("spec.containers[name=app].img"), p("spec.containers[name=app].image")))},
			spoke: `{"containers":[{"name":"side","img":"s"},{"name":"app","img":"a"}]}`, hub: `{"containers":[{"name":"side","img":"s"},{"name":"app","image":"a"}]}`},
		{name: "enum on every item", rules: []convert.Rule{must(convert.Enum(p("spec.modes[*]"), p("spec.modes[*]"), map[string]string{"Fast": "Performance", "Slow": "Economy"}))},
			spoke: `{"modes":["Fast","Slow","Fast"]}`, hub: `{"modes":["Performance","Economy","Performance"]}`},
		{name: "scale in every map value", rules: []convert.Rule{must(convert.Scale(p("spec.backends.*.weight"), p("spec.backends.*.weight"), 10, 0))},
			spoke: `{"backends":{"a":{"weight":1},"b":{"weight":3,"x":true}}}`, hub: `{"backends":{"a":{"weight":10},"b":{"weight":30,"x":true}}}`},
		{name: "duration on every map value", rules: []convert.Rule{must(convert.Duration(p("spec.timeouts.*"), p("spec.timeouts.*"), time.Second, convert.RoundReject))},
			spoke: `{"timeouts":{"read":30,"write":90}}`, hub: `{"timeouts":{"read":"30s","write":"1m30s"}}`},
		{name: "many-to-one enum keeps the original", rules: []convert.Rule{must(convert.EnumWith(p("spec.mode"), p("spec.mode"), convert.EnumValues{Pairs: []convert.EnumPair{{"Fast", "Performance"}, {"Quick", "Performance"}, {"Slow", "Economy"}}}))},
			spoke: `{"mode":"Quick"}`, hub: `{"mode":"Performance"}`, preserved: `{"v1alpha1":{"exact":{"/spec/mode":{"value":"Quick","as":"Performance"}}}}`},
		{name: "many-to-one enum first value needs nothing kept", rules: []convert.Rule{must(convert.EnumWith(p("spec.mode"), p("spec.mode"), convert.EnumValues{Pairs: []convert.EnumPair{{"Fast", "Performance"}, {"Quick", "Performance"}}}))},
			spoke: `{"mode":"Fast"}`, hub: `{"mode":"Performance"}`},
		{name: "duration string in the spoke", rules: []convert.Rule{must(convert.DurationToInt(p("spec.timeout"), p("spec.timeoutSeconds"), time.Second, convert.RoundCeil))},
			spoke: `{"timeout":"1.5s"}`, hub: `{"timeoutSeconds":2}`, preserved: `{"v1alpha1":{"exact":{"/spec/timeout":{"value":"1.5s","as":2}}}}`},
		{name: "map in the spoke, list in the hub", rules: []convert.Rule{must(convert.MapToList(p("spec.ports"), p("spec.ports"), "name", convert.KeyString, convert.OrderKeep))},
			spoke: `{"ports":{"http":{"port":80},"admin":{"port":9}}}`, hub: `{"ports":[{"name":"admin","port":9},{"name":"http","port":80}]}`},
		{name: "map in the spoke, unsorted list in the hub", rules: []convert.Rule{must(convert.MapToList(p("spec.ports"), p("spec.ports"), "name", convert.KeyString, convert.OrderKeep))},
			spoke: `{"ports":{"http":{"port":80}}}`, hub: `{"ports":[{"name":"http","port":80}]}`},
		{name: "list item to object", rules: []convert.Rule{must(convert.ListToItem(p("spec.volumes"), p("spec.volume"), convert.OtherwiseFail))},
			spoke: `{"volumes":[{"size":1}]}`, hub: `{"volume":{"size":1}}`},
		{name: "object to list item", rules: []convert.Rule{must(convert.ItemToList(p("spec.volume"), p("spec.volumes"), convert.OtherwiseFail))},
			spoke: `{"volume":{"size":1}}`, hub: `{"volumes":[{"size":1}]}`},
		{name: "longer list kept aside", rules: []convert.Rule{must(convert.ListToItem(p("spec.volumes"), p("spec.volume"), convert.OtherwiseKeep))},
			spoke: `{"volumes":[1,2],"x":1}`, hub: `{"x":1}`, preserved: `{"v1alpha1":{"fields":{"/spec/volumes":[1,2]}}}`},
		{name: "cron split", rules: []convert.Rule{must(convert.Split(p("spec.schedule"), p("spec.schedule"), pat(cron), map[string]string{"dayOfWeek": "*"}, convert.OtherwiseFail))},
			spoke: `{"schedule":"30 2 * * 1"}`, hub: `{"schedule":{"minute":"30","hour":"2","dayOfMonth":"*","month":"*","dayOfWeek":"1"}}`},
		{name: "cron not matching kept aside", rules: []convert.Rule{must(convert.Split(p("spec.schedule"), p("spec.schedule"), pat(cron), nil, convert.OtherwiseKeep))},
			spoke: `{"schedule":"@daily"}`, hub: `{}`, preserved: `{"v1alpha1":{"fields":{"/spec/schedule":"@daily"}}}`},
		{name: "image join", rules: []convert.Rule{must(convert.Join(p("spec.image"), p("spec.image"), pat("{repository}:{tag:[^:/]+}"), map[string]string{"tag": "latest"}, convert.OtherwiseFail))},
			spoke: `{"image":{"repository":"registry:5000/nginx","tag":"1.2"}}`, hub: `{"image":"registry:5000/nginx:1.2"}`},
		{name: "image join default kept exact", rules: []convert.Rule{must(convert.Join(p("spec.image"), p("spec.image"), pat("{repository}:{tag:[^:/]+}"), map[string]string{"tag": "latest"}, convert.OtherwiseFail))},
			spoke: `{"image":{"repository":"nginx"}}`, hub: `{"image":"nginx:latest"}`, preserved: `{"v1alpha1":{"exact":{"/spec/image":{"value":{"repository":"nginx"},"as":"nginx:latest"}}}}`},
		{name: "hubOnly inside items kept by key", rules: []convert.Rule{must(convert.HubOnly(p("spec.containers[name=*].paused"), nil))},
			spoke: `{"containers":[{"name":"a"},{"name":"b"}]}`, hub: `{"containers":[{"name":"a"},{"name":"b"}]}`},
		{name: "split in every item", rules: []convert.Rule{must(convert.Split(p("spec.jobs[*].schedule"), p("spec.jobs[*].cron"), pat(cron), nil, convert.OtherwiseFail))},
			spoke: `{"jobs":[{"schedule":"0 0 1 1 *"}]}`, hub: `{"jobs":[{"cron":{"minute":"0","hour":"0","dayOfMonth":"1","month":"1","dayOfWeek":"*"}}]}`},
		{name: "map values inside list items", rules: []convert.Rule{must(convert.Scale(p("spec.pools[name=*].zones.*.cpu"), p("spec.pools[name=*].zones.*.milli"), 1000, 0))},
			spoke: `{"pools":[{"name":"a","zones":{"z1":{"cpu":2},"z2":{}}},{"name":"b"}]}`, hub: `{"pools":[{"name":"a","zones":{"z1":{"milli":2000},"z2":{}}},{"name":"b"}]}`},
		{name: "list of lists", rules: []convert.Rule{must(convert.IntToString(p("spec.grid[*][*]"), p("spec.grid[*][*]")))},
			spoke: `{"grid":[[1,2],[],[3]]}`, hub: `{"grid":[["1","2"],[],["3"]]}`},
		{name: "one item by quoted key", rules: []convert.Rule{must(convert.Rename(p(`spec.c[name="a.b"].x`), p(`spec.c[name="a.b"].y`)))},
			spoke: `{"c":[{"name":"a.b","x":1},{"name":"ab","x":2}]}`, hub: `{"c":[{"name":"a.b","y":1},{"name":"ab","x":2}]}`},
		{name: "one item by number key", rules: []convert.Rule{must(convert.Rename(p("spec.ports[port=80].n"), p("spec.ports[port=80].name")))},
			spoke: `{"ports":[{"port":80,"n":"http"},{"port":443,"n":"https"}]}`, hub: `{"ports":[{"port":80,"name":"http"},{"port":443,"n":"https"}]}`},
		{name: "keyed listToItem kept aside by key", rules: []convert.Rule{must(convert.ListToItem(p("spec.c[name=*].ports"), p("spec.c[name=*].port"), convert.OtherwiseKeep))},
			spoke: `{"c":[{"name":"a","ports":[1]},{"name":"b","ports":[]}]}`, hub: `{"c":[{"name":"a","port":1},{"name":"b"}]}`, preserved: `{"v1alpha1":{"fields":{"/spec/c/[name=\"b\"]/ports":[]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.rules...)
			in := obj(spokeV, tt.spoke)
			hub := convertOK(t, c, in, hubV)
			spec, pres := specOf(t, hub)
			sameJSON(t, "hub spec", spec, tt.hub)
			if pres != tt.preserved {
				if tt.preserved == "" || pres == "" {
					t.Errorf("preserved annotation %q, want %q", pres, tt.preserved)
				} else {
					sameJSON(t, "preserved", pres, tt.preserved)
				}
			}
			back := convertOK(t, c, hub, spokeV)
			sameJSON(t, "back in the spoke", back, in)
		})
	}
}

// TestNegativeZeroComesBack: -0 is an integer JSON allows whose value
// written back is 0, so a rule that reads it as an int64 (duration, scale)
// keeps the literal in the preserved annotation, and the way back restores
// it byte for byte. (Found by FuzzConvert.)
func TestNegativeZeroComesBack(t *testing.T) {
	tests := []struct {
		name      string
		rule      convert.Rule
		spoke     string
		hub       string
		preserved string
	}{
		{name: "duration", rule: must(convert.Duration(p("spec.t"), p("spec.t"), time.Second, convert.RoundReject)),
			spoke: `{"t":-0}`, hub: `{"t":"0s"}`, preserved: `{"v1alpha1":{"exact":{"/spec/t":{"value":-0,"as":"0s"}}}}`},
		{name: "scale multiply", rule: must(convert.Scale(p("spec.n"), p("spec.n"), 10, 0)),
			spoke: `{"n":-0}`, hub: `{"n":0}`, preserved: `{"v1alpha1":{"exact":{"/spec/n":{"value":-0,"as":0}}}}`},
		{name: "scale divide", rule: must(convert.Scale(p("spec.n"), p("spec.n"), 0, 10)),
			spoke: `{"n":-0}`, hub: `{"n":0}`, preserved: `{"v1alpha1":{"exact":{"/spec/n":{"value":-0,"as":0}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.rule)
			in := obj(spokeV, tt.spoke)
			hub := convertOK(t, c, in, hubV)
			spec, pres := specOf(t, hub)
			if spec != tt.hub {
				t.Errorf("hub spec %s, want %s", spec, tt.hub)
			}
			if pres != tt.preserved {
				t.Errorf("preserved annotation %s, want %s", pres, tt.preserved)
			}
			if back := convertOK(t, c, hub, spokeV); back != in {
				t.Errorf("back in the spoke:\n got %s\nwant %s", back, in)
			}
		})
	}
	// A hub integer -0 going to a spoke duration string comes back too.
	c := newConv(t, must(convert.DurationToInt(p("spec.timeout"), p("spec.timeoutSeconds"), time.Second, convert.RoundReject)))
	in := obj(hubV, `{"timeoutSeconds":-0}`)
	spoke := convertOK(t, c, in, spokeV)
	if back := convertOK(t, c, spoke, hubV); back != in {
		t.Errorf("hub -> spoke -> hub:\n got %s\nwant %s\n(spoke %s)", back, in, spoke)
	}
}

// TestHubFieldsInItemsFollowTheirKey: a hub-only field inside list-map
// items is kept by the item's key, so it comes back to the same item
// after the spoke reorders the list; kept by position, it stays in place.
func TestHubFieldsInItemsFollowTheirKey(t *testing.T) {
	c := newConv(t, must(convert.HubOnly(p("spec.c[name=*].paused"), nil)))
	hub := obj(hubV, `{"c":[{"name":"a","paused":true},{"name":"b","paused":false}]}`)
	spoke := convertOK(t, c, hub, spokeV)
	spec, pres := specOf(t, spoke)
	sameJSON(t, "spoke", spec, `{"c":[{"name":"a"},{"name":"b"}]}`)
	sameJSON(t, "kept", pres, `{"v1":{"fields":{"/spec/c/[name=\"a\"]/paused":true,"/spec/c/[name=\"b\"]/paused":false}}}`)
	reordered := strings.Replace(spoke, `[{"name":"a"},{"name":"b"}]`, `[{"name":"b"},{"name":"a"}]`, 1)
	back := convertOK(t, c, reordered, hubV)
	spec, pres = specOf(t, back)
	sameJSON(t, "hub", spec, `{"c":[{"name":"b","paused":false},{"name":"a","paused":true}]}`)
	if pres != "" {
		t.Errorf("annotation left: %s", pres)
	}

	// An item removed in the spoke takes what was kept for it along: the
	// hub object carries no stale data, and an item added later under the
	// same name does not get it back.
	removed := strings.Replace(spoke, `[{"name":"a"},{"name":"b"}]`, `[{"name":"a"}]`, 1)
	back = convertOK(t, c, removed, hubV)
	spec, pres = specOf(t, back)
	sameJSON(t, "hub", spec, `{"c":[{"name":"a","paused":true}]}`)
	if pres != "" {
		t.Errorf("stale data left: %s", pres)
	}

	byPos := newConv(t, must(convert.HubOnly(p("spec.c[*].paused"), nil)))
	spoke = convertOK(t, byPos, hub, spokeV)
	_, pres = specOf(t, spoke)
	sameJSON(t, "kept by position", pres, `{"v1":{"fields":{"/spec/c/0/paused":true,"/spec/c/1/paused":false}}}`)
}

func TestHubOnlyEnumValue(t *testing.T) {
	c := newConv(t, must(convert.EnumWith(p("spec.mode"), p("spec.mode"), convert.EnumValues{
		Pairs:   []convert.EnumPair{{"Fast", "Performance"}, {"Slow", "Economy"}},
		HubOnly: []convert.EnumPair{{Hub: "Balanced", Spoke: "Slow"}},
	})))
	hub := obj(hubV, `{"mode":"Balanced"}`)
	spoke := convertOK(t, c, hub, spokeV)
	spec, _ := specOf(t, spoke)
	sameJSON(t, "spoke", spec, `{"mode":"Slow"}`)
	back := convertOK(t, c, spoke, hubV)
	sameJSON(t, "back", back, hub)
	// An edit through the spoke wins over the kept hub value.
	edited := strings.Replace(spoke, `"mode":"Slow"`, `"mode":"Fast"`, 1)
	spec, pres := specOf(t, convertOK(t, c, edited, hubV))
	sameJSON(t, "edited", spec, `{"mode":"Performance"}`)
	if pres != "" {
		t.Errorf("annotation left: %s", pres)
	}
}

func TestKeptAsideEditWins(t *testing.T) {
	c := newConv(t, must(convert.Split(p("spec.schedule"), p("spec.schedule"), pat(cron), nil, convert.OtherwiseKeep)))
	hub := convertOK(t, c, obj(spokeV, `{"schedule":"@daily"}`), hubV)
	// The hub gets a schedule of its own: it wins over the kept string.
	edited := strings.Replace(hub, `"spec":{}`, `"spec":{"schedule":{"minute":"1","hour":"2","dayOfMonth":"3","month":"4","dayOfWeek":"5"}}`, 1)
	spec, pres := specOf(t, convertOK(t, c, edited, spokeV))
	sameJSON(t, "spoke", spec, `{"schedule":"1 2 3 4 5"}`)
	if pres != "" {
		t.Errorf("annotation left: %s", pres)
	}

	// A value the object already holds where a kept one would be restored
	// wins too.
	c = newConv(t, must(convert.ListToItem(p("spec.homes"), p("spec.home"), convert.OtherwiseKeep)))
	in := objAnn(hubV, `{"homes":[9]}`, `"{\"v1alpha1\":{\"fields\":{\"/spec/homes\":[1,2]}}}"`)
	spec, pres = specOf(t, convertOK(t, c, in, spokeV))
	sameJSON(t, "spoke keeps its own value", spec, `{"homes":[9]}`)
	if pres != "" {
		t.Errorf("annotation left: %s", pres)
	}
}

// TestNewFormErrors: every failure names the object, the JSON pointer of
// the item (by index) and the rule.
func TestNewFormErrors(t *testing.T) {
	tests := []struct {
		name    string
		rule    convert.Rule
		to      string
		in      string
		pointer string
		want    string
	}{
		{"rename conflict in an item", must(convert.Rename(p("spec.items[*].a"), p("spec.items[*].b"))), hubV, obj(spokeV, `{"items":[{"a":1},{"a":1,"b":2}]}`),
			"/spec/items/1/b", "rule rename spec.items[*].a -> spec.items[*].b: both /spec/items/1/a and /spec/items/1/b are set"},
		{"enum in an item", must(convert.Enum(p("spec.m[*]"), p("spec.m[*]"), map[string]string{"A": "X"})), hubV, obj(spokeV, `{"m":["A","B"]}`),
			"/spec/m/1", `rule enum spec.m[*]: value "B" is not mapped; allowed values: "A"`},
		{"not a list", must(convert.Rename(p("spec.items[*].a"), p("spec.items[*].b"))), hubV, obj(spokeV, `{"items":{"x":{"a":1}}}`),
			"/spec/items", "value is an object, not a list; use .* for the values of a map"},
		{"not a map", must(convert.Rename(p("spec.items.*.a"), p("spec.items.*.b"))), hubV, obj(spokeV, `{"items":[{"a":1}]}`),
			"/spec/items", "value is a list, not a map; use [*] for the items of a list"},
		{"item without key", must(convert.Rename(p("spec.c[name=*].a"), p("spec.c[name=*].b"))), hubV, obj(spokeV, `{"c":[{"name":"x"},{"a":1}]}`),
			"/spec/c/1", `item has no key field "name"`},
		{"map value error", must(convert.Scale(p("spec.b.*.w"), p("spec.b.*.w"), 0, 2)), hubV, obj(spokeV, `{"b":{"x~y/z":{"w":3}}}`),
			"/spec/b/x~0y~1z/w", "3 is not a multiple of 2"},
		{"longer list", must(convert.ListToItem(p("spec.v"), p("spec.v"), convert.OtherwiseFail)), hubV, obj(spokeV, `{"v":[1,2]}`),
			"/spec/v", "list has 2 items; the other version holds exactly one (otherwise: fail"},
		{"pattern mismatch", must(convert.Split(p("spec.s"), p("spec.s"), pat(cron), nil, convert.OtherwiseFail)), hubV, obj(spokeV, `{"s":"@daily"}`),
			"/spec/s", `value "@daily" does not match pattern`},
		{"join missing field", must(convert.Join(p("spec.i"), p("spec.i"), pat("{r}:{t}"), nil, convert.OtherwiseFail)), hubV, obj(spokeV, `{"i":{"r":"x"}}`),
			"/spec/i", `field "t" is missing and has no default`},
		{"join ambiguous", must(convert.Join(p("spec.i"), p("spec.i"), pat("{r}:{t}"), nil, convert.OtherwiseFail)), hubV, obj(spokeV, `{"i":{"r":"a:b","t":"c"}}`),
			"/spec/i", `fields r="a:b" t="c" join as "a:b:c", which does not split back into them`},
		{"join unknown field", must(convert.Join(p("spec.i"), p("spec.i"), pat("{r}:{t}"), nil, convert.OtherwiseFail)), hubV, obj(spokeV, `{"i":{"r":"a","t":"b","x":"c"}}`),
			"/spec/i", `field "x" is not in pattern`},
		{"enum unmapped hub value", must(convert.EnumWith(p("spec.m"), p("spec.m"), convert.EnumValues{Pairs: []convert.EnumPair{{"A", "X"}}, HubOnly: []convert.EnumPair{{Hub: "Y", Spoke: "A"}}})), spokeV, obj(hubV, `{"m":"Z"}`),
			"/spec/m", `value "Z" is not mapped; allowed values: "X", "Y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.rule)
			_, err := c.Convert(nil, []byte(tt.in), tt.to)
			if err == nil {
				t.Fatal("converted, want an error")
			}
			var ce *convert.Error
			if !asErr(err, &ce) {
				t.Fatalf("not a *convert.Error: %v", err)
			}
			if ce.Pointer != tt.pointer {
				t.Errorf("pointer %q, want %q (%v)", ce.Pointer, tt.pointer, err)
			}
			if ce.Name != "w" || ce.Namespace != "ns" {
				t.Errorf("object %s/%s, want ns/w", ce.Namespace, ce.Name)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, tt.want)
			}
		})
	}
}

func TestParsePointer(t *testing.T) {
	p, err := convert.ParsePointer("/spec/items/0/a~1b~0c")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Segments(), " "); got != "spec items 0 a/b~c" {
		t.Errorf("segments %q", got)
	}
	if p.Pointer() != "/spec/items/0/a~1b~0c" {
		t.Errorf("pointer %q", p.Pointer())
	}
	for _, bad := range []string{"spec", "/a/~2"} {
		if _, err := convert.ParsePointer(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestObjectRefusesSelectors: Go code given a path with selectors gets an
// error, not the value of another field.
func TestObjectRefusesSelectors(t *testing.T) {
	r := must(convert.Funcs("probe", func(o *convert.Object) error {
		if _, _, err := o.Get(p("spec.items[*].a")); err == nil {
			return fmt.Errorf("Get took a path with selectors")
		}
		if err := o.Set(p("spec.items[*].a"), []byte("1")); err == nil {
			return fmt.Errorf("Set took a path with selectors")
		}
		if _, _, err := o.Delete(p("spec.b.*")); err == nil {
			return fmt.Errorf("Delete took a path with selectors")
		}
		if err := o.Encode(p("spec.b.*"), 1); err == nil {
			return fmt.Errorf("Encode took a path with selectors")
		}
		return nil
	}, func(*convert.Object) error { return nil }))
	c := newConv(t, r)
	convertOK(t, c, obj(spokeV, `{"a":1,"items":[{"a":2}]}`), hubV)
}

func asErr(err error, target **convert.Error) bool {
	e, ok := err.(*convert.Error)
	*target = e
	return ok
}

func TestParsePath(t *testing.T) {
	tests := []struct{ in, str, schema, err string }{
		{in: "spec.a", str: "spec.a", schema: "spec a"},
		{in: "spec.c[*].image", str: "spec.c[*].image", schema: "spec c * image"},
		{in: "spec.c[name=*].image", str: "spec.c[name=*].image", schema: "spec c * image"},
		{in: "spec.c[name=app].ports[port=80].p", str: "spec.c[name=app].ports[port=80].p", schema: "spec c * ports * p"},
		{in: `spec.c[name="a.b"].x`, str: `spec.c[name="a.b"].x`, schema: "spec c * x"},
		{in: "spec.b.*.w", str: "spec.b.*.w", schema: "spec b {} w"},
		{in: `spec.labels["app.kubernetes.io/name"]`, str: `spec.labels["app.kubernetes.io/name"]`, schema: "spec labels app.kubernetes.io/name"},
		{in: `spec.ports["80"]`, str: `spec.ports["80"]`, schema: "spec ports 80"},
		{in: "/spec/a~1b", str: "spec.a/b", schema: "spec a/b"},
		{in: "/spec/items/0/x", err: `segment "0" is a list index`},
		{in: "spec.items.0.x", err: `segment "0" is a list index`},
		{in: "spec.items[0].x", err: "[0] is not a selector"},
		{in: "spec..x", err: "empty segment"},
		{in: "spec.c[name=].x", err: "has no value"},
		{in: "spec.c[*", err: "is not closed"},
		{in: "[*].x", err: "a path starts with a key"},
		{in: "spec.c[*]x", err: `unexpected 'x' after ]`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := convert.ParsePath(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.str {
				t.Errorf("String() = %q, want %q", got.String(), tt.str)
			}
			if s := strings.Join(got.SchemaSegments(), " "); s != tt.schema {
				t.Errorf("SchemaSegments() = %q, want %q", s, tt.schema)
			}
			again, err := convert.ParsePath(got.String())
			if err != nil || !again.Equal(got) {
				t.Errorf("String() does not parse back: %v", err)
			}
		})
	}
}
