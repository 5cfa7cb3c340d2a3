package yamljson

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// Located is where a YAML document stops being YAML.
type Located struct {
	// Line and Column (from 1) are the offending token's; 0 when goccy's
	// parser finds nothing wrong (the readers differ on what they accept).
	Line, Column int
	// Message is goccy's parser's, at that token.
	Message string
	// ReaderMessage is the message of the reader that refused the document,
	// without its "yaml: " and "line N: " prefixes; ReaderLine is that N
	// (0 when it names none), counted as that reader counts.
	ReaderMessage string
	ReaderLine    int
}

// Locate says where data, a YAML document a YAML reader refused with err,
// stops being YAML. The readers hubspoke uses report the line of another
// token than the offending one: sigs.k8s.io/yaml (kubectl's) often the
// line before it, go.yaml.in/yaml/v3 the line where the enclosing
// collection began, counted from 0 for parser errors (a flow mapping left
// open on line 12 is reported at line 11, a bad indent on line 13 at the
// line of the mapping it breaks). goccy/go-yaml's parser reports the
// offending token's position.
func Locate(data []byte, err error) Located {
	var l Located
	l.ReaderMessage = err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "yaml: "} {
		l.ReaderMessage = strings.TrimPrefix(l.ReaderMessage, p)
	}
	if m := readerLine.FindStringSubmatch(l.ReaderMessage); m != nil {
		l.ReaderMessage = strings.TrimPrefix(l.ReaderMessage, m[0])
		fmt.Sscan(m[1], &l.ReaderLine)
	}
	if !utf8.Valid(data) {
		// The readers say "invalid leading UTF-8 octet" and name no
		// line; the byte's place is known.
		off := invalidUTF8(data)
		p := positionAt(data, off)
		l.Line, l.Column, l.Message = p.Line, p.Column, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", data[off])
		return l
	}
	_, perr := parser.ParseBytes(data, 0)
	var se *goyaml.SyntaxError
	if perr == nil || !errors.As(perr, &se) || se.Token == nil || se.Token.Position == nil {
		return l
	}
	l.Line, l.Column, l.Message = se.Token.Position.Line, se.Token.Position.Column, se.Message
	return l
}

var readerLine = regexp.MustCompile(`^line (\d+): `)
