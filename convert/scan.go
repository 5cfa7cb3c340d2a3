package convert

import (
	"bytes"
	"fmt"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
	"github.com/hubspoke/hubspoke/internal/stopbits"
)

// The scanner (package internal/jsonscan, shared with review and apirules)
// validates JSON as the API server decodes it (a fuzz test holds it to that
// oracle) and, in the same pass, records the members of the objects that
// lie on a rule path (the trie). Everything else is kept as the byte span
// it was read from, so untouched values are never decoded and cost no
// allocation.

// baseDepth is the nesting around an object as the API server counts it:
// a ConversionReview's envelope. An object nests at most
// jsonscan.MaxDepth-baseDepth levels, so that the answer decodes.
const baseDepth = jsonscan.EnvelopeDepth

type syntaxError = jsonscan.SyntaxError

// parser scans one document. It is reused across conversions (see state).
type parser struct {
	data  []byte
	pos   int
	depth int
	stack []member // members of objects being scanned, moved to the arena when done
	items []node   // items of lists being scanned, moved to the arena when done
	spans []span   // spans of the members on stack of partial objects
	kinds []byte   // open containers of jsonscan's Value
	marks []uint64 // stop bits of data (internal/stopbits)
	st    *state
	// fused holds the renames this scan may do on lists (see fusedList);
	// fusedDone has bit k set when it did fused[k], fusedChanged when
	// that renamed a key.
	fused                   []fusedRename
	fusedDone, fusedChanged uint64
	// head, when set, receives the metadata head of the top-level object
	// (apirules.ScanMetadata), read while metadata is validated; meta is
	// the span of the metadata member it was read from (see ConvertAt).
	head *apirules.Head
	meta []byte
}

func (p *parser) fail(msg string) error { return &syntaxError{Msg: msg, Off: p.pos} }

// failAt is fail at offset i.
func (p *parser) failAt(i int, msg string) error {
	p.pos = i
	return p.fail(msg)
}

func (p *parser) skipSpace() { p.pos = jsonscan.SkipSpace(p.data, p.pos) }

// reset starts a scan of data, reusing the parser's memory. Its values
// nest inside a ConversionReview's envelope (baseDepth).
func (p *parser) reset(data []byte) {
	p.data, p.pos, p.depth = data, 0, baseDepth
	p.fused, p.fusedDone, p.fusedChanged = nil, 0, 0
	p.marks = stopbits.Append(p.marks[:0], data)
}

// scanner returns a jsonscan.Scanner of the parser's document, sharing its
// scratch; done hands the scratch back.
func (p *parser) scanner() jsonscan.Scanner {
	return jsonscan.Scanner{Data: p.data, Marks: p.marks, Stack: p.kinds}
}

func (p *parser) done(s *jsonscan.Scanner) { p.kinds = s.Stack }

// valueEnd validates the value at p.data[i], in a container at depth
// (jsonscan's Value, with the parser's scratch), and returns the offset
// after it.
func (p *parser) valueEnd(i, depth int) (int, error) {
	s := p.scanner()
	end, err := s.Value(i, depth)
	p.done(&s)
	return end, err
}

// parseDocument validates the data the parser was reset to as one JSON
// value surrounded by optional whitespace and returns its node, with objects
// on the trie expanded.
func (p *parser) parseDocument(t *trie) (node, error) {
	p.skipSpace()
	n, err := p.value(t)
	if err != nil {
		return node{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return node{}, p.fail("unexpected data after top-level value")
	}
	return n, nil
}

// value scans one value at p.pos. When t is non-nil and the value is an
// object, it is expanded (its members recorded, children on t expanded too);
// a list is expanded when t has a trie for its items.
func (p *parser) value(t *trie) (node, error) {
	d := p.data
	start := p.pos
	if t != nil && p.pos < len(d) {
		switch {
		case d[p.pos] == '{':
			o, err := p.object(t)
			if err != nil {
				return node{}, err
			}
			return node{raw: d[start:p.pos], obj: o}, nil
		case d[p.pos] == '[' && t.items != nil:
			if p.fused != nil {
				if k := p.fusedFor(t); k >= 0 {
					if raw, changed, ok := p.fusedList(&p.fused[k]); ok {
						p.fusedDone |= 1 << k
						if changed {
							p.fusedChanged |= 1 << k
						}
						return node{raw: raw}, nil
					}
				}
			}
			l, err := p.array(t.items)
			if err != nil {
				return node{}, err
			}
			return node{raw: d[start:p.pos], list: l}, nil
		}
	}
	end, err := p.valueEnd(p.pos, p.depth)
	p.pos = end
	if err != nil {
		return node{}, err
	}
	return node{raw: d[start:end]}, nil
}

// metadata validates the top-level object's metadata value at p.pos, as
// value does, reading its head into p.head in the same pass.
func (p *parser) metadata() (node, error) {
	start := p.pos
	s := p.scanner()
	end, err := apirules.ScanMetadata(&s, start, p.depth, p.head, false)
	p.done(&s)
	p.pos = end
	if err != nil {
		return node{}, err
	}
	p.meta = p.data[start:end]
	return node{raw: p.meta}, nil
}

// object scans an object at p.pos, recording every member; members whose key
// is on t and whose value is an object are expanded recursively.
func (p *parser) object(t *trie) (*objNode, error) { return p.objectOf(t, false) }

// objectOf scans an object at p.pos; partial, it records only the members
// on t (see objNode).
func (p *parser) objectOf(t *trie, partial bool) (*objNode, error) {
	p.depth++
	if p.depth > jsonscan.MaxDepth {
		p.depth--
		s := p.scanner()
		_, err := s.Object(p.pos, p.depth+1, nil) // the depth error, where it is
		return nil, err
	}
	o, err := p.objectBody(t, partial)
	p.depth--
	return o, err
}

func (p *parser) objectBody(t *trie, partial bool) (*objNode, error) {
	base, sbase, others := len(p.stack), len(p.spans), 0
	d, marks := p.data, p.marks
	// The scanner for the values not scanned here (s.Data set on first
	// use): most objects of a document, list items above all, need none.
	var s jsonscan.Scanner
	start := p.pos
	// i is the position while scanning: p.pos is set from it before
	// anything that reads it (errors, value).
	i := jsonscan.SkipSpace(d, start+1)
	if i < len(d) && d[i] == '}' {
		p.pos = i + 1
		if partial {
			return p.st.newPartial(t, nil, nil, 0), nil
		}
		return p.st.newObj(nil), nil
	}
	var mc jsonscan.Cursor
	var err error
	for {
		if i >= len(d) {
			return nil, p.failAt(i, "unexpected end of JSON input")
		}
		if d[i] != '"' {
			if jsonscan.IsSpace(d[i]) {
				i = jsonscan.SkipSpace(d, i)
				continue
			}
			return nil, p.failAt(i, fmt.Sprintf("invalid character %q looking for beginning of object key string", d[i]))
		}
		// The key and the value are kept as offsets, and made slices
		// only where a member is held: most members of a partial item
		// are only checked.
		ks := i
		plain := false // no escape, control or non-ASCII byte: equal only as bytes
		if j, next := mc.Next(d, i+1); j > 0 {
			i, plain, mc = j+1, true, next
		} else if j, next := jsonscan.StringEnd(d, marks, i+1); j > 0 {
			i, plain, mc = j+1, true, next
		} else if i, err = p.stringAt(&s, i); err != nil {
			return nil, err
		}
		ke := i
		// Space is looked for only where a byte is not the one expected
		// (as in jsonscan.Value): compact JSON pays nothing for it.
		if i < len(d) && d[i] == ':' {
			i++
		} else {
			if i = jsonscan.SkipSpace(d, i); i >= len(d) {
				return nil, p.failAt(i, "unexpected end of JSON input")
			}
			if d[i] != ':' {
				return nil, p.failAt(i, fmt.Sprintf("invalid character %q after object key", d[i]))
			}
			i++
		}
		if i < len(d) && d[i] <= ' ' {
			i = jsonscan.SkipSpace(d, i)
		}
		ct := t.values
		if !plain {
			ct = t.child(d[ks:ke])
		} else if i := t.byLen[(ke-ks)&63]; i != 0 {
			ct = t.plainChild(d[ks:ke], i)
		}
		if ct != nil && t.values == nil {
			// A key a rule looks at must be unique, or the rule would
			// read one value and copy the other through unchanged.
			if rawKey := d[ks:ke]; len(p.stack) > base && holdsKey(p.stack[base:], rawKey, plain) {
				return nil, &syntaxError{Msg: fmt.Sprintf("duplicate key %s", rawKey), Off: ks}
			}
		}
		// The value: a string or any value off the trie is checked here,
		// with the object's scanner and stop bits (most members of an
		// object are such values); what the trie expands, by value (v).
		var v node
		vs := i
		switch {
		case p.head != nil && ct == nil && p.depth == baseDepth+1 && keyIs(d[ks:ke], "metadata"):
			// The document's metadata: its head read in the same pass.
			p.pos = i
			if v, err = p.metadata(); err != nil {
				return nil, err
			}
			i = p.pos
		case i < len(d) && d[i] == '"':
			if j, next := mc.Next(d, i+1); j > 0 {
				i, mc = j+1, next
			} else if j, next := jsonscan.StringEnd(d, marks, i+1); j > 0 {
				i, mc = j+1, next
			} else if i, err = p.stringAt(&s, i); err != nil {
				return nil, err
			}
		case i < len(d) && (d[i] == '-' || d[i] >= '0' && d[i] <= '9'):
			if j := jsonscan.PlainInt(d, i); j > 0 {
				i = j
			} else if i, err = jsonscan.Number(d, i); err != nil {
				return nil, err
			}
		case ct == nil || i >= len(d) || d[i] != '{' && (d[i] != '[' || ct.items == nil):
			if s.Data == nil {
				s = p.scanner()
			}
			i, err = s.Value(i, p.depth)
			p.kinds = s.Stack
			if err != nil {
				return nil, err
			}
		default:
			p.pos = i
			if v, err = p.value(ct); err != nil {
				return nil, err
			}
			i = p.pos
		}
		if partial && ct == nil {
			others++ // checked, not held
		} else {
			if v.raw == nil {
				v.raw = d[vs:i]
			}
			m := push(&p.stack) // written in place
			m.rawKey, m.val, m.deleted, m.plain = d[ks:ke], v, false, plain
			if partial {
				p.spans = append(p.spans, span{ks - start, ke - start, i - start})
			}
		}
	next:
		if i >= len(d) {
			return nil, p.failAt(i, "unexpected end of JSON input")
		}
		switch d[i] {
		case ',':
			i++
		case ' ', '\t', '\n', '\r':
			i = jsonscan.SkipSpace(d, i)
			goto next
		case '}':
			p.pos = i + 1
			if t.values != nil {
				// Every value is on the trie: check the keys at once
				// (by a map when there are many), not each against all.
				if k, dup := duplicateKey(p.stack[base:]); dup {
					return nil, &syntaxError{Msg: fmt.Sprintf("duplicate key %s", k), Off: cap(d) - cap(k)}
				}
			}
			var o *objNode
			if partial {
				o = p.st.newPartial(t, p.stack[base:], p.spans[sbase:], others)
				p.spans = p.spans[:sbase]
			} else {
				o = p.st.newObj(p.stack[base:])
			}
			p.stack = p.stack[:base]
			return o, nil
		default:
			return nil, p.failAt(i, fmt.Sprintf("invalid character %q after object key:value pair", d[i]))
		}
	}
}

// stringAt checks the string opened at data[i] with s, made the parser's
// scanner first if it is not yet, and returns the offset after it.
func (p *parser) stringAt(s *jsonscan.Scanner, i int) (int, error) {
	if s.Data == nil {
		*s = p.scanner()
	}
	end, _, err := s.String(i)
	return end, err
}

// itemsInFull makes the scan read every member of the items of lists, as
// it reads objects: the tests' reference for partial items.
var itemsInFull = false

// array scans a list at p.pos, recording its items, each read on t (an
// object expanded, a list with items on t expanded too).
func (p *parser) array(t *trie) (*listNode, error) {
	p.depth++
	if p.depth > jsonscan.MaxDepth {
		s := p.scanner()
		_, err := s.Array(p.pos, p.depth, nil) // the depth error, where it is
		p.depth--
		return nil, err
	}
	l, err := p.arrayBody(t)
	p.depth--
	return l, err
}

func (p *parser) arrayBody(t *trie) (*listNode, error) {
	base := len(p.items)
	d := p.data
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(d) && d[p.pos] == ']' {
		p.pos++
		return p.st.newList(nil), nil
	}
	flat := !itemsInFull && !noFlatItems && t.flat()
	for {
		at := atItem
		if flat {
			at = p.flatItems(t)
		}
		switch at {
		case listClosed:
			l := p.st.newList(p.items[base:])
			p.items = p.items[:base]
			return l, nil
		case atItem:
			var it node
			if p.pos < len(d) && d[p.pos] == '{' {
				// An object item: partially, only what the rules on
				// the items read.
				start := p.pos
				o, err := p.objectOf(t, !itemsInFull)
				if err != nil {
					return nil, err
				}
				it = node{raw: d[start:p.pos], obj: o}
			} else {
				var err error
				if it, err = p.value(t); err != nil {
					return nil, err
				}
			}
			*push(&p.items) = it
		}
		if p.pos < len(d) && d[p.pos] <= ' ' {
			p.skipSpace()
		}
		if p.pos >= len(d) {
			return nil, p.fail("unexpected end of JSON input")
		}
		switch d[p.pos] {
		case ',':
			if p.pos++; p.pos < len(d) && d[p.pos] <= ' ' {
				p.skipSpace()
			}
		case ']':
			p.pos++
			l := p.st.newList(p.items[base:])
			p.items = p.items[:base]
			return l, nil
		default:
			return nil, p.fail(fmt.Sprintf("invalid character %q after array element", d[p.pos]))
		}
	}
}

// item scans one item of a list on t. An object item is refused if it
// holds a key twice: a rule runs on the item as a whole, and a rule
// reading one copy would pass the other through.
func (p *parser) item(t *trie) (node, error) {
	start := p.pos
	it, err := p.value(t)
	if err != nil {
		return node{}, err
	}
	if it.obj != nil {
		if k, dup := duplicateKey(it.obj.members); dup {
			return node{}, &syntaxError{Msg: fmt.Sprintf("duplicate key %s in an object a rule changes", k), Off: start}
		}
	}
	return it, nil
}

// holdsKey reports whether a member of ms has the key rawKey (plain: it
// holds no escape, so a plain key equals it only as bytes).
func holdsKey(ms []member, rawKey []byte, plain bool) bool {
	for k := range ms {
		m := &ms[k]
		if plain && m.plain && string(m.rawKey) != string(rawKey) {
			continue
		}
		if rawKeysEqual(m.rawKey, rawKey) {
			return true
		}
	}
	return false
}

// rawKeysEqual reports whether two quoted keys decode to the same string.
func rawKeysEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if bytes.IndexByte(a, '\\') < 0 && bytes.IndexByte(b, '\\') < 0 {
		return false
	}
	return decodeKey(a) == decodeKey(b)
}
