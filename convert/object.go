package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Object is the raw JSON of one object while it is converted. Rules and Go
// functions read and change it through paths; what they do not touch is
// written out exactly as it was read.
//
// Values go in and out as raw JSON. An Object is only valid during the call
// it was passed to.
type Object struct {
	st   *state
	root node

	// from and to are the versions of the step being run (spoke and hub, or
	// hub and spoke).
	from, to string
	pres     preservation

	// An item of a list or map that a scoped rule runs on is an Object of
	// its own, with the item under itemKey. top is the whole object (nil
	// on the whole object itself), which holds the preserved annotation;
	// item says where the item is, to name it in errors (by its JSON
	// pointer) and in the annotation (by list-map key or position).
	top  *Object
	item itemRef

	// keptWins is set while a rule whose restore policy is "kept" runs:
	// a kept value is restored over an edit made through the other
	// version since (the default is the other way round).
	keptWins bool
}

// itemRef is where an item is: in the list or map at path at of parent, at
// index (a list) or under key (a map, or a list item picked by its list-map
// key, whose value keyRaw holds). Names are built only when needed.
type itemRef struct {
	parent *Object
	at     Path
	index  int
	key    string // map key
	keyRaw []byte // list-map key value, as JSON
	field  string // list-map key field
}

// ptrBase returns the JSON pointer of the item o holds.
func (o *Object) ptrBase() string {
	r := &o.item
	base := r.parent.pointer(r.at) + "/"
	if r.index >= 0 {
		return base + strconv.Itoa(r.index)
	}
	return base + EscapePointerToken(r.key)
}

// keyBase returns the name of the item o holds in the preserved annotation.
func (o *Object) keyBase() string {
	r := &o.item
	base := r.parent.stashKey(r.at) + "/"
	switch {
	case r.keyRaw != nil:
		return base + EscapePointerToken(keySegment(r.field, r.keyRaw))
	case r.index >= 0:
		return base + strconv.Itoa(r.index)
	}
	return base + EscapePointerToken(r.key)
}

// plainOnly refuses a path with selectors where one value is meant: Go
// code reads and writes one value at a time.
func plainOnly(p Path) error {
	if p.HasSelectors() {
		return fmt.Errorf("path %s names many values; Object's methods take the path of one value", p)
	}
	return nil
}

// whole returns the whole object o is part of.
func (o *Object) whole() *Object {
	if o.top != nil {
		return o.top
	}
	return o
}

// pointer returns the JSON pointer of p in the whole object.
func (o *Object) pointer(p Path) string {
	if o.top == nil {
		return p.plainPointer()
	}
	return o.ptrBase() + strings.TrimPrefix(p.plainPointer(), "/"+itemKey)
}

// stashKey names p in the preserved annotation.
func (o *Object) stashKey(p Path) string {
	if o.top == nil {
		return p.plainPointer()
	}
	return o.keyBase() + strings.TrimPrefix(p.plainPointer(), "/"+itemKey)
}

// FromVersion is the version the object is converted from in this step.
func (o *Object) FromVersion() string { return o.from }

// ToVersion is the version the object is converted to in this step.
func (o *Object) ToVersion() string { return o.to }

// Get returns the raw JSON of the value at p and whether it exists. An
// explicit null exists and is returned as "null".
func (o *Object) Get(p Path) ([]byte, bool, error) {
	if err := plainOnly(p); err != nil {
		return nil, false, err
	}
	n, err := o.lookup(p)
	if err != nil || n == nil {
		return nil, false, err
	}
	return o.rawOf(n), true, nil
}

// Decode unmarshals the value at p into v (encoding/json rules) and reports
// whether the value exists.
func (o *Object) Decode(p Path, v any) (bool, error) {
	raw, ok, err := o.Get(p)
	if err != nil || !ok {
		return false, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return true, fmt.Errorf("%s: %w", p.Pointer(), err)
	}
	return true, nil
}

// Set stores raw (which must be valid JSON) at p, creating missing parent
// objects. It fails if a parent exists and is not an object.
func (o *Object) Set(p Path, raw []byte) error {
	if err := plainOnly(p); err != nil {
		return err
	}
	sp := o.st.subParser(raw)
	n, err := sp.parseDocument(nil)
	o.st.done(&sp)
	if err != nil {
		return fmt.Errorf("setting %s: %w", p.Pointer(), err)
	}
	return o.set(p, node{raw: o.st.keep(n.raw)})
}

// Encode marshals v with encoding/json and stores it at p.
func (o *Object) Encode(p Path, v any) error {
	if err := plainOnly(p); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		var uv *json.UnsupportedValueError
		var ut *json.UnsupportedTypeError
		switch {
		case errors.As(err, &uv):
			return fmt.Errorf("%s: %s is not a JSON value", p.Pointer(), uv.Str)
		case errors.As(err, &ut):
			return fmt.Errorf("%s: a value of Go type %s has no JSON form", p.Pointer(), ut.Type)
		}
		return fmt.Errorf("%s: %w", p.Pointer(), err)
	}
	return o.Set(p, raw) // validated: a big number may not decode
}

// Delete removes the value at p and returns its raw JSON, if it existed.
func (o *Object) Delete(p Path) ([]byte, bool, error) {
	if err := plainOnly(p); err != nil {
		return nil, false, err
	}
	n, ok, err := o.del(p)
	if err != nil || !ok {
		return nil, false, err
	}
	return o.rawOf(&n), true, nil
}

// rawOf returns the JSON of n, writing a modified object or list into
// scratch space.
func (o *Object) rawOf(n *node) []byte {
	if !n.changed() {
		return n.raw
	}
	start := len(o.st.scratch)
	o.st.scratch = n.write(o.st.scratch)
	return o.st.scratch[start:len(o.st.scratch):len(o.st.scratch)]
}

// lookup returns the node at p, or nil when it (or a parent) is missing or a
// parent is not an object.
func (o *Object) lookup(p Path) (*node, error) {
	cur := &o.root
	for _, seg := range p.segs {
		ok, err := o.st.expandFor(cur, seg)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		i := cur.obj.find(seg)
		if i < 0 {
			return nil, nil
		}
		cur = &cur.obj.members[i].val
	}
	return cur, nil
}

// set stores v at p, creating missing parent objects.
func (o *Object) set(p Path, v node) error {
	if len(p.segs) == 0 {
		return fmt.Errorf("cannot replace the whole object")
	}
	cur := &o.root
	for depth, seg := range p.segs {
		ok, err := o.st.expandFor(cur, seg)
		if err != nil {
			return err
		}
		if !ok {
			parent := Path{segs: p.segs[:depth]}
			return fmt.Errorf("cannot set %s: %s is %s, not an object", p.Pointer(), parent.Pointer(), describe(*cur))
		}
		cur.obj.modified = true
		i := cur.obj.find(seg)
		last := depth == len(p.segs)-1
		if i < 0 {
			q := o.st.quote(seg)
			m := member{rawKey: q, plain: bytes.IndexByte(q, '\\') < 0}
			if last {
				m.val = v
			} else {
				parent := o.st.newObj(nil)
				parent.modified = true
				m.val = node{raw: emptyObject, obj: parent}
			}
			o.st.addMember(cur.obj, m)
			i = len(cur.obj.members) - 1
			if last {
				return nil
			}
		} else if last {
			cur.obj.members[i].val = v
			return nil
		}
		cur = &cur.obj.members[i].val
	}
	return nil
}

// emptyObject is the JSON of an object set creates on the way to a new
// member (never written to: a node's raw is only ever replaced).
var emptyObject = []byte("{}")[:2:2]

// del removes the value at p.
func (o *Object) del(p Path) (node, bool, error) {
	if len(p.segs) == 0 {
		return node{}, false, fmt.Errorf("cannot delete the whole object")
	}
	cur := &o.root
	var visited [16]*objNode
	objs := visited[:0]
	for depth, seg := range p.segs {
		ok, err := o.st.expandFor(cur, seg)
		if err != nil || !ok {
			return node{}, false, err
		}
		objs = append(objs, cur.obj)
		i := cur.obj.find(seg)
		if i < 0 {
			return node{}, false, nil
		}
		if depth == len(p.segs)-1 {
			old := cur.obj.members[i].val
			cur.obj.members[i].deleted = true
			for _, ob := range objs {
				ob.modified = true
			}
			return old, true, nil
		}
		cur = &cur.obj.members[i].val
	}
	return node{}, false, nil
}

// pruneEmpty deletes the parents of p, deepest first, that are now empty
// objects, but never the first keep segments.
func (o *Object) pruneEmpty(p Path, keep int) error {
	for d := len(p.segs) - 1; d > keep; d-- {
		parent := Path{segs: p.segs[:d]}
		n, err := o.lookup(parent)
		if err != nil {
			return err
		}
		if n == nil || n.obj == nil || n.obj.live() != 0 {
			return nil
		}
		if _, _, err := o.del(parent); err != nil {
			return err
		}
	}
	return nil
}

// describe names the JSON type of n for error messages.
func describe(n node) string {
	switch n.kind() {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case 0:
		return "missing"
	default:
		return "a number"
	}
}

// appendQuoted appends s as a JSON string, spelled as encoding/json spells
// it.
func appendQuoted(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return append(dst, quoteKey(s)...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// plainByte reports whether encoding/json writes c, a byte of a string, as
// it is.
func plainByte(c byte) bool { return plainBytesTable[c] }

// plainBytesTable[c] is plainByte(c): a look-up, one load a byte.
var plainBytesTable = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// quoteKey returns k as a JSON string.
func quoteKey(k string) []byte {
	b, _ := json.Marshal(k) // a string always marshals
	return b
}

// stringBytes is stringOf without a copy: the content of the JSON string n
// as written (a part of n.raw) when it holds no escape, else decoded.
func stringBytes(n node) ([]byte, bool) {
	if n.kind() != '"' {
		return nil, false
	}
	inner := n.raw[1 : len(n.raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, true
	}
	s, ok := stringOf(n)
	return []byte(s), ok
}

// stringOf decodes n as a JSON string.
func stringOf(n node) (string, bool) {
	if n.kind() != '"' {
		return "", false
	}
	inner := n.raw[1 : len(n.raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(n.raw, &s); err != nil {
		return "", false
	}
	return s, true
}
