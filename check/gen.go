package check

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"pgregory.net/rapid"

	"github.com/hubspoke/hubspoke/schema"
)

// Generator generates objects of one version from its structural schema.
// Values cover the edge cases a conversion must survive: missing fields,
// null where nullable, zero, empty strings, lists and maps, minimum and
// maximum, long strings, unicode, big integers, unknown fields where the
// schema keeps them, status and full metadata. They honour the schema at
// every depth: required fields (also below the depth where optional fields
// stop), enums, formats, patterns, lengths, bounds, multipleOf,
// int-or-string, preserve-unknown-fields, embedded resources and unique
// list-map keys and set items. CEL rules (x-kubernetes-validations) cannot
// be generated towards; Laws validates every object with the API server's
// CEL validator and counts the ones that fail.
type Generator struct {
	apiVersion, kind string
	root             *schema.Node
	maxDepth         int

	mu       sync.Mutex
	patterns map[string]*rapid.Generator[string]
	cel      map[*apiextv1.ValidationRule]*cel.Validator
}

// NewGenerator returns a generator for version v of crd.
func NewGenerator(crd *schema.CRD, v *schema.Version) (*Generator, error) {
	if v.Structural == nil {
		return nil, fmt.Errorf("version %s: %w", v.Name, v.StructuralErr)
	}
	return &Generator{
		apiVersion: crd.Group() + "/" + v.Name,
		kind:       crd.Kind(),
		root:       v.Structural,
		maxDepth:   6,
		patterns:   map[string]*rapid.Generator[string]{},
		cel:        map[*apiextv1.ValidationRule]*cel.Validator{},
	}, nil
}

// Object returns the rapid generator of whole objects (decoded JSON, with
// int64 and float64 numbers).
func (g *Generator) Object() *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		return g.object(t)
	})
}

var (
	genChoice  = rapid.IntRange(0, 7)
	genPresent = rapid.IntRange(0, 3)
	genCount   = rapid.IntRange(0, 3)
	genBool    = rapid.Bool()
	// Small strings collide often, as names and keys do: duplicates in
	// lists and maps are what conversions trip on.
	genSmall   = rapid.OneOf(rapid.SampledFrom([]string{"a", "b", "x-0"}), rapid.StringOfN(rapid.RuneFrom([]rune("abcxyz-0")), 1, 6, -1))
	genUnicode = rapid.StringOfN(rapid.Rune(), 0, 12, -1)
	genASCII   = rapid.StringOfN(rapid.RuneFrom(asciiPrintable()), 0, 24, -1)
	genName    = rapid.SampledFrom([]string{"a", "widget-1", "x.y-z", strings.Repeat("n", 63)})
	genNS      = rapid.SampledFrom([]string{"default", "team-a"})
	genTime    = rapid.SampledFrom([]string{"2024-01-02T03:04:05Z", "1970-01-01T00:00:00Z", "2038-01-19T03:14:08Z"})
	genLabelV  = rapid.SampledFrom([]string{"", "v", "demo", "a.b_c-D"})
)

func asciiPrintable() []rune {
	out := make([]rune, 0, 95)
	for r := rune(0x20); r < 0x7f; r++ {
		out = append(out, r)
	}
	return out
}

func (g *Generator) object(t *rapid.T) map[string]any {
	obj := map[string]any{}
	if o, ok := g.value(t, g.root, 0).(map[string]any); ok {
		obj = o
	}
	obj["apiVersion"] = g.apiVersion
	obj["kind"] = g.kind
	obj["metadata"] = g.metadata(t)
	// The API server defaults every object it stores or returns, so an
	// object without its version's defaults never reaches a webhook.
	defaulting.Default(obj, g.root)
	return obj
}

func (g *Generator) metadata(t *rapid.T) map[string]any {
	md := map[string]any{
		"name":      genName.Draw(t, "name"),
		"namespace": genNS.Draw(t, "namespace"),
	}
	if genBool.Draw(t, "full metadata") {
		md["uid"] = "6f1c3a8e-3c1b-4b7e-9d7a-0a1b2c3d4e5f"
		md["resourceVersion"] = "12345"
		md["generation"] = int64(7)
		md["creationTimestamp"] = genTime.Draw(t, "creationTimestamp")
		md["labels"] = map[string]any{"app": genLabelV.Draw(t, "label"), "example.com/tier": "backend"}
		md["annotations"] = map[string]any{
			"note":              genUnicode.Draw(t, "annotation"),
			"example.com/empty": "",
			"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`,
		}
		md["finalizers"] = []any{"example.com/cleanup"}
		md["ownerReferences"] = []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "0a1b2c3d-0000-4000-8000-000000000001",
			"controller": true, "blockOwnerDeletion": false,
		}}
		md["managedFields"] = []any{map[string]any{
			"manager": "kubectl", "operation": "Apply", "apiVersion": g.apiVersion, "time": "2024-01-02T03:04:05Z",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}},
		}}
	}
	return md
}

func (g *Generator) value(t *rapid.T, n *schema.Node, depth int) any {
	if n != nil && len(n.XValidations) > 0 {
		// Values must pass the node's CEL rules: draw again (a few times)
		// until the API server's CEL validator accepts one.
		c := g.celFor(n)
		var v any
		for i := 0; i < 8; i++ {
			v = g.plainValue(t, n, depth)
			if errs, _ := c.Validate(context.Background(), nil, n, v, nil, celconfig.RuntimeCELCostBudget); len(errs) == 0 {
				return v
			}
		}
		t.Skip("no value passing the CEL rules")
	}
	return g.plainValue(t, n, depth)
}

// celFor returns the API server's CEL validator of node n's rules.
func (g *Generator) celFor(n *schema.Node) *cel.Validator {
	key := &n.XValidations[0] // shared by every copy of the node
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.cel[key]
	if !ok {
		c = cel.NewValidator(n, false, celconfig.PerCallLimit)
		g.cel[key] = c
	}
	return c
}

func (g *Generator) plainValue(t *rapid.T, n *schema.Node, depth int) any {
	if n == nil {
		return g.anyJSON(t, depth)
	}
	if ev := enumValues(n); len(ev) > 0 {
		return rapid.SampledFrom(ev).Draw(t, "enum")
	}
	switch typeOf(n) {
	case "object":
		return g.objectValue(t, n, depth)
	case "array":
		return g.array(t, n, depth)
	case "string":
		return g.str(t, n)
	case "integer":
		return g.integer(t, n)
	case "number":
		return g.number(t, n)
	case "boolean":
		return genBool.Draw(t, "bool")
	case "int-or-string":
		if genBool.Draw(t, "int or string") {
			return g.integer(t, n)
		}
		if vv := n.ValueValidation; vv != nil && vv.Pattern != "" {
			return g.str(t, n)
		}
		return genSmall.Draw(t, "string")
	}
	return g.anyJSON(t, depth)
}

func (g *Generator) objectValue(t *rapid.T, n *schema.Node, depth int) map[string]any {
	obj := map[string]any{}
	deep := depth > g.maxDepth
	names := make([]string, 0, len(n.Properties))
	for k := range n.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	req := required(n)
	for _, k := range names {
		if depth == 0 && skipRoot(k) {
			continue
		}
		p := n.Properties[k]
		isReq := contains(req, k)
		if !isReq {
			if deep {
				continue // below the depth limit only required fields
			}
			switch genPresent.Draw(t, k) {
			case 0:
				continue // missing
			case 1:
				if p.Nullable {
					obj[k] = nil
					continue
				}
				if depth > 2 {
					continue // deep optional fields are mostly missing
				}
			}
		}
		obj[k] = g.value(t, &p, depth+1)
	}
	if ap := n.AdditionalProperties; ap != nil && (ap.Bool || ap.Structural != nil) && len(n.Properties) == 0 && !deep {
		count := genCount.Draw(t, "entries")
		for i := 0; i < count; i++ {
			key := g.mapKey(t)
			obj[key] = g.value(t, ap.Structural, depth+1)
		}
	}
	if n.XPreserveUnknownFields && !deep {
		count := genCount.Draw(t, "unknown fields")
		for i := 0; i < count; i++ {
			key := "unknown" + genSmall.Draw(t, "unknown key")
			if _, ok := n.Properties[key]; ok {
				continue
			}
			obj[key] = g.anyJSON(t, depth+1)
		}
	}
	if n.XEmbeddedResource {
		// An embedded object needs its own type and object metadata.
		if _, ok := obj["apiVersion"]; !ok {
			obj["apiVersion"] = "v1"
		}
		if _, ok := obj["kind"]; !ok {
			obj["kind"] = "ConfigMap"
		}
		if _, ok := obj["metadata"].(map[string]any); !ok {
			obj["metadata"] = map[string]any{"name": genName.Draw(t, "embedded name")}
		}
	}
	if vv := n.ValueValidation; vv != nil && vv.MaxProperties != nil {
		for len(obj) > int(*vv.MaxProperties) {
			for k := range obj {
				if !contains(req, k) {
					delete(obj, k)
					break
				}
			}
			if len(obj) > int(*vv.MaxProperties) && len(req) >= len(obj) {
				break
			}
		}
	}
	return obj
}

func (g *Generator) mapKey(t *rapid.T) string {
	switch genChoice.Draw(t, "key kind") {
	case 6:
		return genUnicode.Draw(t, "unicode key")
	case 7:
		return ""
	}
	return genSmall.Draw(t, "key")
}

func (g *Generator) array(t *rapid.T, n *schema.Node, depth int) []any {
	lo, hi := 0, 3
	if vv := n.ValueValidation; vv != nil {
		if vv.MinItems != nil {
			lo = int(*vv.MinItems)
		}
		if vv.MaxItems != nil && int(*vv.MaxItems) < hi {
			hi = int(*vv.MaxItems)
		}
	}
	if hi < lo {
		hi = lo
	}
	if depth > g.maxDepth {
		hi = lo // below the depth limit, only the items required
	}
	count := rapid.IntRange(lo, hi).Draw(t, "items")
	out := make([]any, 0, count)
	lt, keys := schema.ListType(n)
	for i := 0; i < count+3 && len(out) < count; i++ { // a few more tries for distinct items
		var v any
		if lt == "atomic" && len(out) > 0 && genCount.Draw(t, "duplicate item") == 0 {
			v = mustDecode(mustJSON(out[0])) // a duplicate: lists that allow them get them
		} else {
			v = g.value(t, n.Items, depth+1)
		}
		if m, ok := v.(map[string]any); ok && lt == "map" && n.Items != nil {
			// Keys the item leaves out take their defaults (as the API
			// server's defaulting will): compare them that way.
			for _, k := range keys {
				if _, has := m[k]; !has {
					if d, ok := schema.Default(child(n.Items, k)); ok {
						m[k] = d
					}
				}
			}
		}
		dup := false
		for _, x := range out {
			if (lt == "set" && Equal(x, v)) || (lt == "map" && sameKeys(x, v, keys)) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	if len(out) < lo {
		t.Skip("could not generate enough distinct items")
	}
	return out
}

func (g *Generator) str(t *rapid.T, n *schema.Node) string {
	var minLen, maxLen int = 0, -1
	vv := n.ValueValidation
	if vv != nil {
		if vv.MinLength != nil {
			minLen = int(*vv.MinLength)
		}
		if vv.MaxLength != nil {
			maxLen = int(*vv.MaxLength)
		}
	}
	fits := func(s string) bool {
		c := utf8.RuneCountInString(s)
		return c >= minLen && (maxLen < 0 || c <= maxLen)
	}
	if vv != nil && vv.Pattern != "" {
		if pg := g.pattern(vv.Pattern); pg != nil {
			s := pg.Draw(t, "pattern")
			if !fits(s) {
				t.Skip("pattern string out of length bounds")
			}
			return s
		}
	}
	if vv != nil {
		switch vv.Format {
		case "date-time":
			return genTime.Draw(t, "date-time")
		case "date":
			return genTime.Draw(t, "date")[:10]
		case "duration":
			return rapid.SampledFrom([]string{"0s", "1s", "1m30s", "1.5s", "2h"}).Draw(t, "duration")
		case "byte":
			return rapid.SampledFrom([]string{"", "aGVsbG8=", "AA=="}).Draw(t, "byte")
		case "uuid", "uuid4":
			return "6f1c3a8e-3c1b-4b7e-9d7a-0a1b2c3d4e5f"
		case "uuid3":
			return "a3bb189e-8bf9-3888-9912-ace4e6543002"
		case "uuid5":
			return "74738ff5-5367-5958-9aee-98fffdcd1876"
		case "email":
			return rapid.SampledFrom([]string{"a@example.com", "first.last@sub.example.org"}).Draw(t, "email")
		case "hostname":
			return rapid.SampledFrom([]string{"a", "example.com", "x-1.y-2.example"}).Draw(t, "hostname")
		case "ipv4":
			return rapid.SampledFrom([]string{"0.0.0.0", "10.0.0.1", "255.255.255.255"}).Draw(t, "ipv4")
		case "ipv6":
			return rapid.SampledFrom([]string{"::1", "2001:db8::1", "fe80::a:b:c:d"}).Draw(t, "ipv6")
		case "cidr":
			return rapid.SampledFrom([]string{"10.0.0.0/8", "192.168.1.0/24", "2001:db8::/32"}).Draw(t, "cidr")
		case "mac":
			return "00:1a:2b:3c:4d:5e"
		case "uri":
			return rapid.SampledFrom([]string{"https://example.com/", "http://a.b/c?d=e#f"}).Draw(t, "uri")
		case "hexcolor":
			return "#a1b2c3"
		case "rgbcolor":
			return "rgb(1,2,3)"
		case "bsonobjectid":
			return "507f1f77bcf86cd799439011"
		case "password":
			return genASCII.Draw(t, "password")
		}
	}
	var s string
	switch genChoice.Draw(t, "string kind") {
	case 0:
		s = ""
	case 1, 2:
		s = genSmall.Draw(t, "string")
	case 3:
		s = genUnicode.Draw(t, "unicode")
	case 4:
		l := 300
		if maxLen >= 0 {
			l = maxLen
		}
		s = strings.Repeat("é", l) // long, and multi-byte
	default:
		s = genASCII.Draw(t, "ascii")
	}
	if maxLen >= 0 && utf8.RuneCountInString(s) > maxLen {
		s = string([]rune(s)[:maxLen])
	}
	if n := utf8.RuneCountInString(s); n < minLen {
		s += strings.Repeat("a", minLen-n)
	}
	return s
}

func (g *Generator) pattern(p string) *rapid.Generator[string] {
	g.mu.Lock()
	defer g.mu.Unlock()
	if pg, ok := g.patterns[p]; ok {
		return pg
	}
	var pg *rapid.Generator[string]
	if _, err := regexp.Compile(p); err == nil {
		func() {
			defer func() { _ = recover() }()
			pg = rapid.StringMatching(p)
		}()
	}
	g.patterns[p] = pg
	return pg
}

func (g *Generator) integer(t *rapid.T, n *schema.Node) int64 {
	lo, hi, _, _ := intBounds(n)
	l, h := clampInt(lo, math.MinInt64), clampInt(hi, math.MaxInt64)
	if lo == math.Inf(-1) {
		l = math.MinInt64
	}
	if hi == math.Inf(1) {
		h = math.MaxInt64
	}
	if l > h {
		t.Skip("empty integer range")
	}
	var v int64
	switch genChoice.Draw(t, "int kind") {
	case 0:
		v = clampBetween(0, l, h)
	case 1:
		v = l
	case 2:
		v = h
	case 3:
		v = clampBetween(1, l, h)
	case 4:
		v = clampBetween(-1, l, h)
	default:
		v = rapid.Int64Range(l, h).Draw(t, "int")
	}
	if vv := n.ValueValidation; vv != nil && vv.MultipleOf != nil && *vv.MultipleOf >= 1 {
		m := int64(*vv.MultipleOf)
		v -= v % m
		if v < l {
			v += m
		}
		if v > h {
			t.Skip("no multiple in range")
		}
	}
	return v
}

func clampInt(f float64, def int64) int64 {
	if math.IsInf(f, 0) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return def
	}
	return int64(f)
}

func clampBetween(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

func (g *Generator) number(t *rapid.T, n *schema.Node) any {
	lo, hi, _, _ := intBounds(n)
	if math.IsInf(lo, -1) {
		lo = -1e300
	}
	if math.IsInf(hi, 1) {
		hi = 1e300
	}
	if lo > hi {
		t.Skip("empty number range")
	}
	var v float64
	switch genChoice.Draw(t, "number kind") {
	case 0:
		v = math.Max(lo, math.Min(0, hi))
	case 1:
		v = lo
	case 2:
		v = hi
	case 3:
		v = math.Max(lo, math.Min(0.5, hi))
	default:
		v = rapid.Float64Range(lo, hi).Draw(t, "number")
	}
	if vv := n.ValueValidation; vv != nil && vv.MultipleOf != nil && *vv.MultipleOf > 0 {
		m := *vv.MultipleOf
		v = math.Round(v/m) * m
		if v < lo || v > hi {
			t.Skip("no multiple in range")
		}
	}
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return int64(v)
	}
	return v
}

// anyJSON generates an arbitrary JSON value (for unknown fields and
// schemaless values).
func (g *Generator) anyJSON(t *rapid.T, depth int) any {
	switch k := genChoice.Draw(t, "any kind"); {
	case k == 0:
		return nil
	case k == 1:
		return genBool.Draw(t, "bool")
	case k == 2:
		return rapid.SampledFrom([]int64{0, 1, -1, math.MaxInt64, math.MinInt64}).Draw(t, "int")
	case k == 3:
		return genUnicode.Draw(t, "string")
	case k == 4 && depth < g.maxDepth:
		n := genCount.Draw(t, "len")
		out := make([]any, n)
		for i := range out {
			out[i] = g.anyJSON(t, depth+1)
		}
		return out
	case k == 5 && depth < g.maxDepth:
		n := genCount.Draw(t, "len")
		out := map[string]any{}
		for i := 0; i < n; i++ {
			out[genSmall.Draw(t, "key")] = g.anyJSON(t, depth+1)
		}
		return out
	}
	return 1.5
}

func mustDecode(b []byte) any {
	v, err := decodeJSON(b)
	if err != nil {
		panic(err)
	}
	return unstructured(v)
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}
