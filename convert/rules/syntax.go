package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	goyaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// syntaxError turns a YAML syntax error into an Error at the line and
// column where the document stops being YAML. The YAML decoder the loader
// uses (go.yaml.in/yaml/v3) reports only the line where the enclosing
// collection began, and for parser errors counts it from 0: a flow mapping
// left open on line 12 is reported at line 11, a bad indent on line 13 at
// the line of the mapping it breaks. goccy/go-yaml's parser reports the
// position of the offending token; the enclosing collection's line is
// given as context.
func syntaxError(name string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	context := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		msg = strings.TrimPrefix(msg, m[0])
		fmt.Sscan(m[1], &context)
	}
	_, perr := parser.ParseBytes(data, 0)
	var se *goyaml.SyntaxError
	if perr == nil || !errors.As(perr, &se) || se.Token == nil || se.Token.Position == nil {
		// Only one parser objects: report what it says, without a
		// position it does not give.
		return &Error{File: name, Err: fmt.Errorf("not valid YAML: %s", msg)}
	}
	pos := se.Token.Position
	text := se.Message
	if context > 0 && context+1 < pos.Line && (strings.Contains(msg, "expected ',' or '}'") || strings.Contains(msg, "expected ',' or ']'")) {
		// v3 counts parser errors from 0: the collection began on
		// context+1.
		text += fmt.Sprintf(" (%s; the flow collection opened on line %d is not closed)", msg, context+1)
	} else if msg != "" {
		text += " (" + msg + ")"
	}
	if line := lineOf(data, pos.Line); strings.Contains(line, "{") && strings.Contains(line, "[") {
		// The common slip: a path with a selector in a flow mapping,
		// where [ opens a list.
		text += `; in a { } mapping, [ starts a list: quote a path holding [ ] (from: "spec.items[*].img") or write the rule in block style`
	}
	return &Error{File: name, Line: pos.Line, Column: pos.Column, Err: fmt.Errorf("not valid YAML: %s", text)}
}

// lineOf returns line n (from 1) of data, or "".
func lineOf(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

var yamlLine = regexp.MustCompile(`^line (\d+): `)
