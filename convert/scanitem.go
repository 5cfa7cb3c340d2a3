package convert

import "github.com/hubspoke/hubspoke/internal/jsonscan"

// The items of a list on a rule's path are most of what the scan reads in
// objects such as a Deployment's containers or a fleet's ships, and rules
// on items mostly name members of the item itself (a rename, an enum). For
// such items (a flat trie) flatItems reads the items the way objectBody
// reads each partially, on the path compact JSON takes, and writes the
// members they hold straight into the conversion's arena: no member is
// copied twice, and the loop keeps few variables. Anything off that path
// (space, an escaped key, a duplicate key, a held value that is an object,
// an error) makes it give up on that item having recorded nothing of it:
// objectBody then reads the item, and says what is wrong.

// noFlatItems makes the scan read every item with objectBody: the tests'
// reference for flatItems.
var noFlatItems = false

// flat reports whether the items of a list on t can be read by
// flatItems: every child of t is a leaf, and t has no trie for the values
// of a map.
func (t *trie) flat() bool {
	if t.values != nil || t.items != nil {
		return false
	}
	for i := range t.children {
		if c := t.children[i].t; len(c.children) > 0 || c.items != nil || c.values != nil {
			return false
		}
	}
	return true
}

// Where flatItems leaves a list.
const (
	atItem     = iota // at an item it did not read: the general loop reads it
	afterItem         // after an item, at what is not a comma and an object
	listClosed        // after the list's ']'
)

// flatItems reads the items of a list on the flat trie t from p.pos, each
// an object read as objectOf(t, true) reads it, for as long as they follow
// each other in compact JSON, and says where it stopped. An item off
// partialMembers' path is left unread, nothing of it recorded.
func (p *parser) flatItems(t *trie) int {
	d, st := p.data, p.st
	if p.depth+1 > jsonscan.MaxDepth {
		return atItem
	}
	for p.pos < len(d) && d[p.pos] == '{' {
		start := p.pos
		st.roomForMembers(len(t.children))
		st.roomForSpans(len(t.children))
		mb, sb := len(st.members), len(st.spans)
		end, others, ok := p.partialMembers(t)
		if !ok {
			clear(st.members[mb:]) // no reference into the document kept past its use
			st.members, st.spans = st.members[:mb], st.spans[:sb]
			return atItem
		}
		o := st.newNode()
		*o = objNode{t: t, others: others}
		if len(st.members) > mb {
			o.members = st.members[mb:len(st.members):len(st.members)]
			o.spans = st.spans[sb:len(st.spans):len(st.spans)]
		}
		it := push(&p.items)
		it.raw, it.obj, it.list = d[start:end], o, nil
		p.pos = end
		if end+1 < len(d) && d[end] == ',' && d[end+1] == '{' {
			p.pos = end + 1
			continue
		}
		if end < len(d) && d[end] == ']' {
			p.pos = end + 1
			return listClosed
		}
		return afterItem
	}
	return atItem
}

// push appends a zero element to *s and returns it, for the caller to
// write in place: an element literal appended is built on the stack, then
// copied with wide loads that stall on the narrow stores just made.
func push[T any](s *[]T) *T {
	n := len(*s)
	if n < cap(*s) {
		*s = (*s)[:n+1]
	} else {
		*s = append(*s, *new(T))
	}
	return &(*s)[n]
}

// partialMembers scans the members of the object at p.pos, appending those
// on t to the arena (which has room for every child of t), and returns the
// offset after the object and the count of members not held; ok is false
// when the object is not on flatItems' path.
func (p *parser) partialMembers(t *trie) (end, others int, ok bool) {
	d, marks, st := p.data, p.marks, p.st
	start := p.pos
	i := start + 1
	if i >= len(d) || d[i] != '"' {
		return 0, 0, false // empty, or space: objectBody
	}
	held := len(st.members)
	var mc jsonscan.Cursor
	for {
		// d[i] is the quote opening a key.
		ks := i
		j, next := mc.Next(d, i+1)
		if j == 0 {
			j, next = jsonscan.StringEnd(d, marks, i+1)
		}
		if j <= 0 || j+1 >= len(d) || d[j+1] != ':' {
			return 0, 0, false
		}
		ke := j + 1
		mc = next
		var ct *trie
		if i := t.byLen[(ke-ks)&63]; i != 0 {
			ct = t.plainChild(d[ks:ke], i)
		}
		i = ke + 1
		vs := i
		if i >= len(d) {
			return 0, 0, false
		}
		switch c := d[i]; {
		case c == '"':
			if j, mc = mc.Next(d, i+1); j == 0 {
				if j, mc = jsonscan.StringEnd(d, marks, i+1); j <= 0 {
					return 0, 0, false
				}
			}
			i = j + 1
		case c == '-' || c >= '0' && c <= '9':
			if j = jsonscan.PlainInt(d, i); j > 0 {
				i = j
			} else if j, err := jsonscan.Number(d, i); err == nil {
				i = j
			} else {
				return 0, 0, false
			}
		case c == '{' && ct != nil:
			return 0, 0, false // a held object is expanded: objectBody
		default:
			// Read here, not for every item: a value other than a string
			// or an integer is rare in the items rules read.
			var err error
			if i, err = p.valueEnd(i, p.depth+1); err != nil {
				return 0, 0, false
			}
		}
		if ct == nil {
			others++
		} else {
			if len(st.members) > held && holdsKey(st.members[held:], d[ks:ke], true) {
				return 0, 0, false // a duplicate key: objectBody's error
			}
			m := push(&st.members) // written in place (about 1% of a Flotilla)
			m.rawKey, m.val.raw, m.val.obj, m.val.list = d[ks:ke], d[vs:i], nil, nil
			m.deleted, m.plain = false, true
			st.spans = append(st.spans, span{ks - start, ke - start, i - start})
		}
		if i >= len(d) {
			return 0, 0, false
		}
		switch d[i] {
		case ',':
			if i+1 >= len(d) || d[i+1] != '"' {
				return 0, 0, false
			}
			i++
		case '}':
			return i + 1, others, true
		default:
			return 0, 0, false
		}
	}
}
