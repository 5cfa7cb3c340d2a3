package convert

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Order says whether the order of a list converted to a map matters.
type Order string

// List orders.
const (
	// OrderKeep keeps the list's order across a round trip: the map cannot
	// hold it (the API server stores map keys sorted), so when it is not
	// already sorted it is kept in the preserved annotation.
	OrderKeep Order = "keep"
	// OrderIgnore declares the order meaningless: the list is a set keyed by
	// the key field, and comes back sorted by key.
	OrderIgnore Order = "ignore"
)

// KeyType is the JSON type of a list's key field.
type KeyType string

// Key types.
const (
	KeyString  KeyType = "string"
	KeyInteger KeyType = "integer"
)

type listMapRule struct {
	from, to Path
	key      string
	keyType  KeyType
	order    Order
	spokeMap bool // the spoke holds the map and the hub the list
}

// ListToMap converts the spoke list from, whose items are objects with a
// unique key field, into the hub map to, keyed by that field (the key is
// removed from each value). Duplicate keys fail the conversion rather than
// overwrite one another; so do items that are not objects or whose key is
// missing or of the wrong type.
func ListToMap(from, to Path, key string, keyType KeyType, order Order) (Rule, error) {
	return listMap("listToMap", from, to, key, keyType, order)
}

// MapToList is ListToMap the other way round: the spoke field from holds
// the map and the hub field to the list. The order of a list that is not
// sorted by key is kept on the way to the spoke.
func MapToList(from, to Path, key string, keyType KeyType, order Order) (Rule, error) {
	return listMap("mapToList", from, to, key, keyType, order)
}

func listMap(kind string, from, to Path, key string, keyType KeyType, order Order) (Rule, error) {
	f, t, err := checkPair(kind, from, to)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("listToMap %s: key is required", from)
	}
	switch keyType {
	case "":
		keyType = KeyString
	case KeyString, KeyInteger:
	default:
		return nil, fmt.Errorf("listToMap %s: keyType must be string or integer, got %q", from, keyType)
	}
	switch order {
	case "":
		order = OrderKeep
	case OrderKeep, OrderIgnore:
	default:
		return nil, fmt.Errorf("listToMap %s: order must be keep or ignore, got %q", from, order)
	}
	r := &listMapRule{from: f, to: t, key: key, keyType: keyType, order: order, spokeMap: kind == "mapToList"}
	return scoped(r, from), nil
}

func (r *listMapRule) String() string {
	kind := "listToMap"
	if r.spokeMap {
		kind = "mapToList"
	}
	s := fmt.Sprintf("%s %s", kind, r.from)
	if !r.from.Equal(r.to) {
		s += " -> " + r.to.String()
	}
	return s + fmt.Sprintf(" (key %s)", r.key)
}

func (r *listMapRule) paths() []Path { return []Path{r.from, r.to} }

func (r *listMapRule) ToHub(o *Object) error {
	if r.spokeMap {
		return move(o, r, r.from, r.to, func(n node) (node, error) { return r.mapToList(o, n, r.from) })
	}
	return move(o, r, r.from, r.to, func(n node) (node, error) { return r.listToMap(o, n, r.from, r.to) })
}

func (r *listMapRule) FromHub(o *Object) error {
	if r.spokeMap {
		return move(o, r, r.to, r.from, func(n node) (node, error) { return r.listToMap(o, n, r.to, r.from) })
	}
	return move(o, r, r.to, r.from, func(n node) (node, error) { return r.mapToList(o, n, r.to) })
}

// listToMap converts the list n read at listPath into the map written at
// mapPath; the list's order is kept under mapPath.
func (r *listMapRule) listToMap(o *Object, n node, listPath, mapPath Path) (node, error) {
	if n.kind() != '[' {
		return node{}, ruleErr(r, listPath, "value is %s, not a list", describe(n))
	}
	items, err := o.st.elements(o.rawOf(&n))
	if err != nil {
		return node{}, wrapRuleErr(r, listPath, err)
	}
	keys := make([]string, 0, len(items))
	seen := make(map[string]int, len(items))
	vals := make([][]byte, 0, len(items))
	for i := range items {
		at := Path{segs: append(slices.Clone(listPath.segs), strconv.Itoa(i))}
		it := &items[i]
		if ok, err := o.st.expand(it); err != nil {
			return node{}, wrapRuleErr(r, at, err)
		} else if !ok {
			return node{}, ruleErr(r, at, "item is %s, not an object with key field %q", describe(*it), r.key)
		}
		ki := it.obj.find(r.key)
		if ki < 0 {
			return node{}, ruleErr(r, at, "item has no key field %q", r.key)
		}
		kv := it.obj.members[ki].val
		var k string
		switch r.keyType {
		case KeyString:
			s, ok := stringOf(kv)
			if !ok {
				return node{}, ruleErr(r, at, "key field %q is %s, not a string", r.key, describe(kv))
			}
			k = s
		case KeyInteger:
			if !canonicalInt.Match(kv.raw) {
				return node{}, ruleErr(r, at, "key field %q is %s, not an integer", r.key, describe(kv))
			}
			k = string(kv.raw)
		}
		if j, dup := seen[k]; dup {
			return node{}, ruleErr(r, at, "duplicate key %s=%q (also at index %d); a map cannot hold both, so nothing is overwritten", r.key, k, j)
		}
		seen[k] = i
		keys = append(keys, k)
		it.obj.members[ki].deleted = true
		it.obj.modified = true
		vals = append(vals, it.write(nil))
	}
	// The map's keys in list order, or sorted when the order is declared
	// meaningless: then every path through the hub gives the same bytes.
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	if r.order == OrderIgnore {
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	}
	out := []byte{'{'}
	for j, i := range idx {
		if j > 0 {
			out = append(out, ',')
		}
		out = append(out, quoteKey(keys[i])...)
		out = append(out, ':')
		out = append(out, vals[i]...)
	}
	out = append(out, '}')
	if r.order == OrderKeep && !slices.IsSorted(keys) {
		if err := o.keepOrder(o.from, mapPath, keys); err != nil {
			return node{}, wrapRuleErr(r, mapPath, err)
		}
	}
	return node{raw: o.st.keep(out)}, nil
}

// mapToList converts the map n read at mapPath into a list, in the order
// kept under mapPath.
func (r *listMapRule) mapToList(o *Object, n node, mapPath Path) (node, error) {
	if ok, err := o.st.expand(&n); err != nil {
		return node{}, wrapRuleErr(r, mapPath, err)
	} else if !ok {
		return node{}, ruleErr(r, mapPath, "value is %s, not a map", describe(n))
	}
	// The live members' indexes, and their keys decoded once: for the
	// duplicate check, the sort and the items.
	idx := make([]int, 0, len(n.obj.members))
	keys := make([]string, len(n.obj.members))
	seen := make(map[string]bool, len(n.obj.members))
	for i := range n.obj.members {
		m := &n.obj.members[i]
		if m.deleted {
			continue
		}
		// A key twice (as written, or once escaped) would become two
		// items with one list-map key, which no map holds: the way back
		// refuses them, and the API server would too.
		k := decodeKey(m.rawKey)
		if seen[k] {
			return node{}, ruleErr(r, mapPath, "duplicate key %s in the map; the list cannot hold two items with %s %s", m.rawKey, r.key, quoteKey(k))
		}
		seen[k], keys[i] = true, k
		idx = append(idx, i)
	}
	kept, err := o.takeOrder(o.to, mapPath)
	if err != nil {
		return node{}, wrapRuleErr(r, mapPath, err)
	}
	// Keys in the kept order first (those still present), then the rest
	// sorted: the API server stores a map's keys sorted, so the map's own
	// order carries nothing.
	rank := make(map[string]int, len(kept))
	if r.order == OrderKeep {
		for i, k := range kept {
			rank[k] = i
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		ra, oka := rank[ka]
		rb, okb := rank[kb]
		switch {
		case oka && okb:
			return ra - rb
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(ka, kb)
	})
	out := []byte{'['}
	for j, i := range idx {
		m, k := &n.obj.members[i], keys[i]
		at := Path{segs: append(slices.Clone(mapPath.segs), k)}
		v := &m.val
		if ok, err := o.st.expand(v); err != nil {
			return node{}, wrapRuleErr(r, at, err)
		} else if !ok {
			return node{}, ruleErr(r, at, "value is %s, not an object", describe(*v))
		}
		if v.obj.find(r.key) >= 0 {
			return node{}, ruleErr(r, at, "value holds the key field %q, which the map key already gives; remove it", r.key)
		}
		if j > 0 {
			out = append(out, ',')
		}
		out = append(out, '{')
		out = append(out, quoteKey(r.key)...)
		out = append(out, ':')
		switch r.keyType {
		case KeyString:
			out = append(out, quoteKey(k)...)
		case KeyInteger:
			if !canonicalInt.MatchString(k) {
				return node{}, ruleErr(r, at, "map key %q is not an integer, but the list's key field %q is", k, r.key)
			}
			out = append(out, k...)
		}
		if v.obj.live() > 0 {
			v.obj.modified = true
			body := v.write(nil)
			out = append(out, ',')
			out = append(out, body[1:]...)
		} else {
			out = append(out, '}')
		}
	}
	out = append(out, ']')
	return node{raw: o.st.keep(out)}, nil
}

// elements splits a (valid) JSON array into its items.
func (s *state) elements(raw []byte) ([]node, error) { return s.elementsTo(nil, raw, nil) }

// elementsTo appends the items of a (valid) JSON array to items. With a
// non-nil t, items that are objects are expanded in the same pass (and
// refused if they hold a key twice, as expand refuses them).
func (s *state) elementsTo(items []node, raw []byte, t *trie) ([]node, error) {
	p, sub := s.listParser(raw)
	if sub {
		defer s.done(&p)
	}
	raw = p.data
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(raw) && raw[p.pos] == ']' {
		return items, nil
	}
	for {
		it, err := p.item(t)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
		p.skipSpace()
		if p.pos >= len(raw) {
			return nil, p.fail("unexpected end of JSON input")
		}
		if raw[p.pos] == ']' {
			return items, nil
		}
		p.pos++ // ','
		p.skipSpace()
	}
}

// listParser returns a parser positioned on raw, a (valid) JSON array:
// where it lies in the document, with the document's stop bits, rather
// than marking its bytes again; else a parser of its own (sub), to be
// handed back with done.
func (s *state) listParser(raw []byte) (p parser, sub bool) {
	if off, ok := s.p.offsetIn(raw); ok {
		p = parser{st: s, data: s.p.data[:off+len(raw)], pos: off, marks: s.p.marks}
	} else {
		p, sub = s.subParser(raw), true
	}
	p.stack = s.p.stack[len(s.p.stack):]
	p.items = s.p.items[len(s.p.items):]
	return p, sub
}
