package convert

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// The scanner validates JSON exactly as encoding/json.Valid does (a fuzz test
// holds the two together) and, in the same pass, records the members of the
// objects that lie on a rule path (the trie). Everything else is kept as the
// byte span it was read from, so untouched values are never decoded and cost
// no allocation.

const maxDepth = 10000 // encoding/json's nesting limit

// syntaxError reports invalid JSON with the byte offset.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg) }

var errTooDeep = errors.New("exceeded max depth")

// strSafe[c] is true for bytes that need no attention inside a string.
var strSafe = func() (t [256]bool) {
	for i := 0x20; i < 256; i++ {
		t[i] = true
	}
	t['"'] = false
	t['\\'] = false
	return t
}()

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero flags (in the high bit) the bytes of x that are zero; the lowest
// flag is exact, higher ones may be false positives.
func hasZero(x uint64) uint64 { return (x - lsb) & ^x & msb }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parser scans one document. It is reused across conversions (see state).
type parser struct {
	data  []byte
	pos   int
	depth int
	stack []member // members of objects being scanned, moved to the arena when done
	st    *state
}

func (p *parser) fail(msg string) error { return &syntaxError{msg: msg, off: p.pos} }

func (p *parser) skipSpace() {
	for p.pos < len(p.data) && isSpace(p.data[p.pos]) {
		p.pos++
	}
}

// parseDocument validates data as one JSON value surrounded by optional
// whitespace and returns its node, with objects on the trie expanded.
func (p *parser) parseDocument(data []byte, t *trie) (node, error) {
	p.data, p.pos, p.depth = data, 0, 0
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
	if p.pos >= len(p.data) {
		return node{}, p.fail("unexpected end of JSON input")
	}
	start := p.pos
	switch c := p.data[p.pos]; c {
	case '{':
		if t != nil {
			o, err := p.object(t)
			if err != nil {
				return node{}, err
			}
			return node{raw: p.data[start:p.pos], obj: o}, nil
		}
		if err := p.skipComposite(); err != nil {
			return node{}, err
		}
	case '[':
		if err := p.skipComposite(); err != nil {
			return node{}, err
		}
	case '"':
		if err := p.str(); err != nil {
			return node{}, err
		}
	case 't':
		if err := p.lit("true"); err != nil {
			return node{}, err
		}
	case 'f':
		if err := p.lit("false"); err != nil {
			return node{}, err
		}
	case 'n':
		if err := p.lit("null"); err != nil {
			return node{}, err
		}
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			if err := p.number(); err != nil {
				return node{}, err
			}
		} else {
			return node{}, p.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
		}
	}
	return node{raw: p.data[start:p.pos]}, nil
}

func (p *parser) lit(s string) error {
	for i := 0; i < len(s); i++ {
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of JSON input")
		}
		if p.data[p.pos] != s[i] {
			return p.fail(fmt.Sprintf("invalid character %q in literal %s", p.data[p.pos], s))
		}
		p.pos++
	}
	return nil
}

// str scans a string starting at the opening quote.
func (p *parser) str() error {
	d := p.data
	i := p.pos + 1
	for {
		// Eight bytes at a time until a quote, a backslash or a control
		// character; the lowest flagged byte is exact.
		for i+8 <= len(d) {
			x := binary.LittleEndian.Uint64(d[i:])
			m := ((x - lsb*0x20) & ^x & msb) | hasZero(x^(lsb*'"')) | hasZero(x^(lsb*'\\'))
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(d) && strSafe[d[i]] {
			i++
		}
		if i >= len(d) {
			p.pos = i
			return p.fail("unexpected end of JSON input in string")
		}
		switch c := d[i]; {
		case c == '"':
			p.pos = i + 1
			return nil
		case c == '\\':
			i++
			if i >= len(d) {
				p.pos = i
				return p.fail("unexpected end of JSON input in string escape")
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(d) {
						p.pos = i
						return p.fail("unexpected end of JSON input in \\u escape")
					}
					if !isHex(d[i]) {
						p.pos = i
						return p.fail("invalid character in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				p.pos = i
				return p.fail("invalid character in string escape code")
			}
		default: // control character
			p.pos = i
			return p.fail("invalid control character in string")
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (p *parser) number() error {
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	if i >= len(d) {
		p.pos = i
		return p.fail("unexpected end of JSON input in number")
	}
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.fail("invalid character in numeric literal")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return p.fail("invalid character after decimal point in numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return p.fail("invalid character in exponent of numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return nil
}

// skipComposite validates an object or array without recording anything.
func (p *parser) skipComposite() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail(errTooDeep.Error())
	}
	defer func() { p.depth-- }()
	if p.data[p.pos] == '{' {
		p.pos++
		p.skipSpace()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return nil
		}
		for {
			if p.pos >= len(p.data) {
				return p.fail("unexpected end of JSON input")
			}
			if p.data[p.pos] != '"' {
				return p.fail(fmt.Sprintf("invalid character %q looking for beginning of object key string", p.data[p.pos]))
			}
			if err := p.str(); err != nil {
				return err
			}
			p.skipSpace()
			if p.pos >= len(p.data) {
				return p.fail("unexpected end of JSON input")
			}
			if p.data[p.pos] != ':' {
				return p.fail(fmt.Sprintf("invalid character %q after object key", p.data[p.pos]))
			}
			p.pos++
			p.skipSpace()
			if err := p.skipValue(); err != nil {
				return err
			}
			p.skipSpace()
			if p.pos >= len(p.data) {
				return p.fail("unexpected end of JSON input")
			}
			switch p.data[p.pos] {
			case ',':
				p.pos++
				p.skipSpace()
			case '}':
				p.pos++
				return nil
			default:
				return p.fail(fmt.Sprintf("invalid character %q after object key:value pair", p.data[p.pos]))
			}
		}
	}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return nil
	}
	for {
		if err := p.skipValue(); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of JSON input")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return nil
		default:
			return p.fail(fmt.Sprintf("invalid character %q after array element", p.data[p.pos]))
		}
	}
}

func (p *parser) skipValue() error {
	if p.pos >= len(p.data) {
		return p.fail("unexpected end of JSON input")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		return p.skipComposite()
	case c == '"':
		return p.str()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return p.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
}

// object scans an object at p.pos, recording every member; members whose key
// is on t and whose value is an object are expanded recursively.
func (p *parser) object(t *trie) (*objNode, error) {
	p.depth++
	if p.depth > maxDepth {
		return nil, p.fail(errTooDeep.Error())
	}
	defer func() { p.depth-- }()
	base := len(p.stack)
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return p.st.newObj(nil), nil
	}
	for {
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input")
		}
		if p.data[p.pos] != '"' {
			return nil, p.fail(fmt.Sprintf("invalid character %q looking for beginning of object key string", p.data[p.pos]))
		}
		ks := p.pos
		if err := p.str(); err != nil {
			return nil, err
		}
		rawKey := p.data[ks:p.pos]
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input")
		}
		if p.data[p.pos] != ':' {
			return nil, p.fail(fmt.Sprintf("invalid character %q after object key", p.data[p.pos]))
		}
		p.pos++
		p.skipSpace()
		ct := t.child(rawKey)
		if ct != nil {
			// A key a rule looks at must be unique, or the rule would
			// read one value and copy the other through unchanged.
			for i := base; i < len(p.stack); i++ {
				if rawKeysEqual(p.stack[i].rawKey, rawKey) {
					return nil, &syntaxError{msg: fmt.Sprintf("duplicate key %s", rawKey), off: ks}
				}
			}
		}
		v, err := p.value(ct)
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, member{rawKey: rawKey, val: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			o := p.st.newObj(p.stack[base:])
			p.stack = p.stack[:base]
			return o, nil
		default:
			return nil, p.fail(fmt.Sprintf("invalid character %q after object key:value pair", p.data[p.pos]))
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
