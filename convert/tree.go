package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// node is one JSON value. raw holds its bytes: a span of the input, or bytes
// a rule produced. obj is set when the value is an object that was expanded
// because a rule (or a Go function) looks inside it; list when it is a list
// whose items a rule works on (see trie.items).
type node struct {
	raw  []byte
	obj  *objNode
	list *listNode
}

// listNode is an expanded list. Until modified is set, writing it copies
// raw unchanged.
type listNode struct {
	items    []node
	modified bool
}

// changed reports whether n was changed in place since it was read: then
// raw is stale and only write (or Object.rawOf) gives its JSON.
func (n *node) changed() bool {
	return n.obj != nil && n.obj.modified || n.list != nil && n.list.modified
}

// objNode is an expanded object. Until modified is set, writing it copies
// raw unchanged, so whitespace and everything else stay as they came.
//
// An item of a list on a rule's path is read partially by the scan: only
// its members on the trie of the list's items (t) are held, each with
// where it lies in the item's raw bytes (spans); others counts the members
// it does not hold. Rules on the items name only members on t; anything
// that needs every member (expand) first reads the item in full.
// Writing a changed partial object copies what it does not hold from raw.
type objNode struct {
	members  []member
	modified bool
	t        *trie  // set for a partial object
	spans    []span // of members, in raw; new members have none
	others   int
}

// span is where a member lies in the raw bytes of its object: its key from
// start to keyEnd, its value ending at end.
type span struct{ start, keyEnd, end int }

// covers reports whether find answers for key k: always for a full
// object, and for a partial one when k is on its trie.
func (o *objNode) covers(k string) bool {
	if o.t == nil || o.t.values != nil {
		return true
	}
	for i := range o.t.children {
		if o.t.children[i].key == k {
			return true
		}
	}
	return false
}

// member is one key/value pair; rawKey is the key exactly as written,
// quotes included.
type member struct {
	rawKey  []byte
	val     node
	deleted bool
	plain   bool // rawKey is known to hold no escape
}

func (n node) isNull() bool { return n.obj == nil && len(n.raw) == 4 && string(n.raw) == "null" }

// kind returns the first byte of the value, which names its JSON type.
func (n node) kind() byte {
	if n.obj != nil {
		return '{'
	}
	if len(n.raw) == 0 {
		return 0
	}
	return n.raw[0]
}

// keyIs reports whether the quoted key rawKey decodes to k.
func keyIs(rawKey []byte, k string) bool {
	inner := rawKey[1 : len(rawKey)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == k
	}
	return decodeKey(rawKey) == k
}

// decodeKey unquotes a JSON string.
func decodeKey(rawKey []byte) string {
	inner := rawKey[1 : len(rawKey)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(rawKey, &s); err != nil {
		return string(inner)
	}
	return s
}

// find returns the index of the live member with key k, or -1.
func (o *objNode) find(k string) int {
	ms := o.members // a local: its length is read once
	for i := range ms {
		m := &ms[i]
		if m.deleted {
			continue
		}
		if m.plain {
			// The length first: most keys differ in it, and the slice of
			// the quoted key is then not made.
			if len(m.rawKey) == len(k)+2 && string(m.rawKey[1:len(k)+1]) == k {
				return i
			}
		} else if keyIs(m.rawKey, k) {
			return i
		}
	}
	return -1
}

// live reports the number of members not deleted.
func (o *objNode) live() int {
	n := o.others
	for i := range o.members {
		if !o.members[i].deleted {
			n++
		}
	}
	return n
}

// trie holds the paths the rules look at; objects on it are expanded while
// the document is scanned. Tries are small (a few keys a level), so the
// children are a slice scanned with a byte comparison of the quoted key.
//
// A path through lists and maps continues below its selectors: items is
// the trie of the items of a list on the path ([*], [key=*], [key=value]),
// values that of every value of a map (.*). A list with items is expanded
// in the same scan, its items read on items, so that a rule on every item
// walks them once, reading what the scan recorded, and never scans their
// bytes again.
type trie struct {
	children []trieChild
	items    *trie
	values   *trie
	// byLen[n%64] is, for keys n bytes long (quotes included), 1 + the
	// index of the only child whose quoted key has that length modulo
	// 64, manyLens when more than one has, and 0 when none: most keys of
	// a document are told apart from the children by their length alone,
	// with one load (see plainChild).
	byLen [64]uint8
}

const manyLens = 0xff

type trieChild struct {
	quoted []byte // the key as JSON, quotes included
	key    string
	t      *trie
}

// quoteAsWritten returns k as a JSON string with only the escapes JSON
// requires, the spelling a plain key of a document matches as bytes (a
// key such as "a<b" is written so, not as encoding/json writes it).
func quoteAsWritten(k string) []byte {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c == '"' || c == '\\' {
			return quoteKey(k)
		}
	}
	return []byte(`"` + k + `"`)
}

// plainChild returns the trie of the member rawKey, a key known to be
// plain (no escape, control or non-ASCII byte), which equals a key only
// as bytes: the child's own, else that of every value of a map (values),
// else nil. i is t.byLen[len(rawKey)&63], which the scanning loops look
// at first, so that a key of a length no child has costs them no call.
func (t *trie) plainChild(rawKey []byte, i uint8) *trie {
	switch i {
	case 0:
	case manyLens:
		for k := range t.children {
			if c := &t.children[k]; string(c.quoted) == string(rawKey) {
				return c.t
			}
		}
	default:
		if c := &t.children[i-1]; string(c.quoted) == string(rawKey) {
			return c.t
		}
	}
	return t.values
}

// child returns the trie of the member rawKey: its own, else that of every
// value of a map (values), else nil.
func (t *trie) child(rawKey []byte) *trie {
	if t == nil {
		return nil
	}
	for i := range t.children {
		if bytes.Equal(t.children[i].quoted, rawKey) {
			return t.children[i].t
		}
	}
	if bytes.IndexByte(rawKey, '\\') < 0 {
		return t.values
	}
	// An escaped spelling of a key ("\u0073pec") is still that key.
	k := decodeKey(rawKey)
	for i := range t.children {
		if t.children[i].key == k {
			return t.children[i].t
		}
	}
	return t.values
}

// add puts p on the trie, through its selectors: the keys to each list or
// map, then its items or values, then the keys inside them.
func (t *trie) add(p Path) {
	for _, st := range p.scope {
		t = t.addSegs(st.segs)
		next := &t.items
		if st.sel.kind == selValues {
			next = &t.values
		}
		if *next == nil {
			*next = &trie{}
		}
		if st.sel.kind == selTree {
			// Each item holds its children under its list's key: the
			// items' trie goes on through them, to any depth.
			c := (*next).addSegs(st.segs[len(st.segs)-1:])
			if c.items == nil {
				c.items = *next
			}
		}
		t = *next
		if st.sel.key != "" {
			t.addSegs([]string{st.sel.key}) // the list-map key the selector reads
		}
	}
	segs := p.segs
	if p.inner {
		segs = segs[1:] // itemKey: the item itself
	}
	t.addSegs(segs)
}

func (t *trie) addSegs(segs []string) *trie {
	for _, seg := range segs {
		var c *trie
		for i := range t.children {
			if t.children[i].key == seg {
				c = t.children[i].t
			}
		}
		if c == nil {
			c = &trie{}
			q := quoteAsWritten(seg)
			t.children = append(t.children, trieChild{quoted: q, key: seg, t: c})
			if b := &t.byLen[len(q)&63]; *b == 0 && len(t.children) < manyLens {
				*b = uint8(len(t.children))
			} else {
				*b = manyLens
			}
		}
		t = c
	}
	return t
}

// state is the scratch memory of one conversion, pooled so that steady-state
// conversions allocate nothing for the objects they expand.
type state struct {
	p       parser
	obj     Object
	objs    []objNode
	members []member
	lists   []listNode
	items   []node
	spans   []span
	scratch []byte
	// marks is stop-bit memory for parsers of values inside the
	// conversion (see subParser).
	marks []uint64
	// subs and roots are, for each depth of nested selectors, the item
	// object a scoped rule works with and its root.
	subs  []*Object
	roots []*objNode
	// ctx is the JSON of the whole object for the cel expressions of the
	// rule being run (see Object.objectContext), valid while ctxOK.
	ctx   []byte
	ctxOK bool
}

// itemRoot returns the object a scoped rule of nesting depth d sees an item
// in: the item under itemKey. It is reused for every item.
func (s *state) itemRoot(d int, it node) *objNode {
	for len(s.roots) <= d {
		s.roots = append(s.roots, &objNode{members: make([]member, 1)})
	}
	o := s.roots[d]
	o.members = append(o.members[:0], member{rawKey: itemKeyQuoted, val: it, plain: true})
	o.modified = false
	return o
}

// subObject returns the item object of nesting depth d.
func (s *state) subObject(d int) *Object {
	for len(s.subs) <= d {
		s.subs = append(s.subs, &Object{})
	}
	return s.subs[d]
}

// subParser returns a parser for data, a value inside the conversion (an
// object re-read, a list a rule splits). It borrows the state's spare
// stop-bit memory; done gives it back. A parser made while another is
// borrowed gets memory of its own.
func (s *state) subParser(data []byte) parser {
	p := parser{st: s, marks: s.marks[:0]}
	s.marks = nil
	p.reset(data)
	return p
}

func (s *state) done(p *parser) {
	if cap(p.marks) <= maxPooledMarks {
		s.marks = p.marks[:0]
	}
}

// maxPooledMarks is the most stop-bit memory a pooled state keeps for a
// parser: the marks of a 1 MiB document.
const maxPooledMarks = jsonscan.MaxPooledMarks

var statePool = sync.Pool{New: func() any {
	s := &state{objs: make([]objNode, 0, 32), members: make([]member, 0, 256), lists: make([]listNode, 0, 8), items: make([]node, 0, 64)}
	s.p.st = s
	return s
}}

func getState() *state { return statePool.Get().(*state) }

func putState(s *state) {
	// Drop references into the caller's buffers before pooling.
	clear(s.objs)
	clear(s.members)
	clear(s.lists)
	clear(s.items)
	s.spans = s.spans[:0]
	clear(s.p.stack)
	clear(s.p.items[:cap(s.p.items)])
	s.objs, s.members, s.p.stack = s.objs[:0], s.members[:0], s.p.stack[:0]
	s.lists, s.items, s.p.items = s.lists[:0], s.items[:0], s.p.items[:0]
	for _, o := range s.subs {
		*o = Object{}
	}
	for _, o := range s.roots {
		clear(o.members[:cap(o.members)])
	}
	s.p.data = nil
	s.obj = Object{}
	s.ctx, s.ctxOK = nil, false
	if cap(s.scratch) > 1<<20 {
		s.scratch = nil
	}
	s.scratch = s.scratch[:0]
	if cap(s.p.marks) > maxPooledMarks {
		s.p.marks = nil
	}
	statePool.Put(s)
}

// newObj returns an objNode holding a copy of ms, from the arena when there
// is room. The members slice has no spare capacity, so appending to it never
// writes over a neighbour's members.
func (s *state) newObj(ms []member) *objNode {
	o := s.newNode()
	if len(ms) == 0 {
		o.members = nil
		return o
	}
	s.roomForMembers(len(ms))
	b := len(s.members)
	if len(ms) <= 4 {
		// An object of a few members held (a partial item, mostly):
		// cheaper one by one than through a typed slice copy.
		for i := range ms {
			s.members = append(s.members, ms[i])
		}
	} else {
		s.members = append(s.members, ms...)
	}
	o.members = s.members[b:len(s.members):len(s.members)]
	return o
}

// addMember appends m to the members of o, in the arena: o's members
// are copied there with room for m, without spare capacity, as newObj
// makes them (appending in place would write over a neighbour's).
func (s *state) addMember(o *objNode, m member) {
	n := len(o.members)
	s.roomForMembers(n + 1)
	b := len(s.members)
	s.members = append(s.members, o.members...)
	s.members = append(s.members, m)
	o.members = s.members[b : b+n+1 : b+n+1]
}

// newNode returns the next objNode of the arena, as the last conversion
// that used it left it (putState clears them).
func (s *state) newNode() *objNode {
	if len(s.objs) == cap(s.objs) {
		s.objs = make([]objNode, 0, 2*cap(s.objs))
	}
	s.objs = s.objs[:len(s.objs)+1]
	return &s.objs[len(s.objs)-1]
}

// roomForMembers makes room in the arena for n more members: when there is
// none, a new, larger arena; objects already made keep the old one, and the
// pooled state keeps the new one for the next conversions.
func (s *state) roomForMembers(n int) {
	if len(s.members)+n > cap(s.members) {
		s.members = make([]member, 0, max(2*cap(s.members), 2*n))
	}
}

// roomForSpans is roomForMembers for the spans of partial objects.
func (s *state) roomForSpans(n int) {
	if len(s.spans)+n > cap(s.spans) {
		s.spans = make([]span, 0, max(64, 2*cap(s.spans), 2*n))
	}
}

// newPartial returns a partial objNode of trie t (see objNode) holding
// copies of ms and their spans sp.
func (s *state) newPartial(t *trie, ms []member, sp []span, others int) *objNode {
	o := s.newObj(ms)
	if len(sp) > 0 {
		s.roomForSpans(len(sp))
		b := len(s.spans)
		s.spans = append(s.spans, sp...)
		o.spans = s.spans[b:len(s.spans):len(s.spans)]
	} else {
		o.spans = nil
	}
	o.t, o.others = t, others
	return o
}

// newList returns a listNode holding a copy of items, from the arena when
// there is room; like newObj, without spare capacity.
func (s *state) newList(items []node) *listNode {
	if len(s.lists) == cap(s.lists) {
		s.lists = make([]listNode, 0, max(8, 2*cap(s.lists)))
	}
	s.lists = s.lists[:len(s.lists)+1]
	l := &s.lists[len(s.lists)-1]
	if len(items) == 0 {
		l.items = nil
		return l
	}
	if len(s.items)+len(items) > cap(s.items) {
		s.items = make([]node, 0, max(2*cap(s.items), 2*len(items)))
	}
	b := len(s.items)
	s.items = append(s.items, items...)
	l.items = s.items[b:len(s.items):len(s.items)]
	return l
}

// expandList makes n, a list, an expanded one (its items read on t), as
// the scan makes the lists on a rule's path. It reports false for any
// other value.
func (s *state) expandList(n *node, t *trie) (bool, error) {
	if n.list != nil {
		return true, nil
	}
	if n.kind() != '[' {
		return false, nil
	}
	p, sub := s.listParser(n.raw)
	l, err := p.array(t)
	if sub {
		s.done(&p)
	}
	if err != nil {
		return false, err
	}
	n.list = l
	return true, nil
}

// bytes returns b copied into the conversion's scratch memory.
func (s *state) keep(b []byte) []byte {
	start := len(s.scratch)
	s.scratch = append(s.scratch, b...)
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// quote returns k as a JSON string, in scratch memory.
func (s *state) quote(k string) []byte {
	start := len(s.scratch)
	plain := true
	for i := 0; i < len(k); i++ {
		if !plainByte(k[i]) {
			plain = false
			break
		}
	}
	if plain {
		s.scratch = append(s.scratch, '"')
		s.scratch = append(s.scratch, k...)
		s.scratch = append(s.scratch, '"')
	} else {
		s.scratch = append(s.scratch, quoteKey(k)...)
	}
	return s.scratch[start:len(s.scratch):len(s.scratch)]
}

// expandFor makes n an expanded object that can answer find(k): as
// expand, but a partial object on whose trie k is stays as it is.
func (s *state) expandFor(n *node, k string) (bool, error) {
	if n.obj != nil && n.obj.covers(k) {
		return true, nil
	}
	return s.expand(n)
}

// expand makes n an expanded object holding all its members, if it is an
// object (a partial one is read in full). It reports false for any other
// value.
func (s *state) expand(n *node) (bool, error) {
	if n.obj != nil {
		if n.obj.t == nil {
			return true, nil
		}
		// A partial object, as a rule may have changed it, read in full.
		raw := n.raw
		if n.obj.modified {
			start := len(s.scratch)
			s.scratch = n.write(s.scratch)
			raw = s.scratch[start:len(s.scratch):len(s.scratch)]
		}
		*n = node{raw: raw}
	}
	if n.kind() != '{' {
		return false, nil
	}
	p := s.subParser(n.raw)
	p.stack = s.p.stack[len(s.p.stack):]
	v, err := p.parseDocument(&trie{})
	s.done(&p)
	if err != nil {
		return false, fmt.Errorf("re-reading an object: %w", err)
	}
	if k, dup := duplicateKey(v.obj.members); dup {
		// A rule reading one copy would pass the other through.
		return false, fmt.Errorf("duplicate key %s in an object a rule changes", k)
	}
	n.obj = v.obj
	return true, nil
}

// duplicateKey reports a key that appears twice among ms.
func duplicateKey(ms []member) ([]byte, bool) {
	if len(ms) <= 16 {
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				a, b := ms[i].rawKey, ms[j].rawKey
				if ms[i].plain && ms[j].plain {
					// Keys without escapes are equal only as bytes.
					if len(a) == len(b) && string(a) == string(b) {
						return b, true
					}
					continue
				}
				if rawKeysEqual(a, b) {
					return b, true
				}
			}
		}
		return nil, false
	}
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		k := decodeKey(m.rawKey)
		if seen[k] {
			return m.rawKey, true
		}
		seen[k] = true
	}
	return nil, false
}

// write appends the JSON of n to dst.
func (n *node) write(dst []byte) []byte {
	if n.list != nil && n.list.modified {
		dst = append(dst, '[')
		for i := range n.list.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = n.list.items[i].write(dst)
		}
		return append(dst, ']')
	}
	if n.obj == nil || !n.obj.modified {
		return append(dst, n.raw...)
	}
	if n.obj.t != nil {
		return n.writePartial(dst)
	}
	dst = append(dst, '{')
	first := true
	for i := range n.obj.members {
		m := &n.obj.members[i]
		if m.deleted {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, m.rawKey...)
		dst = append(dst, ':')
		dst = m.val.write(dst)
	}
	return append(dst, '}')
}

// writePartial appends the JSON of n, a changed partial object: the members
// it holds as they are now, and between them what it does not hold, copied
// from raw. With no member added or deleted, every byte but the keys and
// values that changed is kept; else writeRebuilt writes it.
func (n *node) writePartial(dst []byte) []byte {
	o, raw := n.obj, n.raw
	if len(o.members) == 1 && len(o.spans) == 1 {
		// One member held (the key a rule renamed, mostly): the common
		// case, without the loops.
		if m, sp := &o.members[0], o.spans[0]; !m.deleted && keptValue(m, sp, raw) {
			dst = append(dst, raw[:sp.start]...)
			dst = append(dst, m.rawKey...)
			return append(dst, raw[sp.keyEnd:]...)
		}
	}
	if len(o.members) != len(o.spans) {
		return n.writeRebuilt(dst)
	}
	for i := range o.members {
		if o.members[i].deleted {
			return n.writeRebuilt(dst)
		}
	}
	pos := 0
	for i := range o.members {
		m, sp := &o.members[i], o.spans[i]
		dst = append(dst, raw[pos:sp.start]...)
		dst = append(dst, m.rawKey...)
		if keptValue(m, sp, raw) {
			pos = sp.keyEnd // the colon and the value as they were, copied with what follows
			continue
		}
		dst = append(dst, ':')
		dst = m.val.write(dst)
		pos = sp.end
	}
	return append(dst, raw[pos:]...)
}

// keptValue reports whether the value of m, a member held at sp in raw,
// is still the one raw holds there: then the colon and the value are
// copied from raw with what follows them.
func keptValue(m *member, sp span, raw []byte) bool {
	v := m.val.raw
	return !m.val.changed() && len(v) > 0 && len(v) <= sp.end-sp.keyEnd && &v[0] == &raw[sp.end-len(v)]
}

// writeRebuilt is writePartial for an object that gained or lost members:
// the members it holds, and the runs of members it does not hold copied
// from raw (trimmed of the space and commas around them), joined by
// commas.
func (n *node) writeRebuilt(dst []byte) []byte {
	o, raw := n.obj, n.raw
	dst = append(dst, '{')
	first := true
	sep := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	gap := func(b []byte) {
		if b = trimGap(b); len(b) > 0 {
			sep()
			dst = append(dst, b...)
		}
	}
	pos := 1 // after '{'
	for i := range o.members {
		m := &o.members[i]
		if i < len(o.spans) {
			gap(raw[pos:o.spans[i].start])
			pos = o.spans[i].end
		} else if i == len(o.spans) {
			gap(raw[pos : len(raw)-1])
			pos = len(raw) - 1
		}
		if m.deleted {
			continue
		}
		sep()
		dst = append(dst, m.rawKey...)
		dst = append(dst, ':')
		dst = m.val.write(dst)
	}
	gap(raw[pos : len(raw)-1])
	return append(dst, '}')
}

// trimGap trims b, bytes of an object between two members, of the space
// and commas at its ends.
func trimGap(b []byte) []byte {
	for len(b) > 0 && (b[0] == ',' || jsonscan.IsSpace(b[0])) {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ',' || jsonscan.IsSpace(b[len(b)-1])) {
		b = b[:len(b)-1]
	}
	return b
}
