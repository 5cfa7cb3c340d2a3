package suggest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hubspoke/hubspoke/schema"
)

// seg is one step of a path: a key, or a selector ("[*]", "[name=*]",
// ".*").
type seg struct{ key, sel string }

type path []seg

func (p path) with(s seg) path { return append(slices.Clone(p), s) }

// keyRe matches the keys a dotted path writes bare.
var keyRe = regexp.MustCompile(`^[A-Za-z_$@-][A-Za-z0-9_$@-]*$`)

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.sel == ".*":
			b.WriteString(".*")
		case s.sel != "":
			b.WriteString(s.sel)
		case keyRe.MatchString(s.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			q, _ := json.Marshal(s.key)
			b.WriteString("[" + string(q) + "]")
		}
	}
	return b.String()
}

// keys are the keys after the last selector.
func (p path) keys() []string {
	var out []string
	for _, s := range p {
		if s.sel != "" {
			out = out[:0]
			continue
		}
		out = append(out, s.key)
	}
	return out
}

// scope is p up to its last selector: rule paths go through the same
// selectors on both sides.
func (p path) scope() string {
	last := -1
	for i, s := range p {
		if s.sel != "" {
			last = i
		}
	}
	return p[:last+1].String()
}

func (p path) hasPrefix(q path) bool { return len(q) <= len(p) && slices.Equal(p[:len(q)], q) }

// Rule phases: the order rules are written in (spoke -> hub), so that
// their inverses, run in reverse order, undo them.
const (
	phaseRest      = iota // hubOnly: what is left of a new hub object once fields move in
	phaseMove             // renames and transforms
	phaseLeft             // spokeOnly: what is left of a spoke object once fields move out
	phaseHubOnly          // fields in the hub only
	phaseSpokeOnly        // fields in the spoke only
)

type entry struct {
	phase int
	rule  Rule
}

// only is a field in one version only (its path, where no field of that
// name is in the other version), and whether it moved to the other side
// (matched) or something inside it did (consumed).
type only struct {
	p        path
	n        *node
	matched  bool
	consumed bool
}

// cand is a field that may have moved: an only field or an object field
// inside one.
type cand struct {
	p    path
	n    *node
	root *only
	used bool
}

type comparer struct {
	spoke, hub     string
	out            []entry
	notes          []string
	sOnly, hOnly   []*only
	sShapes, hPath map[string][]path // shape hash -> paths of compound nodes
	reason         string            // why the move being written was matched
}

// compare suggests the rules from spoke version s to hub version h.
func compare(s, h *schema.Version) ([]Rule, []string) {
	c := &comparer{spoke: s.Name, hub: h.Name, sShapes: map[string][]path{}, hPath: map[string][]path{}}
	index(s.Structural, nil, c.sShapes)
	index(h.Structural, nil, c.hPath)
	c.walk(s.Structural, h.Structural, nil, true)
	c.matchMoves()
	c.leftovers()
	return c.ordered(), c.notes
}

// index records the compound nodes by shape.
func index(n *node, p path, into map[string][]path) {
	switch kind(n) {
	case "object":
		if len(p) > 0 {
			into[shapeHash(n)] = append(into[shapeHash(n)], p)
		}
		for k, c := range n.Properties {
			if len(p) == 0 && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			index(&c, p.with(seg{key: k}), into)
		}
	case "array":
		into[shapeHash(n)] = append(into[shapeHash(n)], p)
		index(n.Items, p.with(seg{sel: "[*]"}), into)
	case "map":
		into[shapeHash(n)] = append(into[shapeHash(n)], p)
	}
}

func (c *comparer) add(phase int, r Rule) { c.out = append(c.out, entry{phase, r}) }

func (c *comparer) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// walk compares the properties of two object nodes at p.
func (c *comparer) walk(s, h *node, p path, top bool) {
	names := map[string]bool{}
	for k := range s.Properties {
		names[k] = true
	}
	for k := range h.Properties {
		names[k] = true
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		if top && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		sc, sok := s.Properties[name]
		hc, hok := h.Properties[name]
		q := p.with(seg{key: name})
		sreq, hreq := slices.Contains(requiredOf(s), name), slices.Contains(requiredOf(h), name)
		switch {
		case sok && hok && hreq && !sreq:
			c.note("TODO: %s is required in %s, optional in %s: a %s object without it converts to a %s object the API server refuses; give %s's schema a default, or write a value for it with a cel rule", q, c.hub, c.spoke, c.spoke, c.hub, c.hub)
		case sok && hok && sreq && !hreq:
			c.note("TODO: %s is required in %s, optional in %s: a %s object without it converts to a %s object the API server refuses; give %s's schema a default, or write a value for it with a cel rule", q, c.spoke, c.hub, c.hub, c.spoke, c.spoke)
		}
		switch {
		case sok && hok:
			c.pair(&sc, &hc, q)
		case sok:
			c.sOnly = append(c.sOnly, &only{p: q, n: &sc})
		default:
			c.hOnly = append(c.hOnly, &only{p: q, n: &hc})
		}
	}
}

// pair compares the fields of the same path p in both versions.
func (c *comparer) pair(s, h *node, p path) {
	if shapeHash(s) == shapeHash(h) {
		return
	}
	ks, kh := kind(s), kind(h)
	if ks == kh && (ks == "object" || ks == "array" || ks == "map") && c.relocated(s, h, p) {
		// The same name, but this shape is elsewhere in the other
		// version: a move (Cluster API's conditions), matched below.
		c.sOnly = append(c.sOnly, &only{p: p, n: s})
		c.hOnly = append(c.hOnly, &only{p: p, n: h})
		return
	}
	if ks != kh {
		c.change(s, h, p, p)
		return
	}
	c.same(s, h, p)
}

// same compares two nodes of the same kind now at p (in both, or moved
// there by a rename).
func (c *comparer) same(s, h *node, p path) {
	switch kind(s) {
	case "object":
		c.walk(s, h, p, false)
	case "map":
		c.pair(s.AdditionalProperties.Structural, h.AdditionalProperties.Structural, p.with(seg{sel: ".*"}))
	case "array":
		c.pair(s.Items, h.Items, p.with(seg{sel: selector(s, h)}))
	default:
		c.scalar(s, h, p, p)
	}
}

// relocated: s's shape is at another path of the hub, or h's at another
// path of the spoke.
func (c *comparer) relocated(s, h *node, p path) bool {
	elsewhere := func(ps []path) bool {
		return slices.ContainsFunc(ps, func(q path) bool { return q.String() != p.String() })
	}
	return elsewhere(c.hPath[shapeHash(s)]) || elsewhere(c.sShapes[shapeHash(h)])
}

// selector picks the items of two lists: by their list-map key when both
// declare the same, else by position.
func selector(s, h *node) string {
	if s.XListType != nil && h.XListType != nil && *s.XListType == "map" && *h.XListType == "map" &&
		len(s.XListMapKeys) == 1 && slices.Equal(s.XListMapKeys, h.XListMapKeys) {
		return "[" + s.XListMapKeys[0] + "=*]"
	}
	return "[*]"
}

func enumStrings(n *node) ([]string, bool) {
	if n.ValueValidation == nil || len(n.ValueValidation.Enum) == 0 {
		return nil, false
	}
	var out []string
	for _, e := range n.ValueValidation.Enum {
		s, ok := e.Object.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// scalar compares two scalars of the same type, from in the spoke and to
// in the hub; a move (from != to) becomes a rename unless a value rule
// moves it.
func (c *comparer) scalar(s, h *node, from, to path) {
	moved := from.String() != to.String()
	rename := func(why, todo string) {
		if moved {
			c.add(phaseMove, Rule{Kind: "rename", From: from.String(), To: to.String(), Why: why, TODO: todo})
		}
	}
	sv, sEnum := enumStrings(s)
	hv, hEnum := enumStrings(h)
	if s.Type == "integer" && h.Type == "integer" && moved {
		if r, ok := scaleRule(from, to); ok {
			c.add(phaseMove, r)
			return
		}
	}
	if s.Type != "string" || !sEnum || !hEnum {
		if s.Type == "string" && !sEnum && hEnum {
			c.note("TODO: %s accepts any string in %s, and only %s in %s: other values have no %s form (check reports them; cel can map them)", to, c.spoke, strings.Join(hv, ", "), c.hub, c.hub)
		}
		rename(c.moveWhy(from, to), "")
		return
	}
	var pairs []Pair
	var noHub []string
	used := map[string]bool{}
	for _, v := range sv {
		if slices.Contains(hv, v) && !used[v] {
			pairs, used[v] = append(pairs, Pair{v, v}), true
			continue
		}
		i := slices.IndexFunc(hv, func(x string) bool { return !used[x] && normValue(x) == normValue(v) })
		if i < 0 {
			noHub = append(noHub, v)
			continue
		}
		pairs, used[hv[i]] = append(pairs, Pair{v, hv[i]}), true
	}
	var noSpoke []string
	for _, v := range hv {
		if !used[v] {
			noSpoke = append(noSpoke, v)
		}
	}
	byPosition := ""
	if len(noHub) > 0 && len(noHub) == len(noSpoke) {
		// As many values left on each side: paired in the enums' order.
		for i, v := range noHub {
			pairs = append(pairs, Pair{v, noSpoke[i]})
		}
		byPosition = fmt.Sprintf("%s paired with %s by their order in the enums: confirm", quoteList(noHub), quoteList(noSpoke))
		noHub, noSpoke = nil, nil
	}
	identity := !slices.ContainsFunc(pairs, func(p Pair) bool { return p.Key != p.Value })
	todo := byPosition
	if len(noHub) > 0 {
		todo = fmt.Sprintf("%s values %s have no %s value with the same spelling: map each to one (several %s values may map to one), or they fail to convert", c.spoke, quoteList(noHub), c.hub, c.spoke)
	}
	switch {
	case identity && len(noHub) == 0 && len(noSpoke) == 0:
		rename(c.moveWhy(from, to), "")
	case len(noSpoke) == 0:
		r := Rule{Kind: "enum", From: from.String(), To: to.String(), TODO: todo,
			Why: fmt.Sprintf("the enums differ: %s %s, %s %s", c.spoke, quoteList(sv), c.hub, quoteList(hv))}
		r.Params = []Param{{"values", pairs}}
		c.add(phaseMove, r)
	default:
		// Hub values the spoke cannot hold: kept aside while the object
		// is read through the spoke (optional.none() with keep).
		r := Rule{Kind: "cel", From: from.String(), To: to.String(),
			Why: fmt.Sprintf("the enums differ: %s %s, %s %s; %s has no %s form, so it is kept in the preserved annotation while the object is read through %s",
				c.spoke, quoteList(sv), c.hub, quoteList(hv), quoteList(noSpoke), c.spoke, c.spoke),
			TODO: todo}
		if todo == "" && len(pairs) > 0 {
			r.TODO = fmt.Sprintf("or show %s as a %s value with an enum rule's hubValues", quoteList(noSpoke), c.spoke)
		}
		toHub, fromHub := "self", "self in "+celValues(pairs)+" ? optional.of(self) : optional.none()"
		if !identity {
			toHub = celMap(pairs, false) + "[self]"
			fromHub = celMap(pairs, true) + "[?self]"
		}
		r.Params = []Param{{"toHub", toHub}, {"fromHub", fromHub}, {"otherwise", "keep"}}
		c.add(phaseMove, r)
	}
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// celMap is a CEL map literal of the pairs (reversed: hub to spoke).
func celMap(pairs []Pair, reverse bool) string {
	var parts []string
	for _, p := range pairs {
		k, v := p.Key, p.Value
		if reverse {
			k, v = v, k
		}
		parts = append(parts, fmt.Sprintf("%q: %q", k, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// celValues is a CEL list of the hub values of the pairs.
func celValues(pairs []Pair) string {
	var parts []string
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%q", p.Value))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// units of integer fields, by the end of their name.
var units = []struct {
	suffix string
	size   *big.Int
	dur    string // duration unit
}{
	{"Nanoseconds", big.NewInt(1), "ns"}, {"Microseconds", big.NewInt(1e3), "us"},
	{"Milliseconds", big.NewInt(1e6), "ms"}, {"Millis", big.NewInt(1e6), "ms"}, {"Ms", big.NewInt(1e6), "ms"},
	{"Seconds", big.NewInt(1e9), "s"}, {"Secs", big.NewInt(1e9), "s"}, {"Minutes", big.NewInt(60e9), "m"}, {"Hours", big.NewInt(3600e9), "h"},
	{"Bytes", big.NewInt(1), ""}, {"KiB", big.NewInt(1 << 10), ""}, {"MiB", big.NewInt(1 << 20), ""}, {"GiB", big.NewInt(1 << 30), ""}, {"TiB", big.NewInt(1 << 40), ""},
	{"KB", big.NewInt(1e3), ""}, {"MB", big.NewInt(1e6), ""}, {"GB", big.NewInt(1e9), ""},
}

// unitOf returns the unit of a field name, and the name without it.
func unitOf(name string) (int, string) {
	for i, u := range units {
		if strings.HasSuffix(name, u.suffix) && len(name) > len(u.suffix) {
			return i, strings.TrimSuffix(name, u.suffix)
		}
	}
	return -1, name
}

// scaleRule: integers of the same quantity in units of different sizes.
func scaleRule(from, to path) (Rule, bool) {
	fk, tk := from.keys(), to.keys()
	fname, tname := fk[len(fk)-1], tk[len(tk)-1]
	if r, ok := metricScale(from, to, fname, tname); ok {
		return r, true
	}
	fu, _ := unitOf(fname)
	tu, _ := unitOf(tname)
	if fu < 0 || tu < 0 || (units[fu].dur == "") != (units[tu].dur == "") || units[fu].size.Cmp(units[tu].size) == 0 {
		return Rule{}, false
	}
	f, t := units[fu].size, units[tu].size
	r := Rule{Kind: "scale", From: from.String(), To: to.String(),
		Why: fmt.Sprintf("integers of one quantity, in %s and in %s (by their names)", units[fu].suffix, units[tu].suffix)}
	q := new(big.Int)
	if f.Cmp(t) >= 0 {
		q.Quo(f, t)
		r.Params = []Param{{"multiply", q.Int64()}}
	} else {
		q.Quo(t, f)
		r.Params = []Param{{"divide", q.Int64()}}
	}
	return r, true
}

// metric prefixes, by size.
var metric = []struct {
	prefix string
	exp    int
}{{"giga", 9}, {"mega", 6}, {"kilo", 3}, {"milli", -3}, {"micro", -6}, {"nano", -9}}

// metricScale: two names that differ by a metric prefix (capacityKilotons
// and capacityTons).
func metricScale(from, to path, fname, tname string) (Rule, bool) {
	f, t := strings.ToLower(fname), strings.ToLower(tname)
	for _, m := range metric {
		exp := 0
		switch {
		case strings.Replace(f, m.prefix, "", 1) == t && f != t:
			exp = m.exp
		case strings.Replace(t, m.prefix, "", 1) == f && f != t:
			exp = -m.exp
		default:
			continue
		}
		r := Rule{Kind: "scale", From: from.String(), To: to.String(),
			Why: fmt.Sprintf("integers of one quantity, %s and %s: their names differ by the prefix %s", fname, tname, m.prefix)}
		factor := int64(1)
		for range max(exp, -exp) {
			factor *= 10
		}
		if exp > 0 {
			r.Params = []Param{{"multiply", factor}}
		} else {
			r.Params = []Param{{"divide", factor}}
		}
		return r, true
	}
	return Rule{}, false
}

var durationWords = regexp.MustCompile(`(?i)(duration|timeout|interval|period|deadline|ttl|delay|age|expir|after|every|wait)`)

// durationUnit says whether an integer field and a string field are a
// count and a duration, and in what unit.
func durationUnit(intPath, strPath path, str *node) (string, bool, bool) {
	ik := intPath.keys()
	u, _ := unitOf(ik[len(ik)-1])
	known := u >= 0 && units[u].dur != ""
	isDur := known || (str.ValueValidation != nil && str.ValueValidation.Format == "duration") ||
		durationWords.MatchString(strings.Join(strPath.keys(), "."))
	if !isDur {
		return "", false, false
	}
	if known {
		return units[u].dur, true, true
	}
	return "s", false, true
}

// change suggests the rule for a field whose kind differs: from in the
// spoke, to in the hub.
func (c *comparer) change(s, h *node, from, to path) {
	ks, kh := kind(s), kind(h)
	f, t := from.String(), to.String()
	base := Rule{From: f, To: t}
	switch {
	case ks == "integer" && kh == "string":
		if unit, sure, ok := durationUnit(from, to, h); ok {
			r := base
			r.Kind = "duration"
			r.Params = []Param{{"unit", unit}, {"round", "reject"}}
			r.Why = fmt.Sprintf("an integer count in %s, a duration string in %s", c.spoke, c.hub)
			r.TODO = "round: reject refuses a hub duration that is not a whole number of units; choose floor, ceil or round to allow it"
			if !sure {
				r.TODO = "the unit is a guess (the name does not say it): " + r.TODO
			}
			c.add(phaseMove, r)
			return
		}
		r := base
		r.Kind, r.Why = "intToString", fmt.Sprintf("an integer in %s, a string in %s: its decimal form", c.spoke, c.hub)
		c.add(phaseMove, r)
		return
	case ks == "string" && kh == "integer":
		if unit, sure, ok := durationUnit(to, from, s); ok {
			r := base
			r.Kind = "duration"
			r.Params = []Param{{"unit", unit}, {"round", "reject"}, {"spoke", "string"}}
			r.Why = fmt.Sprintf("a duration string in %s, an integer count in %s", c.spoke, c.hub)
			r.TODO = "round: reject refuses a duration that is not a whole number of units; choose floor, ceil or round to allow it (the exact string is kept)"
			if !sure {
				r.TODO = "the unit is a guess (the name does not say it): " + r.TODO
			}
			c.add(phaseMove, r)
			return
		}
		r := base
		r.Kind, r.Why = "stringToInt", fmt.Sprintf("a string in %s, an integer in %s", c.spoke, c.hub)
		r.TODO = fmt.Sprintf("a %s value that is not a decimal integer fails to convert", c.spoke)
		c.add(phaseMove, r)
		return
	case ks == "array" && kh == "map":
		if key, keyType, ok := mapKey(s, h.AdditionalProperties.Structural); ok {
			r := base
			r.Kind, r.Params = "listToMap", []Param{{"key", key}}
			if keyType == "integer" {
				r.Params = append(r.Params, Param{"keyType", "integer"})
			}
			r.Params = append(r.Params, Param{"order", "keep"})
			r.Why = fmt.Sprintf("a list of objects in %s, a map keyed by their %s in %s", c.spoke, key, c.hub)
			if !isListMap(s, key) {
				r.TODO = fmt.Sprintf("%s's list accepts two items with the same %s, which the map cannot hold (they fail to convert); declare it x-kubernetes-list-type: map", c.spoke, key)
			}
			c.add(phaseMove, r)
			return
		}
	case ks == "map" && kh == "array":
		if key, keyType, ok := mapKey(h, s.AdditionalProperties.Structural); ok {
			r := base
			r.Kind, r.Params = "mapToList", []Param{{"key", key}}
			if keyType == "integer" {
				r.Params = append(r.Params, Param{"keyType", "integer"})
			}
			r.Why = fmt.Sprintf("a map in %s, a list of objects keyed by %s in %s", c.spoke, key, c.hub)
			c.add(phaseMove, r)
			return
		}
	case ks == "array" && kh != "array" && itemLike(s.Items, h):
		r := base
		r.Kind, r.Params = "listToItem", []Param{{"otherwise", otherwiseFor(s)}}
		r.Why = fmt.Sprintf("a list in %s, one item of its shape in %s", c.spoke, c.hub)
		c.add(phaseMove, r)
		return
	case kh == "array" && ks != "array" && itemLike(h.Items, s):
		r := base
		r.Kind, r.Params = "itemToList", []Param{{"otherwise", otherwiseFor(h)}}
		r.Why = fmt.Sprintf("one item in %s, a list of items of its shape in %s", c.spoke, c.hub)
		c.add(phaseMove, r)
		return
	case ks == "object" && kh == "string":
		if pat, defaults, ok := patternOf(s); ok {
			r := base
			r.Kind = "join"
			if f == t {
				r.To = ""
			}
			r.Params = []Param{{"pattern", pat}}
			if len(defaults) > 0 {
				r.Params = append(r.Params, Param{"defaults", defaults})
			}
			r.Params = append(r.Params, Param{"otherwise", "keep"})
			r.Why = fmt.Sprintf("an object of parts in %s, one string in %s", c.spoke, c.hub)
			r.TODO = fmt.Sprintf("the pattern is a guess from the field names; a missing part is written as its default, and a %s string split back gives every part (cel can map a default to a missing part instead)", c.hub)
			c.add(phaseMove, r)
			return
		}
	case ks == "string" && kh == "object":
		if pat, defaults, ok := patternOf(h); ok {
			r := base
			r.Kind = "split"
			r.Params = []Param{{"pattern", pat}}
			if len(defaults) > 0 {
				r.Params = append(r.Params, Param{"defaults", defaults})
			}
			r.Params = append(r.Params, Param{"otherwise", "keep"})
			r.Why = fmt.Sprintf("one string in %s, an object of parts in %s", c.spoke, c.hub)
			r.TODO = "the pattern is a guess from the field names"
			c.add(phaseMove, r)
			return
		}
	}
	c.note("TODO: %s is %s in %s and %s is %s in %s: no rule kind converts these; write a cel rule (toHub and fromHub)", f, describeKind(s), c.spoke, t, describeKind(h), c.hub)
}

func describeKind(n *node) string {
	return map[string]string{"object": "an object", "array": "a list", "map": "a map", "integer": "an integer", "string": "a string",
		"number": "a number", "boolean": "a boolean", "int-or-string": "an int-or-string", "any": "an untyped value", "none": "nothing"}[kind(n)]
}

func otherwiseFor(list *node) string {
	if v := list.ValueValidation; v != nil && v.MaxItems != nil && *v.MaxItems == 1 && v.MinItems != nil && *v.MinItems == 1 {
		return "fail"
	}
	return "keep"
}

// itemLike: the items of a list and a value are the same shape, or
// mostly (objects).
func itemLike(items, v *node) bool {
	return items != nil && (shapeHash(items) == shapeHash(v) || (kind(items) == "object" && kind(v) == "object" && likeness(items, v) >= 0.5))
}

// mapKey finds the key of a list of objects turned into a map of value:
// the list-map key the list declares, or the one field of the items the
// map's values lack.
func mapKey(list, value *node) (string, string, bool) {
	if list.Items == nil || kind(list.Items) != "object" {
		return "", "", false
	}
	var keys []string
	if len(list.XListMapKeys) == 1 {
		keys = list.XListMapKeys
	} else {
		for k := range list.Items.Properties {
			if _, ok := value.Properties[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) != 1 {
		return "", "", false
	}
	p, ok := list.Items.Properties[keys[0]]
	if !ok || (p.Type != "string" && p.Type != "integer") {
		return "", "", false
	}
	return keys[0], p.Type, true
}

func isListMap(list *node, key string) bool {
	return list.XListType != nil && *list.XListType == "map" && slices.Contains(list.XListMapKeys, key)
}

// patternOf guesses the pattern of an object of string parts: a cron
// schedule, or an image reference.
func patternOf(obj *node) (string, []Pair, bool) {
	var names []string
	for k, p := range obj.Properties {
		if p.Type != "string" {
			return "", nil, false
		}
		names = append(names, k)
	}
	sort.Strings(names)
	switch {
	case slices.Equal(names, []string{"dayOfMonth", "dayOfWeek", "hour", "minute", "month"}):
		var defaults []Pair
		req := requiredOf(obj)
		for _, k := range []string{"minute", "hour", "dayOfMonth", "month", "dayOfWeek"} {
			if !slices.Contains(req, k) {
				defaults = append(defaults, Pair{k, "*"})
			}
		}
		return "{minute} {hour} {dayOfMonth} {month} {dayOfWeek}", defaults, true
	case slices.Equal(names, []string{"repository", "tag"}):
		return "{repository}:{tag:[^:/@]+}", nil, true
	}
	return "", nil, false
}

func requiredOf(n *node) []string {
	if n.ValueValidation == nil {
		return nil
	}
	return n.ValueValidation.Required
}

func (c *comparer) moveWhy(from, to path) string {
	return fmt.Sprintf("%s in %s is %s in %s: %s", from, c.spoke, to, c.hub, c.reason)
}
