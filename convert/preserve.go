package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hubspoke/hubspoke/apirules"
)

// PreservedAnnotation holds, on an object, the data that the version it is
// written in cannot hold: fields of another version, the exact form of a
// value that was rounded, the order of a list kept as a map. Annotations are
// the only part of metadata the API server takes from a conversion webhook's
// response, so this is the one place such data survives a round trip.
//
// The value is a JSON object keyed by the version that owns the data:
//
//	{"v1":{"fields":{"/spec/paused":true}},
//	 "v1alpha1":{"order":{"/spec/endpoints":["b","a"]}}}
const PreservedAnnotation = "hubspoke.dev/preserved"

var annotationsPath = Path{segs: []string{"metadata", "annotations"}}
var preservedPath = Path{segs: []string{"metadata", "annotations", PreservedAnnotation}}

// stash is the data one version owns on an object written in another.
type stash struct {
	// Fields holds values of fields the other version lacks, by pointer.
	Fields map[string]json.RawMessage `json:"fields,omitempty"`
	// Exact holds the exact value of a field whose conversion lost
	// something (rounding, formatting), with the value it was converted to:
	// it is restored only while that value is unchanged.
	Exact map[string]exactValue `json:"exact,omitempty"`
	// Order holds the key order of a list that the other version keeps as
	// a map.
	Order map[string][]string `json:"order,omitempty"`
	// Presence says, of a field a missing rule maps, whether it was set
	// (true: to the value the other version's absence stands for) or
	// missing (false) where the other version cannot tell.
	Presence map[string]bool `json:"presence,omitempty"`
}

// exactValue is the exact value of a field and what it was converted to:
// As is nil when it was converted to no value at all (an empty object a
// dropIfEmpty rule removed, an empty list that is absent on the other
// side).
type exactValue struct {
	Value json.RawMessage `json:"value"`
	As    json.RawMessage `json:"as,omitempty"`
}

func (s *stash) empty() bool {
	return len(s.Fields) == 0 && len(s.Exact) == 0 && len(s.Order) == 0 && len(s.Presence) == 0
}

type preservation struct {
	loaded  bool
	data    map[string]*stash // nil until something is kept or read
	changed bool
	// droppable names the fields kept by drop rules: kept when they fit,
	// removed first when the annotation would grow past the API server's
	// limit.
	droppable []keptAt
}

// keptAt names a field kept in the annotation: its owner and its key.
type keptAt struct{ version, key string }

// preserved loads the annotation on first use.
func (o *Object) preserved() (*preservation, error) {
	if o.pres.loaded {
		return &o.pres, nil
	}
	o.pres.loaded = true
	n, err := o.lookup(preservedPath)
	if err != nil || n == nil {
		return &o.pres, err
	}
	s, ok := stringOf(*n)
	if !ok {
		return nil, &Error{Pointer: preservedPath.Pointer(), abs: true, Err: fmt.Errorf("annotation %s is %s, not a string", PreservedAnnotation, describe(*n))}
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(&o.pres.data); err != nil {
		return nil, &Error{Pointer: preservedPath.Pointer(), abs: true, Err: fmt.Errorf("annotation %s is not valid hubspoke data: %w", PreservedAnnotation, err)}
	}
	for v, s := range o.pres.data {
		if s == nil {
			delete(o.pres.data, v)
		}
	}
	return &o.pres, nil
}

// stashOf returns the stash of version v, creating it when create is set.
func (o *Object) stashOf(v string, create bool) (*stash, error) {
	p, err := o.whole().preserved()
	if err != nil {
		return nil, err
	}
	s := p.data[v]
	if s == nil && create {
		if p.data == nil {
			p.data = map[string]*stash{}
		}
		s = &stash{}
		p.data[v] = s
	}
	return s, nil
}

// keepField stores the value of a field version v owns.
func (o *Object) keepField(v string, p Path, raw []byte) error {
	return o.keepFieldAt(v, o.stashKey(p), raw)
}

// keepFieldAt is keepField for the field of stash key key.
func (o *Object) keepFieldAt(v, key string, raw []byte) error {
	s, err := o.stashOf(v, true)
	if err != nil {
		return err
	}
	if s.Fields == nil {
		s.Fields = map[string]json.RawMessage{}
	}
	s.Fields[key] = json.RawMessage(raw)
	o.whole().pres.changed = true
	return nil
}

// keepDroppable is keepField for a field a drop rule gives up: kept in the
// annotation only while the annotations stay within the API server's
// limit (see flushPreserved).
func (o *Object) keepDroppable(v string, p Path, raw []byte) error {
	key := o.stashKey(p)
	if err := o.keepFieldAt(v, key, raw); err != nil {
		return err
	}
	w := o.whole()
	w.pres.droppable = append(w.pres.droppable, keptAt{version: v, key: key})
	return nil
}

// takeField removes and returns the kept value of a field version v owns.
func (o *Object) takeField(v string, p Path) ([]byte, bool, error) {
	s, err := o.stashOf(v, false)
	if err != nil || s == nil {
		return nil, false, err
	}
	k := o.stashKey(p)
	raw, ok := s.Fields[k]
	if ok {
		delete(s.Fields, k)
		o.whole().pres.changed = true
	}
	return raw, ok, nil
}

func (o *Object) keepExact(v string, p Path, value, as []byte) error {
	s, err := o.stashOf(v, true)
	if err != nil {
		return err
	}
	if s.Exact == nil {
		s.Exact = map[string]exactValue{}
	}
	// Copied into scratch memory, which lasts as long as the annotation's
	// data (this conversion); As stays nil for no value.
	e := exactValue{Value: o.st.keep(value)}
	if len(as) > 0 {
		e.As = o.st.keep(as)
	}
	s.Exact[o.stashKey(p)] = e
	o.whole().pres.changed = true
	return nil
}

// takeExact removes the exact value kept for p and returns it if the value
// it was converted to is still as (nil: no value): an edit since then
// wins, unless the rule says the kept value does (Object.keptWins).
func (o *Object) takeExact(v string, p Path, as []byte) ([]byte, bool, error) {
	s, err := o.stashOf(v, false)
	if err != nil || s == nil {
		return nil, false, err
	}
	k := o.stashKey(p)
	e, ok := s.Exact[k]
	if !ok {
		return nil, false, nil
	}
	if (e.As == nil) != (as == nil) && !o.keptWins {
		// Kept against a value where there is none, or the other way
		// round: not this value's, and left for the rule it belongs to.
		return nil, false, nil
	}
	delete(s.Exact, k)
	o.whole().pres.changed = true
	if !o.keptWins && as != nil && !jsonEqual(e.As, as) {
		return nil, false, nil
	}
	return e.Value, true, nil
}

// keepPresence records whether field p was set (true) or missing (false)
// in version v, which owns the record.
func (o *Object) keepPresence(v string, p Path, set bool) error {
	s, err := o.stashOf(v, true)
	if err != nil {
		return err
	}
	if s.Presence == nil {
		s.Presence = map[string]bool{}
	}
	s.Presence[o.stashKey(p)] = set
	o.whole().pres.changed = true
	return nil
}

// takePresence removes and returns the presence of field p version v
// recorded, and whether there was a record.
func (o *Object) takePresence(v string, p Path) (set, ok bool, err error) {
	s, err := o.stashOf(v, false)
	if err != nil || s == nil {
		return false, false, err
	}
	k := o.stashKey(p)
	set, ok = s.Presence[k]
	if ok {
		delete(s.Presence, k)
		o.whole().pres.changed = true
	}
	return set, ok, nil
}

func (o *Object) keepOrder(v string, p Path, keys []string) error {
	s, err := o.stashOf(v, true)
	if err != nil {
		return err
	}
	if s.Order == nil {
		s.Order = map[string][]string{}
	}
	s.Order[o.stashKey(p)] = keys
	o.whole().pres.changed = true
	return nil
}

func (o *Object) takeOrder(v string, p Path) ([]string, error) {
	s, err := o.stashOf(v, false)
	if err != nil || s == nil {
		return nil, err
	}
	k := o.stashKey(p)
	keys, ok := s.Order[k]
	if ok {
		delete(s.Order, k)
		o.whole().pres.changed = true
	}
	return keys, nil
}

// flushPreserved writes the annotation back if it changed: removed when
// nothing is left to keep (and the annotations map with it when that leaves
// it empty), never added when there is nothing to keep.
func (o *Object) flushPreserved() error {
	// What the target version owns was restored by its rules on the way
	// in; anything left is stale (the item it belonged to was removed, a
	// rule was dropped) and must not come back later on something else.
	if s := o.pres.data[o.to]; s != nil {
		delete(o.pres.data, o.to)
		o.pres.changed = o.pres.changed || !s.empty()
	}
	if !o.pres.changed {
		return nil
	}
	for v, s := range o.pres.data {
		if s.empty() {
			delete(o.pres.data, v)
		}
	}
	if len(o.pres.data) == 0 {
		if _, _, err := o.del(preservedPath); err != nil {
			return err
		}
		return o.pruneEmpty(preservedPath, 1)
	}
	inner, size, err := o.writePreserved()
	if err != nil {
		return err
	}
	if size > apirules.MaxAnnotationsBytes && len(o.pres.droppable) > 0 {
		// What drop rules kept is kept only where it fits.
		for _, d := range o.pres.droppable {
			if s := o.pres.data[d.version]; s != nil {
				delete(s.Fields, d.key)
				if s.empty() {
					delete(o.pres.data, d.version)
				}
			}
		}
		if len(o.pres.data) == 0 {
			if _, _, err := o.del(preservedPath); err != nil {
				return err
			}
			if err := o.pruneEmpty(preservedPath, 1); err != nil {
				return err
			}
			inner = nil
			size, err = o.annotationsSize()
		} else {
			inner, size, err = o.writePreserved()
		}
		if err != nil {
			return err
		}
	}
	if size > apirules.MaxAnnotationsBytes {
		return &Error{Pointer: preservedPath.Pointer(), abs: true, Err: fmt.Errorf(
			"keeping the fields version %s cannot hold needs %d bytes in annotation %s, which grows metadata.annotations to %d bytes, over the API server's limit of %d bytes",
			o.to, len(inner), PreservedAnnotation, size, apirules.MaxAnnotationsBytes)}
	}
	return nil
}

// writePreserved writes the annotation from o.pres.data and returns its
// value and the size of the annotations with it.
func (o *Object) writePreserved() ([]byte, int, error) {
	// As json.Marshal writes it (maps with sorted keys: deterministic),
	// into scratch memory.
	st := o.st
	start := len(st.scratch)
	buf, ok := appendPreserved(st.scratch, o.pres.data)
	if !ok {
		b, err := json.Marshal(o.pres.data)
		if err != nil {
			return nil, 0, err
		}
		buf = append(st.scratch[:start], b...)
	}
	st.scratch = buf
	inner := buf[start:len(buf):len(buf)]
	vstart := len(st.scratch)
	st.scratch = appendJSONString(st.scratch, inner)
	value := st.scratch[vstart:len(st.scratch):len(st.scratch)]
	if err := o.set(preservedPath, node{raw: value}); err != nil {
		return nil, 0, &Error{Pointer: preservedPath.Pointer(), abs: true, Err: err}
	}
	size, err := o.annotationsSize()
	return inner, size, err
}

// annotationsSize is the total size of the annotations as the API server
// counts it (apirules.AnnotationsSize: every key and value).
func (o *Object) annotationsSize() (int, error) {
	n, err := o.lookup(annotationsPath)
	if err != nil || n == nil {
		return 0, err
	}
	st := o.st
	start := len(st.scratch)
	st.scratch = n.write(st.scratch) // only counted: given back below
	size, err := apirules.AnnotationsSize(st.scratch[start:])
	st.scratch = st.scratch[:start]
	if err != nil {
		return 0, &Error{Pointer: annotationsPath.Pointer(), abs: true, Err: err}
	}
	return size, nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonEqual compares two JSON values semantically: key order ignored,
// numbers equal when the API server writes them back the same
// (apirules.SameNumber: 1.0 is 1), since it re-encodes every number it
// stores.
func jsonEqual(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	if eq, ok := scalarEqual(a, b); ok {
		return eq
	}
	var x, y any
	da := json.NewDecoder(strings.NewReader(string(a)))
	da.UseNumber()
	db := json.NewDecoder(strings.NewReader(string(b)))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return equalValues(x, y)
}

// scalarEqual compares two JSON scalars without decoding them into Go
// values (no decoder, no allocation for strings without escapes): ok is
// false when either is an object or a list.
func scalarEqual(a, b []byte) (eq, ok bool) {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if len(a) == 0 || len(b) == 0 || a[0] == '{' || a[0] == '[' || b[0] == '{' || b[0] == '[' {
		return false, false
	}
	switch {
	case a[0] == '"' && b[0] == '"':
		if bytes.IndexByte(a, '\\') < 0 && bytes.IndexByte(b, '\\') < 0 {
			return string(a) == string(b), true
		}
		x, _ := stringOf(node{raw: a})
		y, _ := stringOf(node{raw: b})
		return x == y, true
	case isNumberStart(a[0]) && isNumberStart(b[0]):
		return apirules.SameNumber(a, b), true
	}
	return string(a) == string(b), true // literals, or two kinds
}

func isNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

func equalValues(x, y any) bool {
	switch a := x.(type) {
	case map[string]any:
		b, ok := y.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalValues(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := y.(json.Number)
		return ok && apirules.SameNumber([]byte(a), []byte(b))
	default:
		return x == y
	}
}
