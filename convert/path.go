package convert

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hubspoke/hubspoke/apirules"
)

// Path names a field inside an object. It is written dotted
// ("spec.placement.zone") or as an RFC 6901 JSON pointer
// ("/spec/placement/zone"). A dotted path may also go through lists and maps:
//
//	spec.containers[*].image        every item of a list, kept by position
//	spec.containers[name=*].image   every item, kept by its list-map key "name"
//	spec.containers[name=app].image the item whose key "name" is "app"
//	spec.backends.*.weight          every value of a map, kept by its key
//	spec.routes[**].timeout         every item of a tree of lists: the items
//	                                of spec.routes, of their routes, and so on
//	spec.labels["app.kubernetes.io/name"]   a key holding dots (or digits)
//
// A JSON pointer names keys only: it cannot hold selectors, and a numeric
// segment ("/spec/items/0") is refused, since rules never address a list
// item by position. The zero Path is the whole object.
type Path struct {
	// segs are the keys after the last selector (all keys when there is
	// none). In the inner path of a scoped rule, segs[0] is itemKey, the
	// key the item is held under while the rule runs on it.
	segs []string
	// scope holds the selectors, outermost first; nil for a plain path.
	scope []step
	// inner marks a path relative to the items of its scope.
	inner bool
}

// step is one selector and the keys that lead to its list or map, from the
// previous selector (or the object) on.
type step struct {
	segs []string
	sel  selector
}

type selKind byte

const (
	selItems  selKind = iota + 1 // [*]
	selKeyed                     // [key=*]
	selKey                       // [key=value]
	selValues                    // .*
	selTree                      // [**]: every item, and the items of its list of the same key, at any depth
)

// selector picks the items of a list or the values of a map.
type selector struct {
	kind  selKind
	key   string // the key field of selKeyed and selKey
	value string // the key value of selKey: a JSON string, or a bare literal
	// quoted says value was written as a JSON string: it matches a string
	// key only. A bare value matches a string key, or a number or boolean
	// key with that literal.
	quoted bool
}

func (s selector) String() string {
	switch s.kind {
	case selItems:
		return "[*]"
	case selKeyed:
		return "[" + s.key + "=*]"
	case selKey:
		if s.quoted || !bareValue(s.value) {
			return "[" + s.key + "=" + string(quoteKey(s.value)) + "]"
		}
		return "[" + s.key + "=" + s.value + "]"
	case selValues:
		return ".*"
	case selTree:
		return "[**]"
	}
	return "?"
}

// itemKey is the key under which a scoped rule sees the item it runs on.
const itemKey = "#"

// ParsePath parses a dotted path or a JSON pointer (see Path).
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, fmt.Errorf("empty path")
	}
	if !utf8.ValidString(s) {
		return Path{}, fmt.Errorf("path %q is not valid UTF-8", s)
	}
	if strings.HasPrefix(s, "/") {
		var segs []string
		for _, seg := range strings.Split(s[1:], "/") {
			seg, err := UnescapePointerToken(seg)
			if err != nil {
				return Path{}, fmt.Errorf("path %q: %w", s, err)
			}
			if isIndex(seg) {
				return Path{}, fmt.Errorf("path %q: segment %q is a list index; rules never address a list item by position (use the dotted form with [*], [key=*] or [key=value]; write a map key made of digits as [%q])", s, seg, seg)
			}
			segs = append(segs, seg)
		}
		return Path{segs: segs}, nil
	}
	return parseDotted(s)
}

// isIndex reports whether seg is made of digits only.
func isIndex(seg string) bool {
	if seg == "" {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return false
		}
	}
	return true
}

// parseDotted parses the dotted form:
//
//	path     = key { "." key | "." "*" | "[" bracket "]" }
//	key      = one or more characters other than . [ ] " * (not all digits)
//	bracket  = json-string              a key, written quoted
//	         | "*"                      every item of a list
//	         | "**"                     every item of a tree of lists
//	         | name "=" "*"             every item, keyed by name
//	         | name "=" value           the item whose name is value
//	value    = json-string | characters other than ]
func parseDotted(s string) (Path, error) {
	var p Path
	var cur []string
	bad := func(format string, args ...any) (Path, error) {
		return Path{}, fmt.Errorf("path %q: %s", s, fmt.Sprintf(format, args...))
	}
	i := 0
	first := true
	for i < len(s) {
		switch {
		case s[i] == '[':
			end, err := bracketEnd(s, i)
			if err != nil {
				return bad("%v", err)
			}
			body := s[i+1 : end]
			i = end + 1
			if first && !strings.HasPrefix(body, `"`) {
				return bad("a path starts with a key")
			}
			first = false
			switch {
			case strings.HasPrefix(body, `"`):
				var k string
				if err := json.Unmarshal([]byte(body), &k); err != nil {
					return bad("key %s is not a valid JSON string", body)
				}
				cur = append(cur, k)
				continue
			case body == "*":
				p.scope = append(p.scope, step{segs: cur, sel: selector{kind: selItems}})
			case body == "**":
				if len(cur) == 0 {
					return bad("[**] follows the key of its list: each item holds its children under that key (spec.routes[**])")
				}
				p.scope = append(p.scope, step{segs: cur, sel: selector{kind: selTree}})
			default:
				name, val, ok := strings.Cut(body, "=")
				if !ok || name == "" || !bareKey(name) {
					return bad("[%s] is not a selector (want [*], [key=*], [key=value] or a quoted key [\"...\"])", body)
				}
				sel := selector{kind: selKeyed, key: name}
				switch {
				case val == "*":
				case strings.HasPrefix(val, `"`):
					if err := json.Unmarshal([]byte(val), &sel.value); err != nil {
						return bad("value %s in [%s] is not a valid JSON string", val, body)
					}
					sel.kind, sel.quoted = selKey, true
				case val == "":
					return bad("[%s] has no value (want [%s=*] or [%s=value])", body, name, name)
				case !bareValue(val):
					return bad("value %s in [%s] holds [ ] or \"; write it as a JSON string", val, body)
				default:
					sel.kind, sel.value = selKey, val
				}
				p.scope = append(p.scope, step{segs: cur, sel: sel})
			}
			cur = nil
		case s[i] == '.' || first:
			if !first {
				i++
			}
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			seg := s[i:j]
			i = j
			switch {
			case seg == "":
				return bad("empty segment")
			case seg == "*" && !first:
				p.scope = append(p.scope, step{segs: cur, sel: selector{kind: selValues}})
				cur = nil
			case isIndex(seg):
				return bad("segment %q is a list index; rules never address a list item by position (use [*], [key=*] or [key=value]; write a map key made of digits as [%q])", seg, seg)
			case !bareKey(seg):
				return bad("segment %q holds one of ] \" *; write such a key quoted: [%q]", seg, seg)
			default:
				cur = append(cur, seg)
			}
			first = false
		default:
			return bad("unexpected %q after ]", s[i])
		}
	}
	if len(p.scope) > 0 && len(p.scope[0].segs) == 0 {
		return bad("a selector needs the list or map it selects from")
	}
	p.segs = cur
	return p, nil
}

// bracketEnd returns the index of the ] closing the [ at i, skipping JSON
// strings inside.
func bracketEnd(s string, i int) (int, error) {
	inStr := false
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case inStr && c == '\\':
			j++
		case c == '"':
			inStr = !inStr
		case !inStr && c == ']':
			return j, nil
		}
	}
	return 0, fmt.Errorf("[ at offset %d is not closed", i)
}

func bareKey(k string) bool { return k != "" && !strings.ContainsAny(k, ".[]\"*=") }

func bareValue(v string) bool { return v != "" && v != "*" && !strings.ContainsAny(v, "[]\"") }

// ParsePointer parses an RFC 6901 JSON pointer as it names a value in a
// document, list indexes included ("/spec/items/0/x"), such as the Pointer
// of an Error. Rule files use ParsePath, which refuses indexes.
func ParsePointer(s string) (Path, error) {
	if s == "" {
		return Path{}, nil
	}
	if !strings.HasPrefix(s, "/") {
		return Path{}, fmt.Errorf("JSON pointer %q does not start with /", s)
	}
	var segs []string
	for _, seg := range strings.Split(s[1:], "/") {
		key, err := UnescapePointerToken(seg)
		if err != nil {
			return Path{}, fmt.Errorf("JSON pointer %q: %w", s, err)
		}
		segs = append(segs, key)
	}
	return Path{segs: segs}, nil
}

// PathOf returns the path of the given keys, outermost first (no escaping:
// a key may hold any character).
func PathOf(keys ...string) Path { return Path{segs: append([]string(nil), keys...)} }

// MustPath is ParsePath for paths known to be valid; it panics otherwise.
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Pointer returns the path as an RFC 6901 JSON pointer. A path with
// selectors has none; its pointer shows each selector as one segment (*,
// name=*, name=value) and is meant for messages only.
func (p Path) Pointer() string {
	var b strings.Builder
	for _, st := range p.scope {
		writePointer(&b, st.segs)
		b.WriteByte('/')
		switch st.sel.kind {
		case selItems, selValues:
			b.WriteByte('*')
		case selTree:
			b.WriteString("**")
		case selKeyed:
			b.WriteString(EscapePointerToken(st.sel.key) + "=*")
		case selKey:
			b.WriteString(EscapePointerToken(st.sel.key + "=" + st.sel.value))
		}
	}
	segs := p.segs
	if p.inner {
		segs = segs[1:]
	}
	writePointer(&b, segs)
	return b.String()
}

// plainPointer is the JSON pointer of the keys of p, as the object model
// walks them (with itemKey first in an inner path).
func (p Path) plainPointer() string {
	var b strings.Builder
	writePointer(&b, p.segs)
	return b.String()
}

func writePointer(b *strings.Builder, segs []string) {
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(EscapePointerToken(s))
	}
}

// String returns the dotted form, with the keys that need it written
// quoted (spec.labels["app.kubernetes.io/name"]).
func (p Path) String() string {
	segs := p.segs
	if p.inner {
		segs = segs[1:]
	}
	var b strings.Builder
	for _, st := range p.scope {
		writeDotted(&b, st.segs)
		b.WriteString(st.sel.String())
	}
	writeDotted(&b, segs)
	return b.String()
}

func writeDotted(b *strings.Builder, segs []string) {
	for _, s := range segs {
		if !bareKey(s) || isIndex(s) || b.Len() == 0 && strings.HasPrefix(s, "/") {
			b.WriteString("[" + string(quoteKey(s)) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
}

// Segments returns the keys of a path without selectors, outermost first.
// For a path with selectors it returns SchemaSegments.
func (p Path) Segments() []string {
	if len(p.scope) > 0 {
		return p.SchemaSegments()
	}
	return append([]string(nil), p.segs...)
}

// SchemaSegments returns the path as a walk through a structural schema,
// spelled as package schema spells the fields of a schema: keys, "*" for
// the items of a list ([*], [key=*], [key=value]) and "{}" for the values
// of a map (.*).
func (p Path) SchemaSegments() []string {
	var out []string
	for _, st := range p.scope {
		out = append(out, st.segs...)
		if st.sel.kind == selValues {
			out = append(out, "{}")
		} else {
			out = append(out, "*")
		}
	}
	segs := p.segs
	if p.inner {
		segs = segs[1:]
	}
	return append(out, segs...)
}

// TreeSegments is SchemaSegments with each tree selector ([**]) unrolled
// depth times: spec.routes[**].t at depth 0 is spec, routes, *, t; at
// depth 1 spec, routes, *, routes, *, t (a route's child route). It
// reports false for a path without a tree selector.
func (p Path) TreeSegments(depth int) ([]string, bool) {
	var out []string
	tree := false
	for _, st := range p.scope {
		out = append(out, st.segs...)
		switch st.sel.kind {
		case selValues:
			out = append(out, "{}")
		case selTree:
			tree = true
			out = append(out, "*")
			for range depth {
				out = append(out, st.segs[len(st.segs)-1], "*")
			}
		default:
			out = append(out, "*")
		}
	}
	segs := p.segs
	if p.inner {
		segs = segs[1:]
	}
	return append(out, segs...), tree
}

// HasSelectors reports whether the path goes through a list or a map.
func (p Path) HasSelectors() bool { return len(p.scope) > 0 }

// tokens flattens p for comparisons: keys, and each selector as a token no
// key can equal.
func (p Path) tokens() []string {
	var out []string
	for _, st := range p.scope {
		out = append(out, st.segs...)
		out = append(out, "\x00"+st.sel.String())
	}
	segs := p.segs
	if p.inner {
		segs = segs[1:]
	}
	return append(out, segs...)
}

// Equal reports whether p and q name the same field.
func (p Path) Equal(q Path) bool {
	if p.inner != q.inner {
		return equalSegs(p.tokens(), q.tokens())
	}
	return sameScope(p, q) && equalSegs(p.segs, q.segs)
}

func equalSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// HasPrefix reports whether q is p or one of its ancestors.
func (p Path) HasPrefix(q Path) bool {
	a, b := p.tokens(), q.tokens()
	return len(b) <= len(a) && equalSegs(a[:len(b)], b)
}

// sameScope reports whether p and q go through the same selectors.
func sameScope(p, q Path) bool {
	if len(p.scope) != len(q.scope) {
		return false
	}
	for i := range p.scope {
		if !equalSegs(p.scope[i].segs, q.scope[i].segs) || p.scope[i].sel != q.scope[i].sel {
			return false
		}
	}
	return true
}

// innerPath returns the path a scoped rule's inner rule uses: the keys
// after the last selector, under itemKey. A plain path is returned as is.
func (p Path) innerPath() Path {
	if len(p.scope) == 0 {
		return p
	}
	segs := append([]string{itemKey}, p.segs...)
	return Path{segs: segs, scope: p.scope, inner: true}
}

// commonPrefixLen returns how many leading segments p and q share.
func commonPrefixLen(p, q Path) int {
	n := 0
	for n < len(p.segs) && n < len(q.segs) && p.segs[n] == q.segs[n] {
		n++
	}
	return n
}

// checkRulePath refuses paths a conversion must not touch.
func checkRulePath(p Path) error {
	first := p.segs
	if len(p.scope) > 0 {
		first = p.scope[0].segs
	}
	if len(first) == 0 {
		return fmt.Errorf("a rule cannot name the whole object")
	}
	switch first[0] {
	case "apiVersion", "kind":
		return fmt.Errorf("path %s: %s is set by the engine, not by rules", p, first[0])
	case "metadata":
		if _, _, ok := p.metaEntry(); ok {
			return checkMetaEntry(p)
		}
		return fmt.Errorf("path %s: the API server restores metadata (but labels and annotations) from the original object, so rules cannot move data in or out of it; a rule may name one label or annotation by its key (metadata.labels[\"example.com/x\"])", p)
	}
	return nil
}

// metaEntry reports whether p names one label or one annotation, and its
// map (labels or annotations) and key.
func (p Path) metaEntry() (field, key string, ok bool) {
	if len(p.scope) > 0 || len(p.segs) != 3 || p.segs[0] != "metadata" || p.segs[1] != "labels" && p.segs[1] != "annotations" {
		return "", "", false
	}
	return p.segs[1], p.segs[2], true
}

// checkMetaEntry checks the key of a label or annotation a rule names,
// with the API server's rules.
func checkMetaEntry(p Path) error {
	field, key, _ := p.metaEntry()
	if field == "labels" {
		if err := apirules.LabelKey(key); err != nil {
			return fmt.Errorf("path %s: %q is not a label key: %v", p, key, err)
		}
		return nil
	}
	if key == PreservedAnnotation {
		return fmt.Errorf("path %s: annotation %s is hubspoke's own", p, key)
	}
	if err := apirules.AnnotationKey(key); err != nil {
		return fmt.Errorf("path %s: %q is not an annotation key: %v", p, key, err)
	}
	return nil
}

// checkMetaValue checks v, a value a rule writes at p, a label or an
// annotation: a string, and for a label a label value.
func checkMetaValue(p Path, v node) error {
	field, key, _ := p.metaEntry()
	s, ok := stringOf(v)
	if !ok {
		return fmt.Errorf("value %s is %s; %s hold strings (convert it to one first, say with intToString)", compact(v.raw), describe(v), field)
	}
	if field == "labels" {
		if err := apirules.LabelValue(s); err != nil {
			return fmt.Errorf("value %q cannot be the value of label %s: %v", s, key, err)
		}
	}
	return nil
}

// keySegment is how a list item picked by its key is named in the
// preserved annotation: [name="web"], [port=80].
func keySegment(key string, raw []byte) string {
	return "[" + key + "=" + string(raw) + "]"
}

// indexSegment names a list item by position.
func indexSegment(i int) string { return strconv.Itoa(i) }
