package bench_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert"
	_ "github.com/hubspoke/hubspoke/convert/celenv" // the kinds that run CEL (when, derive, object)
	"github.com/hubspoke/hubspoke/convert/rules"
)

// The rule kinds of rules v3 on the Widgets of the other benchmarks: each
// case adds one rule to the Widget's rename (spec.replicas <-> spec.size)
// and a field for it to each Widget's spec (the spoke's form in v1alpha1
// Widgets, the hub's in v1 ones), so that every object runs the kind.

// kindCase is one rule kind with the fields it converts.
type kindCase struct {
	name string
	rule string // the rule, after the rename
	// spoke and hub are members added at the start of spec (without a
	// trailing comma), label a label added to metadata.labels.
	spoke, hub, label string
}

var kindCases = []kindCase{
	{name: "rename", rule: "", spoke: "", hub: ""},
	{name: "missing", rule: "    - missing: {path: spec.enabled, hub: false}\n", spoke: "", hub: `"enabled":false`},
	{name: "enum-integer", rule: "    - enum: {from: spec.level, values: {0: Low, 1: Medium, 2: High}}\n", spoke: `"level":1`, hub: `"level":"Medium"`},
	{name: "quantity-integer", rule: "    - quantity: {from: spec.memory, to: spec.memoryBytes, spoke: string, hub: integer}\n", spoke: `"memory":"512Mi"`, hub: `"memoryBytes":536870912`},
	{name: "quantity-object", rule: "    - quantity: {from: spec.storage, spoke: string, hub: object}\n", spoke: `"storage":"50Gi"`, hub: `"storage":{"value":50,"unit":"Gi"}`},
	{name: "scale-round", rule: "    - scale: {from: spec.bytes, to: spec.kib, divide: 1024, round: ceil}\n", spoke: `"bytes":4096`, hub: `"kib":4`},
	{name: "scale-round-kept", rule: "    - scale: {from: spec.bytes, to: spec.kib, divide: 1024, round: ceil}\n", spoke: `"bytes":4000`, hub: `"kib":4`},
	{name: "listToItem-empty", rule: "    - listToItem: {from: spec.homes, to: spec.home, empty: absent}\n", spoke: `"homes":[{"city":"bergen"}]`, hub: `"home":{"city":"bergen"}`},
	{name: "tree", rule: "    - rename: {from: 'spec.routes[**].t', to: 'spec.routes[**].timeout'}\n",
		spoke: `"routes":[{"t":1,"routes":[{"t":2},{"t":3}]},{"t":4}]`, hub: `"routes":[{"timeout":1,"routes":[{"timeout":2},{"timeout":3}]},{"timeout":4}]`},
	{name: "label", rule: `    - rename: {from: 'metadata.labels["example.com/cluster"]', to: spec.clusterName}` + "\n",
		hub: `"clusterName":"c1"`, label: `"example.com/cluster":"c1"`},
	{name: "constant", rule: "    - constant: {path: spec.format, value: v2}\n", spoke: "", hub: `"format":"v2"`},
	{name: "drop", rule: "    - drop: {path: spec.debug, acknowledgeLoss: bench}\n", spoke: `"debug":true`, hub: ""},
	{name: "restore-kept", rule: "    - hubOnly: {path: spec.paused, restore: kept}\n", spoke: "", hub: ""},
	{name: "when", rule: `    - rename: {from: spec.tier, to: spec.class, when: 'object.metadata.namespace != "legacy"'}` + "\n", spoke: `"tier":"gold"`, hub: `"class":"gold"`},
	{name: "derive", rule: `    - hubOnly: {path: spec.clusterName, derive: 'object.metadata.?labels[?"example.com/cluster"]'}` + "\n",
		hub: `"clusterName":"c1"`, label: `"example.com/cluster":"c1"`},
	{name: "cel-object", rule: `    - cel: {from: spec.ns, toHub: 'self == object.metadata.namespace ? "" : self', fromHub: self, otherwise: keep}` + "\n", spoke: `"ns":"x"`, hub: `"ns":"x"`},
	{name: "dropIfEmpty", rule: `    - cel: {from: spec.ref, toHub: self, fromHub: '{?"group": self.?group.orValue("") != "" ? self.?group : optional.none()}', otherwise: keep, dropIfEmpty: true}` + "\n",
		spoke: `"ref":{"group":"g"}`, hub: `"ref":{"group":"g"}`},
}

// kindRules returns the converter of a case: the Widget's rename, then
// the case's rule.
func kindRules(tb testing.TB, k kindCase) *convert.Converter {
	tb.Helper()
	c, err := rules.Load("kind.yaml", []byte(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - rename: {from: spec.replicas, to: spec.size}
`+k.rule))
	if err != nil {
		tb.Fatalf("%s: %v", k.name, err)
	}
	return c
}

// kindObjects returns n Widgets of version (v1alpha1 or v1) carrying the
// case's field and label.
func kindObjects(tb testing.TB, k kindCase, version string, n int) [][]byte {
	tb.Helper()
	field := k.spoke
	if version == "v1" {
		field = k.hub
	}
	var out [][]byte
	for _, o := range widgets(tb, version, n, 0) {
		o = bytes.Clone(o)
		if field != "" {
			o = insertAfter(tb, o, `"spec":{`, field+",")
		}
		if k.label != "" {
			o = insertAfter(tb, o, `"labels":{`, k.label+",")
		}
		out = append(out, o)
	}
	return out
}

// insertAfter inserts what after the first at in o (the metadata's or the
// spec's opening: the escaped copy in last-applied-configuration does not
// match).
func insertAfter(tb testing.TB, o []byte, at, what string) []byte {
	i := bytes.Index(o, []byte(at))
	if i < 0 {
		tb.Fatalf("no %s in %.100s", at, o)
	}
	i += len(at)
	return append(o[:i:i], append([]byte(what), o[i:]...)...)
}

// TestKindsRoundTrip: every case converts its Widgets both ways and back
// to the same object, so the benchmarks measure working conversions.
func TestKindsRoundTrip(t *testing.T) {
	for _, k := range kindCases {
		c := kindRules(t, k)
		for _, d := range directions {
			back := "example.com/" + d.from
			for i, o := range kindObjects(t, k, d.from, 20) {
				mid, err := c.Convert(nil, o, d.to)
				if err != nil {
					t.Fatalf("%s %s object %d: %v", k.name, d.name, i, err)
				}
				out, err := c.Convert(nil, mid, back)
				if err != nil {
					t.Fatalf("%s %s object %d back: %v", k.name, d.name, i, err)
				}
				if diff := cmp.Diff(decodeJSON(t, o), decodeJSON(t, out)); diff != "" {
					t.Fatalf("%s %s object %d round trip (-want +got):\n%s\nvia %s", k.name, d.name, i, diff, mid)
				}
			}
		}
	}
}

// BenchmarkKinds converts 1000 Widgets with each rule kind of rules v3
// (beside the Widget's rename), hubspoke alone: ns/op / 1000 is the cost
// per object, allocs/op / 1000 the allocations per object.
func BenchmarkKinds(b *testing.B) {
	for _, k := range kindCases {
		c := kindRules(b, k)
		for _, d := range directions {
			objs := kindObjects(b, k, d.from, 1000)
			b.Run(fmt.Sprintf("kind=%s/dir=%s", k.name, d.name), func(b *testing.B) {
				benchBatch(b, c, objs, totalBytes(objs), d.to)
			})
		}
	}
}

// BenchmarkKindsSpeedup is BenchmarkEngineSpeedup for each rule kind of
// rules v3: turns of hubspoke (the Widget's rename and the kind, on
// Widgets carrying the kind's field) and of controller-runtime's typed
// conversion of the same Widgets (which converts the Widget alone: a typed
// conversion of the kind would add its own work to that), each converting
// 1000 objects -speedup-batches times. speedup-x is hubspoke over
// controller-runtime.
func BenchmarkKindsSpeedup(b *testing.B) {
	typed := typedConverter(b)
	for _, k := range kindCases {
		c := kindRules(b, k)
		for _, d := range directions {
			objs := kindObjects(b, k, d.from, 1000)
			plain := widgets(b, d.from, 1000, 0)
			b.Run(fmt.Sprintf("kind=%s/dir=%s", k.name, d.name), func(b *testing.B) {
				var spent [2]time.Duration
				buf := make([]byte, 0, 2*totalBytes(objs))
				var err error
				for b.Loop() {
					for i, run := range []struct {
						c    converter
						objs [][]byte
					}{{c, objs}, {typed, plain}} {
						start := time.Now()
						for range *speedupBatches {
							buf = buf[:0]
							for _, o := range run.objs {
								if buf, err = run.c.Convert(buf, o, d.to); err != nil {
									b.Fatal(err)
								}
							}
						}
						spent[i] += time.Since(start)
					}
				}
				objects := float64(len(objs)) * float64(b.N) * float64(*speedupBatches)
				b.ReportMetric(objects/spent[0].Seconds(), "hubspoke-objects/s")
				b.ReportMetric(objects/spent[1].Seconds(), "controller-runtime-objects/s")
				b.ReportMetric(spent[1].Seconds()/spent[0].Seconds(), "speedup-x")
			})
		}
	}
}

// tinyObject is the tiny object of a case in version from: its
// metadata's name and namespace (and the case's label), and a spec of the
// Widget's field and the case's.
func tinyObject(k kindCase, from string) []byte {
	field, size := k.spoke, `"replicas":3`
	if from == "v1" {
		field, size = k.hub, `"size":3`
	}
	if field != "" {
		size += "," + field
	}
	labels := ""
	if k.label != "" {
		labels = `,"labels":{` + k.label + `}`
	}
	return []byte(`{"apiVersion":"example.com/` + from + `","kind":"Widget","metadata":{"name":"w","namespace":"ns"` + labels + `},"spec":{` + size + `}}`)
}

// BenchmarkKindsTiny converts one tiny object (its metadata's name, and
// the case's field) with each case's rules: the cost of a rule kind with
// next to nothing else to read or write, the shape of the declarative
// peer's per-strategy benchmark (which, unlike this one, leaves the JSON
// decoding and encoding out).
func BenchmarkKindsTiny(b *testing.B) {
	for _, k := range kindCases {
		c := kindRules(b, k)
		for _, d := range directions {
			obj := tinyObject(k, d.from)
			b.Run(fmt.Sprintf("kind=%s/dir=%s", k.name, d.name), func(b *testing.B) {
				buf := make([]byte, 0, 4*len(obj))
				var err error
				b.ReportAllocs()
				for b.Loop() {
					if buf, err = c.Convert(buf[:0], obj, d.to); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestKindsAllocs holds the kinds that evaluate CEL, keep a value or add
// a field to a bound on the allocations of one conversion of their tiny
// object (the larger of the two directions), so that a change that
// allocates more fails here rather than in a benchmark someone has to
// read. The bounds are what this tree allocates.
//
// A cel rule evaluates both of its expressions on every conversion; what
// each evaluation still allocates is cel-go's: the values the expression
// builds (a map literal, an optional, a string read from the input) and
// the runtime cost tracker of the API server's environment (its tracker,
// details and stack, about 5 an evaluation). Before, the cel rule building
// an object allocated 80 times a conversion, cel reading object 33, derive
// 19 to 20 and when 17. A kept value allocates the annotation's data (Go
// maps) and its key: 18 to 27 times before, with the annotations counted
// through a map of strings.
func TestKindsAllocs(t *testing.T) {
	bounds := map[string]float64{
		"dropIfEmpty":      20, // a cel rule building an object ({?"group": ...}), under dropIfEmpty
		"cel-object":       16,
		"derive":           10,
		"when":             10,
		"scale-round-kept": 7,
		"label":            11, // the way back keeps the hub's value
		"drop":             8,
		"missing":          0, // a field added to spec: in the arena
		"constant":         0,
	}
	for _, k := range kindCases {
		bound, ok := bounds[k.name]
		if !ok {
			continue
		}
		delete(bounds, k.name)
		c := kindRules(t, k)
		for _, d := range directions {
			obj := tinyObject(k, d.from)
			buf := make([]byte, 0, 4*len(obj))
			var err error
			allocs := testing.AllocsPerRun(200, func() {
				if buf, err = c.Convert(buf[:0], obj, d.to); err != nil {
					panic(fmt.Sprintf("%s %s: %v", k.name, d.name, err))
				}
			})
			t.Logf("%s %s: %v allocations a conversion", k.name, d.name, allocs)
			if allocs > bound {
				t.Errorf("%s %s: %v allocations a conversion, want at most %v", k.name, d.name, allocs, bound)
			}
		}
	}
	for name := range bounds {
		t.Errorf("no case %s", name)
	}
}
