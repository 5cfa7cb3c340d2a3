package convert

import (
	"bytes"
	"fmt"
	"strings"
)

// scopedRule runs a rule on every item its path selects: the items of a
// list ([*], [key=*]), one item by its list-map key ([key=value]), or the
// values of a map (.*), nested to any depth. The inner rule sees each item
// as an object of its own, holding the item under itemKey; what it keeps in
// the preserved annotation is named by the item's key (or position), so it
// comes back to the same item.
type scopedRule struct {
	inner Rule
	scope []step
}

// scoped wraps inner, built on the inner paths of paths with the selectors
// of at, so that it runs on every item at selects. It returns inner itself
// for a plain path.
func scoped(inner Rule, at Path) Rule {
	if len(at.scope) == 0 {
		return inner
	}
	return &scopedRule{inner: inner, scope: at.scope}
}

func (r *scopedRule) String() string { return r.inner.String() }

// paths are the objects the scanner expands: those leading to the first
// list or map, and what the inner rule reads outside the items (the
// annotations).
func (r *scopedRule) paths() []Path {
	out := []Path{{segs: r.scope[0].segs}}
	if pr, ok := r.inner.(pathRule); ok {
		for _, p := range pr.paths() {
			if !p.inner {
				out = append(out, p)
			}
		}
	}
	return out
}

func (r *scopedRule) ToHub(o *Object) error   { return r.each(o, 0, r.inner.ToHub) }
func (r *scopedRule) FromHub(o *Object) error { return r.each(o, 0, r.inner.FromHub) }

// each runs apply on every item selected by r.scope[depth:] under o.
func (r *scopedRule) each(o *Object, depth int, apply func(*Object) error) error {
	if depth == len(r.scope) {
		err := apply(o)
		if e, ok := err.(*Error); ok && !e.abs && o.top != nil {
			// The inner rule names paths under itemKey; name them in
			// the whole object.
			if rest, ok := strings.CutPrefix(e.Pointer, "/"+itemKey); ok {
				e.Pointer = o.ptrBase + rest
			}
			e.abs = true
		}
		return err
	}
	st := r.scope[depth]
	at := Path{segs: st.segs}
	if o.top != nil {
		at.segs = append([]string{itemKey}, st.segs...)
	}
	ptr, key := o.pointer(at), o.stashKey(at)
	n, err := o.lookup(at)
	if err != nil {
		return r.fail(ptr, err)
	}
	if n == nil || n.isNull() {
		return nil
	}
	if st.sel.kind == selValues {
		if ok, err := o.st.expand(n); err != nil {
			return r.fail(ptr, err)
		} else if !ok {
			return r.fail(ptr, fmt.Errorf("value is %s, not a map; use [*] for the items of a list", describe(*n)))
		}
		changed := false
		for i := range n.obj.members {
			m := &n.obj.members[i]
			if m.deleted {
				continue
			}
			seg := escapePointer(decodeKey(m.rawKey))
			v, ch, err := r.item(o, depth, apply, m.val, ptr+"/"+seg, key+"/"+seg)
			if err != nil {
				return err
			}
			if ch {
				m.val, changed = v, true
			}
		}
		if changed {
			n.obj.modified = true
			if err := o.markPath(at); err != nil {
				return r.fail(ptr, err)
			}
		}
		return nil
	}
	if n.kind() != '[' {
		hint := ""
		if n.kind() == '{' {
			hint = "; use .* for the values of a map"
		}
		return r.fail(ptr, fmt.Errorf("value is %s, not a list%s", describe(*n), hint))
	}
	items, err := o.st.elements(n.raw)
	if err != nil {
		return r.fail(ptr, err)
	}
	changed := false
	for i := range items {
		idx := indexSegment(i)
		name := idx // the item's name in the preserved annotation
		if st.sel.kind != selItems {
			k, match, err := selectItem(o, &items[i], st.sel)
			if err != nil {
				return r.fail(ptr+"/"+idx, err)
			}
			if !match {
				continue
			}
			name = escapePointer(k)
		}
		v, ch, err := r.item(o, depth, apply, items[i], ptr+"/"+idx, key+"/"+name)
		if err != nil {
			return err
		}
		if ch {
			items[i], changed = v, true
		}
	}
	if !changed {
		return nil
	}
	start := len(o.st.scratch)
	o.st.scratch = append(o.st.scratch, '[')
	for i := range items {
		if i > 0 {
			o.st.scratch = append(o.st.scratch, ',')
		}
		o.st.scratch = items[i].write(o.st.scratch)
	}
	o.st.scratch = append(o.st.scratch, ']')
	list := o.st.scratch[start:len(o.st.scratch):len(o.st.scratch)]
	if err := o.set(at, node{raw: list}); err != nil {
		return r.fail(ptr, err)
	}
	return nil
}

// item runs the rest of the scope on one item and returns the item after
// it, and whether it changed.
func (r *scopedRule) item(o *Object, depth int, apply func(*Object) error, it node, ptr, key string) (node, bool, error) {
	sub := &Object{st: o.st, from: o.from, to: o.to, top: o.whole(), ptrBase: ptr, keyBase: key}
	sub.root = node{obj: o.st.newObj([]member{{rawKey: itemKeyQuoted, val: it, plain: true}})}
	if err := r.each(sub, depth+1, apply); err != nil {
		return node{}, false, err
	}
	m := &sub.root.obj.members[0]
	if m.deleted || len(sub.root.obj.members) != 1 {
		return node{}, false, r.fail(ptr, fmt.Errorf("the rule removed the item itself"))
	}
	v := m.val
	changed := v.obj != nil && v.obj.modified || len(v.raw) != len(it.raw) || len(v.raw) > 0 && &v.raw[0] != &it.raw[0]
	return v, changed, nil
}

var itemKeyQuoted = []byte(`"` + itemKey + `"`)

// selectItem reads the list-map key of an item: its name in the preserved
// annotation, and whether it matches sel.
func selectItem(o *Object, it *node, sel selector) (string, bool, error) {
	if ok, err := o.st.expand(it); err != nil {
		return "", false, err
	} else if !ok {
		return "", false, fmt.Errorf("item is %s, not an object with key field %q", describe(*it), sel.key)
	}
	i := it.obj.find(sel.key)
	if i < 0 {
		return "", false, fmt.Errorf("item has no key field %q", sel.key)
	}
	kv := it.obj.members[i].val
	switch kv.kind() {
	case '{', '[', 'n':
		return "", false, fmt.Errorf("key field %q is %s, not a string, number or boolean", sel.key, describe(kv))
	}
	seg := keySegment(sel.key, kv.raw)
	if kv.kind() == '"' {
		if s, ok := stringOf(kv); ok {
			seg = keySegment(sel.key, quoteKey(s)) // one spelling for every escape
		}
	}
	if sel.kind != selKey {
		return seg, true, nil
	}
	if kv.kind() == '"' {
		s, _ := stringOf(kv)
		return seg, s == sel.value, nil
	}
	return seg, !sel.quoted && bytes.Equal(kv.raw, []byte(sel.value)), nil
}

func (r *scopedRule) fail(ptr string, err error) error {
	return &Error{Index: -1, Pointer: ptr, Rule: r.String(), Err: err, abs: true}
}

// checkScopes refuses a pair of paths that go through different lists or
// maps: the rule runs on one item at a time, so both ends must be in it.
func checkScopes(kind string, from, to Path) error {
	if !sameScope(from, to) {
		return fmt.Errorf("%s: %s and %s go through different lists or maps; a rule runs inside each item, so both paths need the same selectors (move a list itself with a rule of its own)", kind, from, to)
	}
	return nil
}
