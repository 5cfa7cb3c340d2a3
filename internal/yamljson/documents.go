package yamljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// Position is a place in a file: line and column, from 1.
type Position struct{ Line, Column int }

// Error is a file that is not YAML or JSON, at the place where it stops
// being so.
type Error struct {
	File string
	Position
	// In names the document the error is in ("document 2", "value 2"),
	// "" when it is in none.
	In  string
	Msg string
}

func (e *Error) Error() string {
	if e.In != "" {
		return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Column, e.In, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Document is one document of a file: a YAML document, or a JSON value
// (each item of a JSON array at the top of a file is a document of its
// own, as kubectl reads such a file).
type Document struct {
	// File is the name of the file; Number the document's number in it,
	// from 1; Item its index in a JSON array at the top of the file, -1
	// when it is not in one; Line the line of the file where it starts.
	File         string
	Number, Item int
	Line         int
	// JSON is the document as JSON: a YAML document converted by ToJSON
	// (number literals and key order kept), a JSON value as written.
	JSON []byte

	yaml  []byte // the YAML document's text; nil for JSON
	data  []byte // the file (JSON), for positions
	off   int    // JSON: the offset of JSON in data
	nodes *yamlv3.Node
}

// String names the document for messages: "in.yaml: document 2 (line 9)",
// "in.json: value 1", "in.json: value 1[3]".
func (d *Document) String() string {
	switch {
	case d.yaml != nil:
		return fmt.Sprintf("%s: document %d (line %d)", d.File, d.Number, d.Line)
	case d.Item >= 0:
		return fmt.Sprintf("%s: value %d[%d]", d.File, d.Number, d.Item)
	}
	return fmt.Sprintf("%s: value %d", d.File, d.Number)
}

// Label is String without the file name: "document 2", "value 1[3]".
func (d *Document) Label() string {
	switch {
	case d.yaml != nil:
		return fmt.Sprintf("document %d", d.Number)
	case d.Item >= 0:
		return fmt.Sprintf("value %d[%d]", d.Number, d.Item)
	}
	return fmt.Sprintf("value %d", d.Number)
}

// Read splits data, the content of the file name, into its documents and
// converts the YAML ones to JSON (ToJSON, as kubectl reads YAML). A file
// whose first byte other than space is '{' or '[' is JSON values;
// anything else YAML documents separated by "---" lines. Empty documents
// (only comments, or null) are left out. A file that looks like JSON but
// whose first value is not JSON, and that is YAML (a flow mapping:
// {apiVersion: v1, ...}), is read as YAML. Input that is neither is an *Error at its line and column (for
// JSON, the JSON error's); so is invalid UTF-8.
func Read(name string, data []byte) ([]Document, error) {
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		return nil, &Error{File: name, Position: positionAt(data, off), Msg: fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", data[off])}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		docs, err := readJSON(name, data)
		if e, ok := err.(*Error); ok && e.In == "value 1" && !jsonGrammar(data) {
			// Flow-style YAML ({apiVersion: v1, ...}) looks like JSON;
			// as kubectl does, a stream whose first value is not JSON is
			// read as YAML.
			if ydocs, yerr := readYAML(name, data); yerr == nil {
				return ydocs, nil
			}
		}
		return docs, err
	}
	return readYAML(name, data)
}

// readYAML reads the YAML documents of a file.
func readYAML(name string, data []byte) ([]Document, error) {
	var docs []Document
	for n, chunk := range splitYAML(data) {
		if len(bytes.TrimSpace(stripComments(chunk.data))) == 0 {
			continue
		}
		j, err := ToJSON(chunk.data)
		if err != nil {
			e := &Error{File: name, In: fmt.Sprintf("document %d", n+1), Position: Position{Line: chunk.line}}
			if l := Locate(chunk.data, err); l.Line > 0 {
				e.Position = Position{chunk.line + l.Line - 1, l.Column}
				e.Msg = fmt.Sprintf("not valid YAML: %s (%s)", l.Message, l.ReaderMessage)
			} else {
				e.Msg = "not valid YAML: " + l.ReaderMessage
				if l.ReaderLine > 0 {
					e.Line = chunk.line + l.ReaderLine - 1
				}
				e.Column = 1
			}
			return nil, e
		}
		if string(j) == "null" {
			continue
		}
		docs = append(docs, Document{File: name, Number: n + 1, Item: -1, Line: chunk.line, JSON: j, yaml: chunk.data})
	}
	return docs, nil
}

// readJSON reads the JSON values of a file, each checked as the API
// server's decoder checks JSON (package jsonscan).
func readJSON(name string, data []byte) ([]Document, error) {
	var s jsonscan.Scanner
	s.Reset(data)
	var docs []Document
	for n, i := 1, jsonscan.SkipSpace(data, 0); i < len(data); n, i = n+1, jsonscan.SkipSpace(data, i) {
		end, err := s.Value(i, 0)
		if err != nil {
			off := len(data)
			if se, ok := err.(*jsonscan.SyntaxError); ok {
				off, err = se.Off, fmt.Errorf("%s", se.Msg)
			}
			return nil, &Error{File: name, In: fmt.Sprintf("value %d", n), Position: positionAt(data, off), Msg: "not valid JSON: " + err.Error()}
		}
		if data[i] == '[' {
			_, err := s.Array(i, 1, func(k, v int) (int, error) {
				end, err := s.Value(v, 1)
				if err == nil {
					docs = append(docs, Document{File: name, Number: n, Item: k, Line: positionAt(data, v).Line, JSON: data[v:end], data: data, off: v})
				}
				return end, err
			})
			if err != nil {
				return nil, err // not reached: the array was checked
			}
		} else {
			docs = append(docs, Document{File: name, Number: n, Item: -1, Line: positionAt(data, i).Line, JSON: data[i:end], data: data, off: i})
		}
		i = end
	}
	return docs, nil
}

// OffsetPosition returns where byte off of d.JSON is in the file: exactly
// for JSON, and for YAML the place of the value that holds it.
func (d *Document) OffsetPosition(off int) Position {
	if d.yaml == nil {
		return positionAt(d.data, d.off+off)
	}
	p, _ := d.Position(PointerAt(d.JSON, off))
	return p
}

// Position returns where the value at the JSON pointer ptr of d.JSON is in
// the file: for a member of a YAML mapping, its key's place. When ptr is
// not in the document, the place of its nearest ancestor that is, and
// false.
func (d *Document) Position(ptr string) (Position, bool) {
	exact := true
	for {
		if p, ok := d.position(ptr); ok {
			return p, exact
		}
		exact = false
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return Position{Line: d.Line, Column: 1}, false
		}
		ptr = ptr[:i]
	}
}

func (d *Document) position(ptr string) (Position, bool) {
	if d.yaml == nil {
		off, ok := pointerOffset(d.JSON, ptr)
		if !ok {
			return Position{}, false
		}
		return positionAt(d.data, d.off+off), true
	}
	var found Position
	ok := false
	d.walkYAML(func(p string, pos Position) bool {
		if p == ptr {
			found, ok = pos, true
			return false
		}
		return true
	})
	return found, ok
}

// Lines returns the line of every value of the document, by JSON pointer
// (for a member of a YAML mapping, its key's line).
func (d *Document) Lines() map[string]int {
	out := map[string]int{}
	if d.yaml == nil {
		walkJSON(d.JSON, func(ptr string, off int) {
			out[ptr] = positionAt(d.data, d.off+off).Line
		})
		return out
	}
	d.walkYAML(func(ptr string, pos Position) bool {
		if _, ok := out[ptr]; !ok {
			out[ptr] = pos.Line
		}
		return true
	})
	return out
}

// walkYAML calls visit with the pointer and place of every node of the
// YAML document, until visit returns false. Lines are the file's.
func (d *Document) walkYAML(visit func(ptr string, pos Position) bool) {
	if d.nodes == nil {
		var n yamlv3.Node
		if err := yamlv3.Unmarshal(d.yaml, &n); err != nil {
			return // kubectl's reader took it, YAML 1.2's did not: no places
		}
		d.nodes = &n
	}
	at := func(n *yamlv3.Node) Position { return Position{d.Line + n.Line - 1, n.Column} }
	var walk func(n *yamlv3.Node, ptr string, depth int) bool
	walk = func(n *yamlv3.Node, ptr string, depth int) bool {
		if depth > maxDepth {
			return false
		}
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				if !walk(c, ptr, depth+1) {
					return false
				}
			}
		case yamlv3.MappingNode:
			if !visit(ptr, at(n)) {
				return false
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := ptr + "/" + escapeToken(k.Value)
				if !visit(p, at(k)) || !walk(v, p, depth+1) {
					return false
				}
			}
		case yamlv3.SequenceNode:
			if !visit(ptr, at(n)) {
				return false
			}
			for i, c := range n.Content {
				p := ptr + "/" + strconv.Itoa(i)
				if !visit(p, at(c)) || !walk(c, p, depth+1) {
					return false
				}
			}
		case yamlv3.AliasNode:
			if n.Alias != nil {
				return walk(n.Alias, ptr, depth+1)
			}
		default:
			return visit(ptr, at(n))
		}
		return true
	}
	walk(d.nodes, "", 0)
}

// escapeToken escapes a JSON pointer token (RFC 6901).
func escapeToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// walkJSON calls visit with the pointer and offset of every value of data,
// valid JSON.
func walkJSON(data []byte, visit func(ptr string, off int)) {
	var s jsonscan.Scanner
	s.Reset(data)
	var walk func(ptr string, v, depth int) (int, error)
	walk = func(ptr string, v, depth int) (int, error) {
		visit(ptr, v)
		switch data[v] {
		case '{':
			return s.Object(v, depth+1, func(key []byte, m int) (int, error) {
				return walk(ptr+"/"+escapeToken(string(key)), m, depth+1)
			})
		case '[':
			return s.Array(v, depth+1, func(n, m int) (int, error) {
				return walk(ptr+"/"+strconv.Itoa(n), m, depth+1)
			})
		}
		return s.Value(v, depth)
	}
	if i := jsonscan.SkipSpace(data, 0); i < len(data) {
		_, _ = walk("", i, 0)
	}
}

// PointerAt returns the JSON pointer of the innermost value of data (JSON)
// that holds byte off.
func PointerAt(data []byte, off int) string {
	var s jsonscan.Scanner
	s.Reset(data)
	best := ""
	var walk func(ptr string, v, depth int) (int, error)
	walk = func(ptr string, v, depth int) (int, error) {
		var end int
		var err error
		switch data[v] {
		case '{':
			end, err = s.Object(v, depth+1, func(key []byte, m int) (int, error) {
				return walk(ptr+"/"+escapeToken(string(key)), m, depth+1)
			})
		case '[':
			end, err = s.Array(v, depth+1, func(n, m int) (int, error) {
				return walk(ptr+"/"+strconv.Itoa(n), m, depth+1)
			})
		default:
			end, err = s.Value(v, depth)
		}
		if v <= off && (off < end || err != nil) && len(ptr) >= len(best) {
			best = ptr
		}
		return end, err
	}
	if i := jsonscan.SkipSpace(data, 0); i < len(data) {
		_, _ = walk("", i, 0)
	}
	return best
}

// pointerOffset returns the offset in data (JSON) of the value at ptr.
func pointerOffset(data []byte, ptr string) (int, bool) {
	off, ok := -1, false
	walkJSON(data, func(p string, o int) {
		if !ok && p == ptr {
			off, ok = o, true
		}
	})
	return off, ok
}

// positionAt returns the line and column (in characters) of byte off of
// data.
func positionAt(data []byte, off int) Position {
	off = max(0, min(off, len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return Position{Line: line, Column: 1 + utf8.RuneCount(data[start:off])}
}

// invalidUTF8 returns the offset of the first byte of data that is not
// valid UTF-8.
func invalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

type yamlChunk struct {
	line int // first line of the document
	data []byte
}

// splitYAML splits a YAML stream at "---" lines, remembering where each
// document starts so errors can name the line.
func splitYAML(data []byte) []yamlChunk {
	var chunks []yamlChunk
	cur := yamlChunk{line: 1}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n, l := range lines {
		t := bytes.TrimRight(l, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			chunks = append(chunks, cur)
			cur = yamlChunk{line: n + 2}
			continue
		}
		cur.data = append(cur.data, l...)
	}
	return append(chunks, cur)
}

// stripComments drops YAML comment lines, to spot documents that hold
// nothing.
func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] == '#' || string(t) == "---" {
			continue
		}
		out = append(out, l...)
		out = append(out, '\n')
	}
	return out
}

// jsonGrammar reports whether data is a stream of JSON values by the
// grammar alone (whatever the API server's decoder makes of their numbers
// or nesting).
func jsonGrammar(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return true
		} else if err != nil {
			return false
		}
	}
}
