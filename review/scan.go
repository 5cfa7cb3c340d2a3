package review

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hubspoke/hubspoke/internal/stopbits"
)

// This file holds a small validating JSON scanner. It never builds values:
// it reports offsets into the input, so objects can be handed on as
// sub-slices of the request body without a copy. It accepts exactly what
// encoding/json accepts (RFC 8259, nesting up to maxDepth), except that it
// also rejects invalid UTF-8 inside strings, which encoding/json would
// silently replace.

// maxDepth is the deepest nesting accepted, the same limit as encoding/json.
const maxDepth = 10000

// syntaxError is invalid JSON at an offset of the input.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg)
}

func errAt(off int, format string, args ...any) error {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

// plain[c] is true for bytes that stand for themselves inside a string:
// printable ASCII other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// hasLess sets the high bit of each byte of v below n (n <= 128; exact
// when no byte of v has its high bit set, which the caller also tests).
func hasLess(v uint64, n byte) uint64 { return (v - lo8*uint64(n)) &^ v }

// hasByte sets the high bit of each byte of v equal to c (and possibly of
// bytes above one that is, which only makes the caller fall back to the
// byte loop).
func hasByte(v uint64, c byte) uint64 {
	x := v ^ (lo8 * uint64(c))
	return (x - lo8) &^ x
}

func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// valueKind names the kind of the JSON value starting with c, for messages.
func valueKind(c byte) string {
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

// skipValue validates the JSON value starting at d[i] (no leading space)
// and returns the offset just after it. depth is the nesting depth of the
// value's container.
func skipValue(d []byte, i, depth int) (int, error) {
	if i >= len(d) {
		return i, errAt(i, "unexpected end of input")
	}
	switch c := d[i]; {
	case c == '{':
		return eachMember(d, i, depth+1, nil)
	case c == '[':
		return eachElement(d, i, depth+1, nil)
	case c == '"':
		end, _, err := scanString(d, i)
		return end, err
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(d, i)
	case c == 't':
		return scanLiteral(d, i, "true")
	case c == 'f':
		return scanLiteral(d, i, "false")
	case c == 'n':
		return scanLiteral(d, i, "null")
	default:
		return i, errAt(i, "invalid character %q looking for a value", c)
	}
}

func scanLiteral(d []byte, i int, lit string) (int, error) {
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		for j := 0; j < len(lit); j++ {
			if i+j >= len(d) {
				return i + j, errAt(i+j, "unexpected end of input in literal %s", lit)
			}
			if d[i+j] != lit[j] {
				return i + j, errAt(i+j, "invalid character %q in literal %s", d[i+j], lit)
			}
		}
	}
	return i + len(lit), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber validates the number at d[i] and returns the offset after it.
func scanNumber(d []byte, i int) (int, error) {
	start := i
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return i, errAt(i, "unexpected end of input in number")
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	default:
		return i, errAt(i, "invalid character %q in number", d[i])
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			return i, errAt(i, "number %s has no digits after the decimal point", d[start:i])
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			return i, errAt(i, "number %s has no digits in its exponent", d[start:i])
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i, nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanString validates the string starting with the quote at d[i] and
// returns the offset after its closing quote and whether it holds escapes.
func scanString(d []byte, i int) (end int, escaped bool, err error) {
	i++
	for {
		// Eight bytes at a time while none is special: a quote, a
		// backslash, a control character or a non-ASCII byte.
		for i+8 <= len(d) {
			v := binary.LittleEndian.Uint64(d[i:])
			if (hasLess(v, 0x20)|hasByte(v, '"')|hasByte(v, '\\')|v)&hi8 != 0 {
				break
			}
			i += 8
		}
		for i < len(d) && plain[d[i]] {
			i++
		}
		if i >= len(d) {
			return i, escaped, errAt(i, "unexpected end of input in string")
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				return i + 1, escaped, errAt(i+1, "unexpected end of input in string escape")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(d) {
						return j, escaped, errAt(j, "unexpected end of input in string escape")
					}
					if !isHex(d[j]) {
						return j, escaped, errAt(j, "invalid character %q in \\u escape", d[j])
					}
				}
				i += 6
			default:
				return i + 1, escaped, errAt(i+1, "invalid escape character %q in string", d[i+1])
			}
		case c < 0x20:
			return i, escaped, errAt(i, "invalid control character %#02x in string", c)
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				return i, escaped, errAt(i, "invalid UTF-8 in string")
			}
			i += size
		}
	}
}

// eachMember validates the object starting with the brace at d[i] and
// returns the offset after it. When visit is not nil it is called for every
// member with the decoded key and the offset of the value (after any
// space); it must return the offset just after the value, typically from
// skipValue. Without visit, values are skipped.
func eachMember(d []byte, i, depth int, visit func(key []byte, v int) (int, error)) (int, error) {
	if depth > maxDepth {
		return i, errAt(i, "exceeded maximum nesting depth %d", maxDepth)
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(d) {
			return i, errAt(i, "unexpected end of input in object")
		}
		if d[i] != '"' {
			return i, errAt(i, "invalid character %q looking for an object key", d[i])
		}
		kend, kesc, err := scanString(d, i)
		if err != nil {
			return kend, err
		}
		key := d[i+1 : kend-1]
		i = skipSpace(d, kend)
		if i >= len(d) {
			return i, errAt(i, "unexpected end of input after object key")
		}
		if d[i] != ':' {
			return i, errAt(i, "invalid character %q after object key", d[i])
		}
		i = skipSpace(d, i+1)
		if visit != nil {
			if kesc {
				key = unquote(nil, key)
			}
			i, err = visit(key, i)
		} else {
			i, err = skipValue(d, i, depth)
		}
		if err != nil {
			return i, err
		}
		i = skipSpace(d, i)
		if i >= len(d) {
			return i, errAt(i, "unexpected end of input in object")
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, errAt(i, "invalid character %q after object value", d[i])
		}
	}
}

// eachElement is eachMember for arrays: visit gets the element's index and
// offset.
func eachElement(d []byte, i, depth int, visit func(n, v int) (int, error)) (int, error) {
	if depth > maxDepth {
		return i, errAt(i, "exceeded maximum nesting depth %d", maxDepth)
	}
	i = skipSpace(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		var err error
		if visit != nil {
			i, err = visit(n, i)
		} else {
			i, err = skipValue(d, i, depth)
		}
		if err != nil {
			return i, err
		}
		i = skipSpace(d, i)
		if i >= len(d) {
			return i, errAt(i, "unexpected end of input in array")
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, errAt(i, "invalid character %q after array element", d[i])
		}
	}
}

// stringValue scans the value at d[i], which must be a string for ok to be
// true, and returns its decoded content (a sub-slice of d when it holds no
// escapes) and the offset after the value.
func stringValue(d []byte, i, depth int) (s []byte, end int, ok bool, err error) {
	if i >= len(d) || d[i] != '"' {
		end, err = skipValue(d, i, depth)
		return nil, end, false, err
	}
	end, esc, err := scanString(d, i)
	if err != nil {
		return nil, end, false, err
	}
	s = d[i+1 : end-1]
	if esc {
		s = unquote(nil, s)
	}
	return s, end, true, nil
}

// unquote appends to dst the decoded content of a validated JSON string
// (without its quotes). Lone surrogates become U+FFFD, as in encoding/json.
func unquote(dst, s []byte) []byte {
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

// appendQuoted appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendQuoted(dst []byte, s string) []byte {
	const hexdigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// skipTrusted skips the value at d[i] without validating it, for output of
// a converter known to write valid JSON, or input validated later: it only
// matches brackets and string quotes, which is enough to find the end of a
// valid value, and it keeps skipValue's nesting limit (depth is the
// nesting depth of the value's container). For invalid input the end it
// returns may be wrong; it never reads out of bounds. marks are the stop
// bits of d (internal/stopbits), which find each string's end.
func skipTrusted(d []byte, marks []uint64, i, depth int) (int, error) {
	if i >= len(d) {
		return i, errAt(i, "unexpected end of input")
	}
	switch d[i] {
	case '"':
		return skipStringTrusted(d, marks, i)
	case '{', '[':
		level := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				end, err := skipStringTrusted(d, marks, i)
				if err != nil {
					return end, err
				}
				i = end
				continue
			case '{', '[':
				level++
				if depth+level > maxDepth {
					return i, errAt(i, "exceeded maximum nesting depth %d", maxDepth)
				}
			case '}', ']':
				level--
				if level == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return i, errAt(i, "unexpected end of input")
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

// skipStringTrusted returns the offset after the string starting at d[i]:
// at the first marked quote that no backslash escapes. A marked backslash
// is stepped over with the byte it escapes (so \" and \\ end nothing); a
// control character, invalid in a string, is stepped over too.
func skipStringTrusted(d []byte, marks []uint64, i int) (int, error) {
	i++
	for {
		j := stopbits.Next(marks, i)
		if j < 0 {
			return len(d), errAt(len(d), "unexpected end of input in string")
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
