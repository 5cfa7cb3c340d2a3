package convert

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"

	"github.com/hubspoke/hubspoke/internal/stopbits"
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

// oneByteEscape[c] is true for the c of the escapes \c that are complete
// in one byte: \" \\ \/ \b \f \n \r \t.
var oneByteEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

// parser scans one document. It is reused across conversions (see state).
type parser struct {
	data  []byte
	pos   int
	depth int
	stack []member // members of objects being scanned, moved to the arena when done
	kinds []byte   // open containers of skipComposite
	marks []uint64 // stop bits of data, for scanString
	st    *state
}

func (p *parser) fail(msg string) error { return &syntaxError{msg: msg, off: p.pos} }

func (p *parser) skipSpace() {
	for p.pos < len(p.data) && isSpace(p.data[p.pos]) {
		p.pos++
	}
}

// reset starts a scan of data, reusing the parser's memory.
func (p *parser) reset(data []byte) {
	p.data, p.pos, p.depth = data, 0, 0
	p.marks = stopbits.Append(p.marks[:0], data)
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
	i, ok := scanLiteral(p.data, p.pos, s)
	p.pos = i
	switch {
	case ok:
		return nil
	case i >= len(p.data):
		return p.fail("unexpected end of JSON input")
	default:
		return p.fail(fmt.Sprintf("invalid character %q in literal %s", p.data[i], s))
	}
}

// str scans a string starting at the opening quote.
func (p *parser) str() error {
	i, msg := scanString(p.data, p.marks, p.pos)
	p.pos = i
	if msg != "" {
		return p.fail(msg)
	}
	return nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (p *parser) number() error {
	i, ok := scanNumber(p.data, p.pos)
	p.pos = i
	if !ok {
		return p.fail("invalid character in numeric literal")
	}
	return nil
}

// skipComposite validates the object or array at p.pos without recording
// anything. It is one loop over a local index with an explicit stack of open
// containers: this is where most of the bytes of a real object go.
func (p *parser) skipComposite() error {
	d := p.data
	i := p.pos
	marks := p.marks
	mc := markCache{w: -1}
	stack := p.kinds[:0]
	var (
		ok  bool
		msg string
	)
open:
	if p.depth+len(stack) >= maxDepth {
		p.pos = i
		return p.fail(errTooDeep.Error())
	}
	stack = append(stack, d[i])
	p.kinds = stack // keep the grown stack for the next document
	i++
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	if i >= len(d) {
		goto eof
	}
	if stack[len(stack)-1] == '{' {
		if d[i] == '}' {
			i++
			stack = stack[:len(stack)-1]
			goto closed
		}
		goto key
	}
	if d[i] == ']' {
		i++
		stack = stack[:len(stack)-1]
		goto closed
	}
	goto value
key:
	if d[i] != '"' {
		p.pos = i
		return p.fail(fmt.Sprintf("invalid character %q looking for beginning of object key string", d[i]))
	}
	if j := mc.stringEnd(d, marks, i); j > 0 {
		i = j
		goto keyDone
	}
	if i, msg = scanString(d, marks, i); msg != "" {
		p.pos = i
		return p.fail(msg)
	}
keyDone:
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	if i >= len(d) {
		goto eof
	}
	if d[i] != ':' {
		p.pos = i
		return p.fail(fmt.Sprintf("invalid character %q after object key", d[i]))
	}
	i++
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	if i >= len(d) {
		goto eof
	}
value:
	switch c := d[i]; {
	case c == '{' || c == '[':
		goto open
	case c == '"':
		if j := mc.stringEnd(d, marks, i); j > 0 {
			i = j
			goto closed
		}
		if i, msg = scanString(d, marks, i); msg != "" {
			p.pos = i
			return p.fail(msg)
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if i, ok = scanNumber(d, i); !ok {
			p.pos = i
			return p.fail("invalid character in numeric literal")
		}
	case c == 't':
		if i, ok = scanLiteral(d, i, "true"); !ok {
			p.pos = i
			return p.fail("invalid literal")
		}
	case c == 'f':
		if i, ok = scanLiteral(d, i, "false"); !ok {
			p.pos = i
			return p.fail("invalid literal")
		}
	case c == 'n':
		if i, ok = scanLiteral(d, i, "null"); !ok {
			p.pos = i
			return p.fail("invalid literal")
		}
	default:
		p.pos = i
		return p.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
closed:
	if len(stack) == 0 {
		p.pos = i
		return nil
	}
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	if i >= len(d) {
		goto eof
	}
	switch d[i] {
	case ',':
		i++
		for i < len(d) && isSpace(d[i]) {
			i++
		}
		if i >= len(d) {
			goto eof
		}
		if stack[len(stack)-1] == '{' {
			goto key
		}
		goto value
	case '}', ']':
		want := byte('{')
		if d[i] == ']' {
			want = '['
		}
		if stack[len(stack)-1] != want {
			break
		}
		i++
		stack = stack[:len(stack)-1]
		goto closed
	}
	p.pos = i
	if stack[len(stack)-1] == '{' {
		return p.fail(fmt.Sprintf("invalid character %q after object key:value pair", d[i]))
	}
	return p.fail(fmt.Sprintf("invalid character %q after array element", d[i]))
eof:
	p.pos = i
	return p.fail("unexpected end of JSON input")
}

// markCache holds the last word of marks that stringEnd loaded, so that
// strings found in the same 64 bytes need no load whose address depends
// on where the previous string ended. Its zero value holds word 0 as 0:
// start with w -1.
type markCache struct {
	w int
	m uint64
}

// stringEnd returns the index after the closing quote of the string opened
// at d[i] when its first marked byte is that quote, and 0 otherwise (an
// escape or control character first, or the quote in a later word of
// marks): the common case, small enough to be inlined into the loops that
// scan many strings.
func (c *markCache) stringEnd(d []byte, marks []uint64, i int) int {
	i++
	w := i >> 6
	if w != c.w {
		if w >= len(marks) {
			return 0
		}
		c.w, c.m = w, marks[w]
	}
	if m := c.m >> (i & 63); m != 0 {
		if j := i + bits.TrailingZeros64(m); j < len(d) && d[j] == '"' {
			return j + 1
		}
	}
	return 0
}

// scanString scans the string whose opening quote is at d[i] and returns
// the index after its closing quote, or the offending index and a message.
// marks are the stop bits of d (see internal/stopbits): the string's end is
// the first marked byte after the quote, unless that is a backslash, whose
// escape is checked and stepped over, or a control character, an error.
func scanString(d []byte, marks []uint64, i int) (int, string) {
	i++
	cw, cm := -1, uint64(0) // the word of marks last loaded
	for {
		w := i >> 6
		if w != cw {
			if w >= len(marks) {
				return len(d), "unexpected end of JSON input in string"
			}
			cw, cm = w, marks[w]
		}
		m := cm >> (i & 63)
		if m == 0 {
			i = (w + 1) << 6
			continue
		}
		i += bits.TrailingZeros64(m)
		switch d[i] {
		case '"':
			return i + 1, ""
		case '\\':
			i++
			if i >= len(d) {
				return i, "unexpected end of JSON input in string escape"
			}
			switch c := d[i]; {
			case oneByteEscape[c]:
				i++
			case c == 'u':
				i++
				for k := 0; k < 4; k++ {
					if i >= len(d) {
						return i, "unexpected end of JSON input in \\u escape"
					}
					if !isHex(d[i]) {
						return i, "invalid character in \\u hexadecimal character escape"
					}
					i++
				}
			default:
				return i, "invalid character in string escape code"
			}
		default:
			if d[i] < 0x20 {
				return i, "invalid control character in string"
			}
			i++ // a non-ASCII byte
		}
	}
}

// scanNumber scans the number at d[i].
func scanNumber(d []byte, i int) (int, bool) {
	if d[i] == '-' {
		i++
	}
	if i >= len(d) {
		return i, false
	}
	switch {
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
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
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	return i, true
}

func scanLiteral(d []byte, i int, lit string) (int, bool) {
	for k := 0; k < len(lit); k++ {
		if i >= len(d) || d[i] != lit[k] {
			return i, false
		}
		i++
	}
	return i, true
}

// object scans an object at p.pos, recording every member; members whose key
// is on t and whose value is an object are expanded recursively.
func (p *parser) object(t *trie) (*objNode, error) {
	p.depth++
	if p.depth > maxDepth {
		return nil, p.fail(errTooDeep.Error())
	}
	o, err := p.objectBody(t)
	p.depth--
	return o, err
}

func (p *parser) objectBody(t *trie) (*objNode, error) {
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
		plain := false
		mc := markCache{w: -1}
		if j := mc.stringEnd(p.data, p.marks, ks); j > 0 {
			p.pos, plain = j, true // no escape came before the closing quote
		} else if err := p.str(); err != nil {
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
		p.stack = append(p.stack, member{rawKey: rawKey, val: v, plain: plain})
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
