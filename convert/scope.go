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
	// at holds, for each step, the path of its list or map in the object
	// the step runs on (under itemKey below the first step).
	at []Path
	// rename holds the spoke and hub keys of a rename between two keys of
	// the items themselves, which runs on the items directly: no walk from
	// the item object's root.
	rename *[2]string
	quoted [2][]byte // the rename's keys as JSON
	plain  [2]bool   // quoted holds no escape
	// toHub and fromHub are what runs on each item.
	toHub, fromHub func(*Object) error
}

// scoped wraps inner, built on the inner paths of paths with the selectors
// of at, so that it runs on every item at selects. It returns inner itself
// for a plain path.
func scoped(inner Rule, at Path) Rule {
	if len(at.scope) == 0 {
		return inner
	}
	r := &scopedRule{inner: inner, scope: at.scope}
	for i, st := range at.scope {
		p := Path{segs: st.segs}
		if i > 0 {
			p.segs = append([]string{itemKey}, st.segs...)
		}
		r.at = append(r.at, p)
	}
	r.toHub, r.fromHub = inner.ToHub, inner.FromHub
	if rn, ok := inner.(*renameRule); ok && len(rn.from.segs) == 2 && len(rn.to.segs) == 2 {
		r.rename = &[2]string{rn.from.segs[1], rn.to.segs[1]}
		for i, k := range r.rename {
			q := quoteKey(k)
			r.quoted[i], r.plain[i] = q[:len(q):len(q)], bytes.IndexByte(q, '\\') < 0
		}
		r.toHub, r.fromHub = r.renameItem(0, 1), r.renameItem(1, 0)
	}
	return r
}

func (r *scopedRule) String() string { return r.inner.String() }

// paths are what the scanner expands: the lists and maps of the scope, and
// in their items what the inner rule reads (its paths, through the
// selectors), so that each walks items the scan read, and what the inner
// rule reads outside the items (the annotations).
func (r *scopedRule) paths() []Path {
	out := []Path{{segs: r.scope[0].segs}}
	if pr, ok := r.inner.(pathRule); ok {
		out = append(out, pr.paths()...)
	}
	return out
}

func (r *scopedRule) ToHub(o *Object) error {
	if o.st.p.fusedRan(r, 0) {
		return nil // the scan did it (see fusedList)
	}
	return r.each(o, 0, r.toHub, 0)
}

func (r *scopedRule) FromHub(o *Object) error {
	if o.st.p.fusedRan(r, 1) {
		return nil
	}
	return r.each(o, 0, r.fromHub, 1)
}

// renameItem renames key r.rename[from] of an item to r.rename[to], as the
// rename rule would, in place: it marks the item object modified, which is
// how each sees it changed.
func (r *scopedRule) renameItem(from, to int) func(*Object) error {
	return func(o *Object) error {
		it := &o.root.obj.members[0].val
		if done, _ := r.renamePartial([]node{*it}, from, to, &covered{}); done == 1 {
			return nil // its object renamed in place
		}
		return r.renameIn(o, it, from, to)
	}
}

// covered remembers, for the items of one list, whether renamePartial
// can do a rename on the partial objects of a trie: the trie holds both
// keys (see objNode.covers) and the rename's keys are plain. The items of
// a list share their trie, so it is asked once a list.
type covered struct {
	t  *trie
	ok bool
}

// renamePartial is renameIn's common case, run first on a run of items:
// partial items, as the scan read them, whose trie holds both keys (their
// members are those on their trie, so the rename needs no more than a look
// at them), all plain, so that their keys and the rename's quoted ones are
// equal only as bytes. It renames from the first item of its on, and
// returns how many items it did and whether it changed any: it stops at
// the first item renameIn must do (an escaped key, both keys set: the
// error, an item a rule made).
func (r *scopedRule) renamePartial(its []node, from, to int, cov *covered) (done int, changed bool) {
	src, dst := r.quoted[from], r.quoted[to]
	for k := range its {
		ob := its[k].obj
		if ob == nil || ob.t == nil {
			return k, changed
		}
		if ob.t != cov.t {
			cov.t, cov.ok = ob.t, r.plain[0] && r.plain[1] && ob.covers(r.rename[0]) && ob.covers(r.rename[1])
		}
		if !cov.ok {
			return k, changed
		}
		at := -1
		for i := range ob.members {
			switch m := &ob.members[i]; {
			case m.deleted:
			case !m.plain:
				return k, changed
			case string(m.rawKey) == string(src):
				at = i
			case string(m.rawKey) == string(dst):
				return k, changed
			}
		}
		if at >= 0 {
			m := &ob.members[at]
			m.rawKey, m.plain = dst, true
			ob.modified, changed = true, true
		}
	}
	return len(its), changed
}

// renameIn renames key from of r.rename to key to in the item it, which o
// (the item object) names in errors: the general case, after
// renamePartial.
func (r *scopedRule) renameIn(o *Object, it *node, from, to int) error {
	src, dst, q := r.rename[from], r.rename[to], r.quoted[to]
	if ok, err := o.st.expandFor(it, src); err != nil {
		return r.fail(o.ptrBase(), err)
	} else if !ok {
		return nil // not an object: nothing to rename
	}
	if _, err := o.st.expandFor(it, dst); err != nil {
		return r.fail(o.ptrBase(), err)
	}
	i := it.obj.find(src)
	if i < 0 {
		return nil
	}
	if it.obj.find(dst) >= 0 {
		s, d := o.ptrBase()+"/"+EscapePointerToken(src), o.ptrBase()+"/"+EscapePointerToken(dst)
		return &Error{Index: -1, Pointer: d, Rule: r.String(), abs: true,
			Err: fmt.Errorf("both %s and %s are set; refusing to overwrite %s", s, d, d)}
	}
	m := &it.obj.members[i]
	m.rawKey, m.plain = q, r.plain[to]
	it.obj.modified = true
	return nil
}

// each runs apply on every item selected by r.scope[depth:] under o.
func (r *scopedRule) each(o *Object, depth int, apply func(*Object) error, dir int) error {
	var at Path
	if depth < len(r.at) {
		at = r.at[depth]
	}
	return r.eachAt(o, depth, at, 0, apply, dir)
}

// eachAt is each for the list or map at at, under o. level counts the
// lists of a tree selector ([**]) above it: level 0 is the list the path
// names, level 1 the lists its items hold under the same key, and so on.
func (r *scopedRule) eachAt(o *Object, depth int, at Path, level int, apply func(*Object) error, dir int) error {
	if depth == len(r.scope) {
		err := apply(o)
		if e, ok := err.(*Error); ok && !e.abs && o.top != nil {
			// The inner rule names paths under itemKey; name them in
			// the whole object.
			if rest, ok := strings.CutPrefix(e.Pointer, "/"+itemKey); ok {
				e.Pointer = o.ptrBase() + rest
			}
			e.abs = true
		}
		return err
	}
	st := r.scope[depth]
	n, err := o.lookup(at)
	if err != nil {
		return r.fail(o.pointer(at), err)
	}
	if n == nil || n.isNull() {
		return nil
	}
	slot := depth + level*(len(r.scope)+1) // the item object and root of this depth and level
	sub := o.st.subObject(slot)
	*sub = Object{st: o.st, from: o.from, to: o.to, top: o.whole(), item: itemRef{parent: o, at: at, index: -1}, keptWins: o.keptWins}
	if st.sel.kind == selValues {
		if ok, err := o.st.expand(n); err != nil {
			return r.fail(o.pointer(at), err)
		} else if !ok {
			return r.fail(o.pointer(at), fmt.Errorf("value is %s, not a map; use [*] for the items of a list", describe(*n)))
		}
		changed := false
		for i := range n.obj.members {
			m := &n.obj.members[i]
			if m.deleted {
				continue
			}
			sub.item.key = decodeKey(m.rawKey)
			v, ch, err := r.item(sub, depth, slot, level, apply, dir, m.val)
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
				return r.fail(o.pointer(at), err)
			}
		}
		return nil
	}
	if n.kind() != '[' {
		hint := ""
		if n.kind() == '{' {
			hint = "; use .* for the values of a map"
		}
		return r.fail(o.pointer(at), fmt.Errorf("value is %s, not a list%s", describe(*n), hint))
	}
	// The items as the scan read them (or, for a list a rule made,
	// read now), changed in place.
	if _, err := o.st.expandList(n, &itemTrie); err != nil {
		return r.fail(o.pointer(at), err)
	}
	l := n.list
	changed := false
	var cov covered
	var keys itemKeys
	for i := 0; i < len(l.items); i++ {
		sub.item.index = i
		if st.sel.kind != selItems && st.sel.kind != selTree {
			keyRaw, match, err := selectItem(o, &l.items[i], st.sel)
			if err != nil {
				return r.fail(sub.ptrBase(), err)
			}
			if !match {
				continue
			}
			if prev, dup := keys.add(keyRaw, i); dup {
				return r.fail(sub.ptrBase(), fmt.Errorf("duplicate key %s=%s (also at index %d); the items are known by their key, in the preserved annotation too, so one would take what is kept for the other", st.sel.key, keyRaw, prev))
			}
			sub.item.keyRaw, sub.item.field = keyRaw, st.sel.key
		}
		if r.rename != nil && depth == len(r.scope)-1 && st.sel.kind != selTree {
			// A rename between two keys of the items: on the item
			// itself, with no item object around it; with [*], on
			// the run of items from it that renamePartial can do.
			its := l.items[i : i+1]
			if st.sel.kind == selItems {
				its = l.items[i:]
			}
			done, ch := r.renamePartial(its, dir, 1-dir, &cov)
			changed = changed || ch
			if done > 0 {
				i += done - 1
				continue
			}
			if err := r.renameIn(sub, &l.items[i], dir, 1-dir); err != nil {
				return err
			}
			changed = changed || l.items[i].changed()
			continue
		}
		v, ch, err := r.item(sub, depth, slot, level, apply, dir, l.items[i])
		if err != nil {
			return err
		}
		if ch {
			l.items[i], changed = v, true
		}
	}
	if !changed {
		return nil
	}
	l.modified = true
	if err := o.markPath(at); err != nil {
		return r.fail(o.pointer(at), err)
	}
	return nil
}

// itemKeys holds the keys of the items a keyed selector ([key=*],
// [key=value]) matched so far in a list, as selectItem spells them (one
// spelling for every escape of a string): a few compared in place, more by
// a map.
type itemKeys struct {
	few [8]struct {
		key []byte
		at  int
	}
	n    int
	many map[string]int
}

// add records the key of the item at index i, or returns the index of an
// item matched before with the same key.
func (ks *itemKeys) add(key []byte, i int) (int, bool) {
	if ks.many == nil {
		for _, k := range ks.few[:ks.n] {
			if string(k.key) == string(key) {
				return k.at, true
			}
		}
		if ks.n < len(ks.few) {
			ks.few[ks.n].key, ks.few[ks.n].at = key, i
			ks.n++
			return 0, false
		}
		ks.many = make(map[string]int, 2*len(ks.few))
		for _, k := range ks.few[:ks.n] {
			ks.many[string(k.key)] = k.at
		}
	}
	if j, dup := ks.many[string(key)]; dup {
		return j, true
	}
	ks.many[string(key)] = i
	return 0, false
}

// item runs the rest of the scope on one item, held by sub (slot is its
// place in the state's item objects), and returns the item after it, and
// whether it changed. Under a tree selector the items of the item's own
// list of that key come first, so that a rule renaming that key finds
// them under it.
func (r *scopedRule) item(sub *Object, depth, slot, level int, apply func(*Object) error, dir int, it node) (node, bool, error) {
	sub.root = node{obj: sub.st.itemRoot(slot, it)}
	if st := r.scope[depth]; st.sel.kind == selTree {
		children := Path{segs: []string{itemKey, st.segs[len(st.segs)-1]}}
		if err := r.eachAt(sub, depth, children, level+1, apply, dir); err != nil {
			return node{}, false, err
		}
	}
	if err := r.each(sub, depth+1, apply, dir); err != nil {
		return node{}, false, err
	}
	m := &sub.root.obj.members[0]
	if m.deleted || len(sub.root.obj.members) != 1 {
		return node{}, false, r.fail(sub.ptrBase(), fmt.Errorf("the rule removed the item itself"))
	}
	v := m.val
	changed := v.changed() || len(v.raw) != len(it.raw) || len(v.raw) > 0 && &v.raw[0] != &it.raw[0]
	return v, changed, nil
}

var itemKeyQuoted = []byte(`"` + itemKey + `"`)

// itemTrie expands the items of a list a rule made (the scan expands those
// of the object on the rules' trie): a rule on the items reads inside them.
var itemTrie trie

// selectItem reads the list-map key of an item: its value as JSON (one
// spelling for every escape of a string), and whether it matches sel.
func selectItem(o *Object, it *node, sel selector) ([]byte, bool, error) {
	if ok, err := o.st.expandFor(it, sel.key); err != nil {
		return nil, false, err
	} else if !ok {
		return nil, false, fmt.Errorf("item is %s, not an object with key field %q", describe(*it), sel.key)
	}
	i := it.obj.find(sel.key)
	if i < 0 {
		return nil, false, fmt.Errorf("item has no key field %q", sel.key)
	}
	kv := it.obj.members[i].val
	switch kv.kind() {
	case '{', '[', 'n':
		return nil, false, fmt.Errorf("key field %q is %s, not a string, number or boolean", sel.key, describe(kv))
	}
	raw := kv.raw
	if kv.kind() == '"' && bytes.IndexByte(raw, '\\') >= 0 {
		s, _ := stringOf(kv)
		raw = quoteKey(s)
	}
	if sel.kind != selKey {
		return raw, true, nil
	}
	if kv.kind() == '"' {
		s, _ := stringOf(kv)
		return raw, s == sel.value, nil
	}
	return raw, !sel.quoted && bytes.Equal(kv.raw, []byte(sel.value)), nil
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
