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
	kinds []byte   // open containers of jsonscan's Value
	marks []uint64 // stop bits of data (internal/stopbits)
	st    *state
	// head, when set, receives the metadata head of the top-level object
	// (apirules.ScanMetadata), read while metadata is validated; meta is
	// the span of the metadata member it was read from (see ConvertAt).
	head *apirules.Head
	meta []byte
}

func (p *parser) fail(msg string) error { return &syntaxError{Msg: msg, Off: p.pos} }

func (p *parser) skipSpace() { p.pos = jsonscan.SkipSpace(p.data, p.pos) }

// reset starts a scan of data, reusing the parser's memory. Its values
// nest inside a ConversionReview's envelope (baseDepth).
func (p *parser) reset(data []byte) {
	p.data, p.pos, p.depth = data, 0, baseDepth
	p.marks = stopbits.Append(p.marks[:0], data)
}

// scanner returns a jsonscan.Scanner of the parser's document, sharing its
// scratch; done hands the scratch back.
func (p *parser) scanner() jsonscan.Scanner {
	return jsonscan.Scanner{Data: p.data, Marks: p.marks, Stack: p.kinds}
}

func (p *parser) done(s *jsonscan.Scanner) { p.kinds = s.Stack }

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
// object, it is expanded (its members recorded, children on t expanded too).
func (p *parser) value(t *trie) (node, error) {
	d := p.data
	start := p.pos
	if t != nil && p.pos < len(d) && d[p.pos] == '{' {
		o, err := p.object(t)
		if err != nil {
			return node{}, err
		}
		return node{raw: d[start:p.pos], obj: o}, nil
	}
	s := p.scanner()
	end, err := s.Value(p.pos, p.depth)
	p.done(&s)
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
func (p *parser) object(t *trie) (*objNode, error) {
	p.depth++
	if p.depth > jsonscan.MaxDepth {
		p.depth--
		s := p.scanner()
		_, err := s.Object(p.pos, p.depth+1, nil) // the depth error, where it is
		return nil, err
	}
	o, err := p.objectBody(t)
	p.depth--
	return o, err
}

func (p *parser) objectBody(t *trie) (*objNode, error) {
	base := len(p.stack)
	d := p.data
	s := p.scanner()
	p.pos++ // '{'
	p.skipSpace()
	mc := jsonscan.NewMarkCache()
	if p.pos < len(d) && d[p.pos] == '}' {
		p.pos++
		return p.st.newObj(nil), nil
	}
	for {
		if p.pos >= len(d) {
			return nil, p.fail("unexpected end of JSON input")
		}
		if d[p.pos] != '"' {
			return nil, p.fail(fmt.Sprintf("invalid character %q looking for beginning of object key string", d[p.pos]))
		}
		ks := p.pos
		end, plain, err := s.Key(&mc, ks) // plain: no escape before the closing quote
		p.pos = end
		if err != nil {
			return nil, err
		}
		rawKey := d[ks:p.pos]
		p.skipSpace()
		if p.pos >= len(d) {
			return nil, p.fail("unexpected end of JSON input")
		}
		if d[p.pos] != ':' {
			return nil, p.fail(fmt.Sprintf("invalid character %q after object key", d[p.pos]))
		}
		p.pos++
		p.skipSpace()
		ct := t.child(rawKey)
		if ct != nil {
			// A key a rule looks at must be unique, or the rule would
			// read one value and copy the other through unchanged.
			for i := base; i < len(p.stack); i++ {
				if rawKeysEqual(p.stack[i].rawKey, rawKey) {
					return nil, &syntaxError{Msg: fmt.Sprintf("duplicate key %s", rawKey), Off: ks}
				}
			}
		}
		var v node
		if p.head != nil && ct == nil && p.depth == baseDepth+1 && keyIs(rawKey, "metadata") {
			v, err = p.metadata()
		} else {
			v, err = p.value(ct)
		}
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, member{rawKey: rawKey, val: v, plain: plain})
		p.skipSpace()
		if p.pos >= len(d) {
			return nil, p.fail("unexpected end of JSON input")
		}
		switch d[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			o := p.st.newObj(p.stack[base:])
			p.stack = p.stack[:base]
			return o, nil
		default:
			return nil, p.fail(fmt.Sprintf("invalid character %q after object key:value pair", d[p.pos]))
		}
	}
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
