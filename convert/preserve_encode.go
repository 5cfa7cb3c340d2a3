package convert

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The preserved annotation is written on every conversion that keeps
// something; encoding/json's reflection, map sorting and the string
// quoting of the result took most of such a conversion's time and
// allocations. appendPreserved writes exactly what json.Marshal writes for
// the annotation's data (TestPreservedEncodingIsJSON holds it), into the
// conversion's scratch memory.

// appendPreserved appends the JSON of data, as json.Marshal writes it
// (maps with sorted keys, raw values compacted with HTML characters
// escaped, strings HTML-escaped), and reports false for a raw value it
// cannot write so (invalid JSON: the caller falls back to json.Marshal).
func appendPreserved(dst []byte, data map[string]*stash) ([]byte, bool) {
	ok := true
	dst = append(dst, '{')
	for i, v := range sortedKeys(data) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, v)
		dst = append(dst, ':')
		dst, ok = appendStash(dst, data[v])
		if !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

func appendStash(dst []byte, s *stash) ([]byte, bool) {
	ok := true
	dst = append(dst, '{')
	sep := false
	member := func(name string) {
		if sep {
			dst = append(dst, ',')
		}
		sep = true
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	if len(s.Fields) > 0 {
		member("fields")
		dst = append(dst, '{')
		for i, k := range sortedKeys(s.Fields) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, ok = appendRaw(dst, s.Fields[k]); !ok {
				return dst, false
			}
		}
		dst = append(dst, '}')
	}
	if len(s.Exact) > 0 {
		member("exact")
		dst = append(dst, '{')
		for i, k := range sortedKeys(s.Exact) {
			if i > 0 {
				dst = append(dst, ',')
			}
			e := s.Exact[k]
			dst = appendJSONString(dst, k)
			dst = append(dst, `:{"value":`...)
			if dst, ok = appendRaw(dst, e.Value); !ok {
				return dst, false
			}
			if len(e.As) > 0 {
				dst = append(dst, `,"as":`...)
				if dst, ok = appendRaw(dst, e.As); !ok {
					return dst, false
				}
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	if len(s.Order) > 0 {
		member("order")
		dst = append(dst, '{')
		for i, k := range sortedKeys(s.Order) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if s.Order[k] == nil {
				dst = append(dst, "null"...)
				continue
			}
			dst = append(dst, '[')
			for j, x := range s.Order[k] {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, x)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	if len(s.Presence) > 0 {
		member("presence")
		dst = append(dst, '{')
		for i, k := range sortedKeys(s.Presence) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			if s.Presence[k] {
				dst = append(dst, ":true"...)
			} else {
				dst = append(dst, ":false"...)
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), true
}

// appendRaw appends a raw JSON value as json.Marshal writes a
// json.RawMessage: compacted, with <, >, & and U+2028, U+2029 escaped.
// It writes a value that needs neither as it is.
func appendRaw(dst, raw []byte) ([]byte, bool) {
	if len(raw) == 0 {
		return append(dst, "null"...), true // as json.Marshal writes a nil RawMessage
	}
	plain := true
	for _, c := range raw {
		if c <= ' ' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return append(dst, raw...), true
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, b.Bytes()...)
	var h bytes.Buffer
	json.HTMLEscape(&h, dst[start:])
	return append(dst[:start], h.Bytes()...), true
}

// appendJSONString appends s as json.Marshal writes a string (HTML-safe):
// ", \ and control characters escaped, <, > and & as \u003c and so on,
// U+2028 and U+2029 escaped, and invalid UTF-8 as \ufffd.
func appendJSONString[S string | []byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plainByte(b) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		var r rune
		var size int
		switch x := any(s).(type) {
		case string:
			r, size = utf8.DecodeRuneInString(x[i:])
		case []byte:
			r, size = utf8.DecodeRune(x[i:])
		}
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
