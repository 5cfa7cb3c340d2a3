package rules

import (
	"fmt"
	"strings"

	"github.com/hubspoke/hubspoke/internal/yamljson"
)

// syntaxError turns a YAML syntax error into an Error at the line and
// column where the document stops being YAML (yamljson.Locate), with
// the line of a flow collection left open, and a hint for the common slip
// of a selector in a flow mapping.
func syntaxError(name string, data []byte, err error) error {
	l := yamljson.Locate(data, err)
	if l.Line == 0 {
		// Only one parser objects: report what it says, without a
		// position it does not give.
		return &Error{File: name, Err: fmt.Errorf("not valid YAML: %s", l.ReaderMessage)}
	}
	text := l.Message
	if msg := l.ReaderMessage; l.ReaderLine > 0 && l.ReaderLine+1 < l.Line && (strings.Contains(msg, "expected ',' or '}'") || strings.Contains(msg, "expected ',' or ']'")) {
		// The loader's reader (yaml/v3) counts parser errors from 0: the
		// collection began on ReaderLine+1.
		text += fmt.Sprintf(" (%s; the flow collection opened on line %d is not closed)", msg, l.ReaderLine+1)
	} else if msg != "" {
		text += " (" + msg + ")"
	}
	if line := lineOf(data, l.Line); strings.Contains(line, "{") && strings.Contains(line, "[") {
		// The common slip: a path with a selector in a flow mapping,
		// where [ opens a list.
		text += `; in a { } mapping, [ starts a list: quote a path holding [ ] (from: "spec.items[*].img") or write the rule in block style`
	}
	return &Error{File: name, Line: l.Line, Column: l.Column, Err: fmt.Errorf("not valid YAML: %s", text)}
}

// lineOf returns line n (from 1) of data, or "".
func lineOf(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}
