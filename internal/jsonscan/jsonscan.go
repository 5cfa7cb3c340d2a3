// Package jsonscan is hubspoke's one validating JSON scanner. It never
// builds values: it reports offsets into the input, so values can be handed
// on as sub-slices of it without a copy.
//
// It accepts exactly the JSON that the Kubernetes API server's decoder
// (sigs.k8s.io/json, through k8s.io/apimachinery/pkg/util/json) takes
// without error and without changing it:
//
//   - RFC 8259 grammar, as encoding/json.Valid;
//   - nesting up to MaxDepth levels, counted from the outermost value the
//     caller scans (a ConversionReview's objects start at EnvelopeDepth);
//   - numbers that decode to an int64 or a finite float64: the API server
//     fails to decode a literal such as 1e400 or a 400-digit integer;
//   - strings of valid UTF-8. The API server's decoder would replace an
//     invalid byte with U+FFFD, silently changing the data, so the scanner
//     refuses it; a \u escape of a lone surrogate is valid JSON and
//     accepted (it decodes to U+FFFD, as the API server decodes it).
//
// A fuzz test holds the scanner to that oracle. Strings are scanned with
// the stop bits of the document (package internal/stopbits): a string's
// end, escape or non-ASCII byte is found with a shift and a count of
// trailing zeros, so each byte of a document is looked at once.
package jsonscan

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hubspoke/hubspoke/internal/stopbits"
)

// MaxDepth is the deepest nesting the API server's JSON decoder accepts
// (encoding/json's limit, which sigs.k8s.io/json keeps), counted over the
// whole document it decodes.
const MaxDepth = 10000

// EnvelopeDepth is the nesting of a ConversionReview around each object it
// carries: the review, its request or response, and the objects array. An
// object in a review can therefore nest MaxDepth-EnvelopeDepth levels.
const EnvelopeDepth = 3

// SyntaxError is a document the scanner refuses, at a byte offset.
type SyntaxError struct {
	Off int
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Off, e.Msg)
}

// Errorf returns a *SyntaxError at off.
func Errorf(off int, format string, args ...any) error {
	return &SyntaxError{Off: off, Msg: fmt.Sprintf(format, args...)}
}

func errDepth(off int) error {
	return Errorf(off, "exceeded maximum nesting depth %d (the API server's limit, counting the %d levels of a ConversionReview around an object)", MaxDepth, EnvelopeDepth)
}

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

// SkipSpace returns the offset of the first non-space byte at or after i.
func SkipSpace(d []byte, i int) int {
	for i < len(d) && IsSpace(d[i]) {
		i++
	}
	return i
}

// Kind names the kind of the JSON value starting with c, for messages.
func Kind(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return "a number"
	}
}

// Scanner scans one document. Its zero value is ready for Reset; it keeps
// its memory across documents. A Scanner is not safe for concurrent use.
type Scanner struct {
	// Data is the document; Marks are its stop bits.
	Data  []byte
	Marks []uint64
	// Stack is scratch memory: the kinds of the containers Value holds open
	// more than 64 levels up (the innermost 64 are bits in a register). A caller
	// that makes Scanners on the fly can keep it between them.
	Stack []byte
	// room is how many more containers Value may open (MaxDepth less the
	// depth it was called at): kept here, not in a register, which the
	// loop needs more.
	room int
}

// MaxPooledMarks is the most stop-bit memory (in words) a Scanner kept in
// a pool should hold on to: the marks of a 1 MiB document. Pools drop
// scanners with more; Trim does it.
const MaxPooledMarks = 1 << 14

// Reset starts a scan of d, computing its stop bits.
func (s *Scanner) Reset(d []byte) {
	s.Data = d
	s.Marks = stopbits.Append(s.Marks[:0], d)
}

// Trim drops the document and any memory above the pooling bounds.
func (s *Scanner) Trim() { s.TrimTo(MaxPooledMarks) }

// TrimTo is Trim keeping up to maxMarks words of stop bits (the marks of
// a document of 64*maxMarks bytes), for a pool that bounds its documents
// otherwise.
func (s *Scanner) TrimTo(maxMarks int) {
	s.Data = nil
	if cap(s.Marks) > maxMarks {
		s.Marks = nil
	}
	if cap(s.Stack) > 1<<10 {
		s.Stack = nil
	}
}

// Literal checks the literal lit (true, false or null) at d[i] and returns
// the offset after it.
func Literal(d []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(d) {
			return i + k, Errorf(i+k, "unexpected end of JSON input in literal %s", lit)
		}
		if d[i+k] != lit[k] {
			return i + k, Errorf(i+k, "invalid character %q in literal %s", d[i+k], lit)
		}
	}
	return i + len(lit), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Number checks the number at d[i] and returns the offset after it: its
// grammar, and that the API server can decode it (see CheckNumber).
func Number(d []byte, i int) (int, error) {
	start := i
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return i, Errorf(i, "unexpected end of JSON input in number")
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return i, Errorf(i, "invalid character %q in number", d[i])
	}
	exp := false
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return i, Errorf(i, "number %s has no digits after the decimal point", d[start:i])
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		exp = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return i, Errorf(i, "number %s has no digits in its exponent", d[start:i])
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	// Without an exponent, fewer than 300 characters are always a finite
	// float64 (the largest is about 1.8e308): only longer or exponent
	// literals need a closer look.
	if exp || i-start >= 300 {
		if err := CheckNumber(d[start:i]); err != nil {
			return start, &SyntaxError{Off: start, Msg: err.Error()}
		}
	}
	return i, nil
}

// PlainInt returns the offset after the positive integer at d[i] when it
// is one of fewer than 300 digits not followed by a fraction or an
// exponent (the common number, valid as it is), and 0 otherwise: then
// Number checks it. It is small enough to be inlined into scanning loops.
func PlainInt(d []byte, i int) int {
	if i >= len(d) || d[i] < '1' || d[i] > '9' {
		return 0
	}
	j := i + 1
	for j < len(d) && isDigit(d[j]) {
		j++
	}
	if j < len(d) && (d[j] == '.' || d[j]|0x20 == 'e') || j-i >= 300 {
		return 0
	}
	return j
}

// CheckNumber reports whether the API server can decode lit, a number
// literal of valid JSON grammar. Its decoder (sigs.k8s.io/json with
// PreserveInts) takes an integer literal as an int64 when it fits and
// every number else as a float64, with strconv.ParseFloat: a literal whose
// magnitude overflows float64 (1e400, a 400-digit integer) fails the whole
// response. A literal that underflows (1e-400) decodes to 0 and is
// accepted, as by the API server.
func CheckNumber(lit []byte) error {
	if _, err := strconv.ParseFloat(string(lit), 64); err != nil {
		shown := string(lit)
		if len(shown) > 40 {
			shown = fmt.Sprintf("%s...%s (%d characters)", shown[:20], shown[len(shown)-10:], len(lit))
		}
		return fmt.Errorf("number %s is out of range: the API server decodes numbers as int64 or float64 and fails on it", shown)
	}
	return nil
}

// String checks the string whose opening quote is at Data[i] and returns
// the offset after its closing quote and whether it holds escapes.
func (s *Scanner) String(i int) (end int, escaped bool, err error) {
	d, marks := s.Data, s.Marks
	i++
	tried := -1 // the word escapeRun last read, or failed to
words:
	for {
		w := i >> 6
		if w >= len(marks) {
			return len(d), escaped, Errorf(len(d), "unexpected end of JSON input in string")
		}
		// The marked bytes of word w from i on, one by one: the closing
		// quote, and the escapes of one byte (\" \\ \n ...) stepped over
		// without leaving the word; anything else is checked by mark.
		m := marks[w] >> (i & 63) << (i & 63)
		for m != 0 {
			j := w<<6 + bits.TrailingZeros64(m)
			c := d[j]
			if c == '"' {
				return j + 1, escaped, nil
			}
			if c == '\\' && w != tried {
				// Escapes come in numbers (JSON inside a string, as
				// in kubectl's last-applied-configuration): the rest
				// of the word is read at once when it can be.
				tried = w
				if next, closed, ok := escapeRun(d, w, m); ok {
					if closed {
						return next, true, nil
					}
					i, escaped = next, true
					continue words
				}
			}
			if c == '\\' && j+1 < len(d) && oneByteEscape[d[j+1]] {
				// The backslash's mark cleared, and that of the byte it
				// escapes when marked (\" or \\): a clear of the lowest
				// bit, not a shift by the offset, so that the next escape
				// does not wait on this one's.
				escaped = true
				m &= m - 1
				if e := d[j+1]; e == '"' || e == '\\' {
					if j&63 == 63 { // the escaped byte opens the next word
						i = j + 2
						continue words
					}
					m &= m - 1
				}
				continue
			}
			if i, err = s.mark(j); err != nil {
				return i, escaped, err
			}
			escaped = escaped || c == '\\'
			continue words
		}
		i = (w + 1) << 6
	}
}

// escapeRun reads the rest of a string's bytes in word w of the marks
// (d[w*64:w*64+64]), from the backslash at the lowest bit of m, the word's
// marks from there on. It reads the word's quotes and backslashes at once
// (stopbits.QuotesBackslashes) and finds the escaped bytes among them by
// arithmetic on the bits, so that an escape costs a few instructions, not
// a look at each of its marked bytes. It returns the offset after the
// string's closing quote when the string ends in the word (closed), else
// the offset at which the next word is read. ok is false, and nothing is
// read, when the word holds before the string's end anything but one-byte
// escapes (\" \\ \/ \b \f \n \r \t): a \u escape, an invalid escape, a
// control character, a non-ASCII byte; or when it is the document's last,
// partial, word. String's loop then reads it mark by mark, and says what
// is wrong.
func escapeRun(d []byte, w int, m uint64) (next int, closed, ok bool) {
	base := w << 6
	if base+64 > len(d) || noEscapeRun {
		return 0, false, false
	}
	q, b := stopbits.QuotesBackslashes((*[64]byte)(d[base : base+64]))
	q, b = q&m, b&m
	e, carry := escapedBits(b)
	ends := q &^ e           // quotes not escaped: the first closes the string
	before := ends&-ends - 1 // the bits below it; all of them when there is none
	if m&^(b|e)&before != 0 {
		return 0, false, false // a control character or non-ASCII byte
	}
	esc := e & before
	if esc&m&^(q|b) != 0 {
		return 0, false, false // an escaped control character or non-ASCII byte
	}
	for x := esc &^ m; x != 0; x &= x - 1 {
		if !oneByteEscape[d[base+bits.TrailingZeros64(x)]] {
			return 0, false, false // \u, or not an escape
		}
	}
	if ends != 0 {
		return base + bits.TrailingZeros64(ends) + 1, true, true
	}
	if carry {
		// The word's last byte is a backslash that escapes the next
		// word's first byte.
		if base+64 >= len(d) || !oneByteEscape[d[base+64]] {
			return 0, false, false
		}
		return base + 65, false, true
	}
	return base + 64, false, true
}

// noEscapeRun makes String read every escape mark by mark: the tests'
// reference for escapeRun.
var noEscapeRun = false

// escapedBits returns the bits of the bytes escaped by the backslashes b
// of a word (those after an odd run of backslashes), and whether the byte
// after the word is escaped by a run at its end. Every run starts inside
// the word. This is simdjson's branch-free method: a run of backslashes
// starting on an even bit escapes the bytes at odd bits after it, and
// adding the run to its start flips the parity of runs starting on odd
// bits.
func escapedBits(b uint64) (escaped uint64, carry bool) {
	const even = 0x5555555555555555
	follows := b << 1
	oddStarts := b &^ even &^ follows
	evenRuns, c := bits.Add64(oddStarts, b, 0)
	return (even ^ evenRuns<<1) & follows, c != 0
}

// mark checks the marked byte d[i] inside a string that is neither its
// closing quote nor a one-byte escape, and returns the offset after what
// it starts: a \u escape, or a multi-byte UTF-8 sequence; anything else is
// an error.
func (s *Scanner) mark(i int) (int, error) {
	d := s.Data
	switch c := d[i]; {
	case c == '\\':
		i++
		if i >= len(d) {
			return i, Errorf(i, "unexpected end of JSON input in string escape")
		}
		if c := d[i]; c != 'u' {
			return i, Errorf(i, "invalid escape character %q in string", c)
		}
		i++
		for k := 0; k < 4; k++ {
			if i >= len(d) {
				return i, Errorf(i, "unexpected end of JSON input in \\u escape")
			}
			if !isHex(d[i]) {
				return i, Errorf(i, "invalid character %q in \\u escape", d[i])
			}
			i++
		}
		return i, nil
	case c < 0x20:
		return i, Errorf(i, "invalid control character %#02x in string", c)
	default: // the first byte of a multi-byte UTF-8 sequence
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, Errorf(i, "invalid UTF-8 in string (the API server would replace it with U+FFFD)")
		}
		return i + size, nil
	}
}

// oneByteEscape[c] is true for the c of the escapes \c that are complete
// in one byte: \" \\ \/ \b \f \n \r \t.
var oneByteEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// Cursor finds the ends of strings that follow each other, as a scanning
// loop meets them. It holds 64 stop bits from an offset on, those of the
// bytes it has passed cleared. In a document whose strings are plain the
// only marked bytes are quotes, two a string: the next string's end is
// then the mark after the next one, found by clearing the lowest mark (the
// opening quote) and counting trailing zeros. That waits on the cursor
// alone, not on the offset the loop has reached (a shift by it, a count,
// an add for every string), so a loop meets its strings as fast as it can
// issue its instructions; it checks that the cursor's next mark is the
// quote it stands on, and reads the marks at the offset (StringEnd) when
// not: at a loop's first string, after anything the cursor did not see,
// and every 64 bytes or so.
//
// A Cursor is a value, returned moved on, so that a loop keeps it in
// registers. The zero Cursor holds no marks: its Next answers 0. Next and
// StringEnd are each small enough to be inlined, not both in one
// function: a loop calls Next, then StringEnd when Next returns 0.
type Cursor struct {
	b int    // the offset of the bit 0 of m
	m uint64 // the marks of the bytes from b on not yet passed
}

// Next returns the offset of the closing quote of the string whose content
// starts at d[i], just after its opening quote, and the cursor past it,
// when the cursor's next mark is that opening quote and the mark after it,
// within the cursor's 64 bytes, is a quote. Otherwise it returns 0 and c.
func (c Cursor) Next(d []byte, i int) (int, Cursor) {
	if m := c.m & (c.m - 1); c.b+bits.TrailingZeros64(c.m) == i-1 && m != 0 {
		if j := c.b + bits.TrailingZeros64(m); d[j] == '"' {
			return j, Cursor{c.b, m & (m - 1)}
		}
	}
	return 0, c
}

// StringEnd returns the offset of the closing quote of the string whose
// content starts at d[i] (just after its opening quote) when its first
// marked byte is that quote, and 0 otherwise (an escape, a control
// character or a non-ASCII byte first, or no marked byte in the 64 bytes
// from i on): the common case. A plain string is valid. It also returns a
// cursor past the closing quote, holding the marks of the 64 bytes from i
// on. marks are d's, as stopbits.Append made them: its zero words past the
// end make the two words read here always there, and no marked byte lies
// past d's end. (d may also be a prefix of the marked document that ends
// with a complete value, as convert's list parser makes: the string is
// then closed within d.)
func StringEnd(d []byte, marks []uint64, i int) (int, Cursor) {
	// The 64 marks from i on, across two words (the second shifted twice
	// so that each shift stays below 64, one instruction).
	w, sh := i>>6, uint(i)&63
	if m := marks[w]>>sh | marks[w+1]<<1<<(63-sh); m != 0 {
		// A marked byte is in d: the marks past its end are zero.
		if j := i + bits.TrailingZeros64(m); d[j] == '"' {
			return j, Cursor{i, m & (m - 1)}
		}
	}
	return 0, Cursor{}
}

// Value checks the value at Data[i] (no leading space) and returns the
// offset just after it. depth is the nesting depth of the value's
// container (0 for a document's top-level value). Composites are checked
// in one loop with an explicit stack of open containers: this is where
// most of the bytes of a real object go.
func (s *Scanner) Value(i, depth int) (int, error) {
	d := s.Data
	if i >= len(d) {
		return i, Errorf(i, "unexpected end of JSON input")
	}
	switch c := d[i]; {
	case c == '{' || c == '[':
	case c == '"':
		end, _, err := s.String(i)
		return end, err
	case c == '-' || isDigit(c):
		return Number(d, i)
	case c == 't':
		return Literal(d, i, "true")
	case c == 'f':
		return Literal(d, i, "false")
	case c == 'n':
		return Literal(d, i, "null")
	default:
		return i, Errorf(i, "invalid character %q looking for beginning of value", c)
	}
	// The loop below reads compact JSON without looking for space: space
	// is skipped only where a byte is not the one expected, so a document
	// without any pays nothing for it.
	//
	// The open containers are a stack of bits in a register (1 for an
	// object, innermost lowest), 64 levels at a time; the levels above
	// are kept in s.Stack, a word of eight bytes for each 64.
	marks := s.Marks
	var mc Cursor
	var kinds uint64 // the innermost 64 open containers
	n := 0           // how many containers are open
	s.Stack = s.Stack[:0]
	var err error
	var slow byte // what slowPath scans: 'k' a key, '"' a string value, else the first byte of a number or literal
	s.room = MaxDepth - depth
open:
	if n >= s.room {
		return i, errDepth(i)
	}
	if n > 0 && n&63 == 0 {
		s.Stack = binary.LittleEndian.AppendUint64(s.Stack, kinds)
	}
	kinds = kinds<<1 | uint64(d[i]>>5&1) // '{' is 0x7b, '[' 0x5b
	n++
	i++
first: // the first member or element, or the end of an empty container
	if i >= len(d) {
		goto eof
	}
	if c := d[i]; kinds&1 != 0 {
		switch {
		case c == '"':
			goto key
		case c == '}':
			i++
			goto pop
		case IsSpace(c):
			i = SkipSpace(d, i)
			goto first
		}
		goto key // the error
	} else {
		switch {
		case c == ']':
			i++
			goto pop
		case IsSpace(c):
			i = SkipSpace(d, i)
			goto first
		}
	}
	goto value
key:
	if d[i] != '"' {
		if IsSpace(d[i]) {
			if i = SkipSpace(d, i); i >= len(d) {
				goto eof
			}
			goto key
		}
		return i, Errorf(i, "invalid character %q looking for beginning of object key string", d[i])
	}
	if j, next := mc.Next(d, i+1); j > 0 {
		i, mc = j+1, next
	} else if j, next := StringEnd(d, marks, i+1); j > 0 {
		i, mc = j+1, next
	} else {
		slow = 'k'
		goto slowPath
	}
	// The colon: right after the key, else (space, or after a key the
	// slow path read) at colon, a block of its own so that the common
	// path keeps its registers as they are.
	if i >= len(d) || d[i] != ':' {
		goto colon
	}
	if i++; i >= len(d) {
		goto eof
	}
value:
	switch c := d[i]; {
	case c == '"':
		if j, next := mc.Next(d, i+1); j > 0 {
			i, mc = j+1, next
			goto closed
		} else if j, next := StringEnd(d, marks, i+1); j > 0 {
			i, mc = j+1, next
			goto closed
		}
		slow = '"'
		goto slowPath
	case c == '{' || c == '[':
		goto open
	case c >= '1' && c <= '9':
		if j := PlainInt(d, i); j > 0 {
			i = j
			break
		}
		slow = '0'
		goto slowPath
	case c == '-' || c == '0' || c == 't' || c == 'f' || c == 'n':
		slow = c
		goto slowPath
	case IsSpace(c):
		if i = SkipSpace(d, i); i >= len(d) {
			goto eof
		}
		goto value
	default:
		return i, Errorf(i, "invalid character %q looking for beginning of value", c)
	}
closed:
	if n == 0 {
		return i, nil
	}
	if i >= len(d) {
		goto eof
	}
	switch d[i] {
	case ',':
		i++
		if i >= len(d) {
			goto eof
		}
		if kinds&1 != 0 {
			goto key
		}
		goto value
	case '}', ']':
		if kinds&1 != uint64(d[i]>>5&1) { // '}' is 0x7d, ']' 0x5d
			break
		}
		i++
		goto pop
	case ' ', '\t', '\n', '\r':
		i = SkipSpace(d, i)
		goto closed
	}
	if kinds&1 != 0 {
		return i, Errorf(i, "invalid character %q after object key:value pair", d[i])
	}
	return i, Errorf(i, "invalid character %q after array element", d[i])
pop:
	kinds >>= 1
	if n--; n > 0 && n&63 == 0 {
		k := len(s.Stack) - 8
		kinds = binary.LittleEndian.Uint64(s.Stack[k:])
		s.Stack = s.Stack[:k]
	}
	goto closed
slowPath:
	// Every call of the loop is made here, from one place, so that the
	// registers it holds are saved only on this path and not on every
	// value (Go's calls keep no register).
	switch slow {
	case 'k', '"':
		i, _, err = s.String(i)
	case 't':
		i, err = Literal(d, i, "true")
	case 'f':
		i, err = Literal(d, i, "false")
	case 'n':
		i, err = Literal(d, i, "null")
	default: // a number
		i, err = Number(d, i)
	}
	if err != nil {
		return i, err
	}
	if slow == 'k' {
		goto colon
	}
	goto closed
colon:
	if i = SkipSpace(d, i); i >= len(d) {
		goto eof
	}
	if d[i] != ':' {
		return i, Errorf(i, "invalid character %q after object key", d[i])
	}
	if i++; i >= len(d) {
		goto eof
	}
	goto value
eof:
	return i, Errorf(i, "unexpected end of JSON input")
}

// Document checks that Data is one JSON value surrounded by optional
// space, its top-level value at depth+1.
func (s *Scanner) Document(depth int) error {
	i := SkipSpace(s.Data, 0)
	end, err := s.Value(i, depth)
	if err != nil {
		return err
	}
	if end = SkipSpace(s.Data, end); end != len(s.Data) {
		return Errorf(end, "unexpected data after the top-level value")
	}
	return nil
}

// Object checks the object whose opening brace is at Data[i] (at nesting
// depth depth) and returns the offset after it. When visit is not nil it
// is called for every member with the decoded key and the offset of the
// value (after any space); it must return the offset just after the value,
// typically from Value or SkipTrusted. Without visit, values are checked
// with Value.
func (s *Scanner) Object(i, depth int, visit func(key []byte, v int) (int, error)) (int, error) {
	d := s.Data
	if depth > MaxDepth {
		return i, errDepth(i)
	}
	i = SkipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(d) {
			return i, Errorf(i, "unexpected end of JSON input in object")
		}
		if d[i] != '"' {
			if IsSpace(d[i]) {
				i = SkipSpace(d, i)
				continue
			}
			return i, Errorf(i, "invalid character %q looking for beginning of object key string", d[i])
		}
		kend, plain := 0, true // plain: no escape, its bytes are its content
		var err error
		// (No cursor: visit reads each value.)
		if j, _ := StringEnd(d, s.Marks, i+1); j > 0 {
			kend = j + 1
		} else {
			var escaped bool
			if kend, escaped, err = s.String(i); err != nil {
				return kend, err
			}
			plain = !escaped
		}
		key := d[i+1 : kend-1]
		// Space is looked for only where a byte is not the one expected
		// (as in Value); visit gets the value's offset after any.
		if i = kend; i < len(d) && d[i] == ':' {
			i++
		} else {
			if i = SkipSpace(d, i); i >= len(d) {
				return i, Errorf(i, "unexpected end of JSON input after object key")
			}
			if d[i] != ':' {
				return i, Errorf(i, "invalid character %q after object key", d[i])
			}
			i++
		}
		i = SkipSpace(d, i)
		if visit != nil {
			if !plain {
				key = Unquote(nil, key)
			}
			i, err = visit(key, i)
		} else {
			i, err = s.Value(i, depth)
		}
		if err != nil {
			return i, err
		}
	next:
		if i >= len(d) {
			return i, Errorf(i, "unexpected end of JSON input in object")
		}
		switch d[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		case ' ', '\t', '\n', '\r':
			i = SkipSpace(d, i)
			goto next
		default:
			return i, Errorf(i, "invalid character %q after object key:value pair", d[i])
		}
	}
}

// Array is Object for arrays: visit gets the element's index and offset.
func (s *Scanner) Array(i, depth int, visit func(n, v int) (int, error)) (int, error) {
	d := s.Data
	if depth > MaxDepth {
		return i, errDepth(i)
	}
	i = SkipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		var err error
		if visit != nil {
			i, err = visit(n, i)
		} else {
			i, err = s.Value(i, depth)
		}
		if err != nil {
			return i, err
		}
	next:
		if i >= len(d) {
			return i, Errorf(i, "unexpected end of JSON input in array")
		}
		switch d[i] {
		case ',':
			i = SkipSpace(d, i+1)
		case ']':
			return i + 1, nil
		case ' ', '\t', '\n', '\r':
			i = SkipSpace(d, i)
			goto next
		default:
			return i, Errorf(i, "invalid character %q after array element", d[i])
		}
	}
}

// StringValue checks the value at Data[i], at nesting depth depth, which
// must be a string for ok to be true, and returns its decoded content (a
// sub-slice of Data when it holds no escapes, never nil when ok) and the
// offset after the value.
func (s *Scanner) StringValue(i, depth int) (str []byte, end int, ok bool, err error) {
	d := s.Data
	if i >= len(d) || d[i] != '"' {
		end, err = s.Value(i, depth)
		return nil, end, false, err
	}
	end, esc, err := s.String(i)
	if err != nil {
		return nil, end, false, err
	}
	str = d[i+1 : end-1 : end-1]
	if esc {
		str = Unquote(nil, str)
	}
	if str == nil {
		str = []byte{}
	}
	return str, end, true, nil
}

// SkipTrusted skips the value at Data[i] without checking it, for bytes
// known to be valid (checked before, or written by a converter that writes
// valid JSON): it only matches brackets and string quotes, which is enough
// to find the end of a valid value, and it keeps the nesting limit (depth
// is the nesting depth of the value's container). For invalid input the
// end it returns may be wrong; it never reads out of bounds.
func (s *Scanner) SkipTrusted(i, depth int) (int, error) {
	d := s.Data
	if i >= len(d) {
		return i, Errorf(i, "unexpected end of JSON input")
	}
	switch d[i] {
	case '"':
		return s.skipStringTrusted(i)
	case '{', '[':
		level := 0
		var mc Cursor
		for i < len(d) {
			switch d[i] {
			case '"':
				if j, next := mc.Next(d, i+1); j > 0 {
					i, mc = j+1, next
					continue
				} else if j, next := StringEnd(d, s.Marks, i+1); j > 0 {
					i, mc = j+1, next
					continue
				}
				end, err := s.skipStringTrusted(i)
				if err != nil {
					return end, err
				}
				i = end
				continue
			case '{', '[':
				level++
				if depth+level > MaxDepth {
					return i, errDepth(i)
				}
			case '}', ']':
				level--
				if level == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return i, Errorf(i, "unexpected end of JSON input")
	default:
		for i < len(d) {
			switch d[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i, nil
			}
			i++
		}
		return i, nil
	}
}

// skipStringTrusted returns the offset after the string starting at
// Data[i]: at the first marked quote that no backslash escapes. A marked
// backslash is stepped over with the byte it escapes (so \" and \\ end
// nothing); any other marked byte is stepped over.
func (s *Scanner) skipStringTrusted(i int) (int, error) {
	d := s.Data
	i++
	for {
		j := stopbits.Next(s.Marks, i)
		if j < 0 {
			return len(d), Errorf(len(d), "unexpected end of JSON input in string")
		}
		switch d[j] {
		case '"':
			return j + 1, nil
		case '\\':
			i = j + 2
		default:
			i = j + 1
		}
	}
}

// Unquote appends to dst the decoded content of a checked JSON string
// (without its quotes). Lone surrogates become U+FFFD, as in encoding/json.
func Unquote(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hex4(s[i+2:]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, rune(hex4(s[i+2:]))); r2 != utf8.RuneError {
						r = r2
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) int {
	n := 0
	for _, c := range b[:4] {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n |= int(c - '0')
		case c >= 'a' && c <= 'f':
			n |= int(c-'a') + 10
		default:
			n |= int(c-'A') + 10
		}
	}
	return n
}
