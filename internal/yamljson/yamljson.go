// Package yamljson is hubspoke's one reader of YAML. It converts one YAML
// document to JSON and JSON to YAML keeping what the conversion engine
// keeps: number literals (123456789012345678901234567890 and 0.1000 stay
// as written) and key order. Read splits a file into its YAML documents or
// JSON values and places any JSON pointer or byte offset of a document
// back at its line and column in the file; Locate places a YAML syntax
// error. convert, check's fixtures and CRD files (package schema) are read
// through it.
//
// YAML is read as kubectl reads it (sigs.k8s.io/yaml, YAML 1.1: "yes" is
// true, 0777 is octal); a YAML 1.2 parse of the same document supplies the
// literals and the key order wherever both readings agree on the value.
// Where they do not (an octal or hexadecimal integer, a merge key, a
// literal that is no JSON number), kubectl's value is written.
package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// ToJSON converts one YAML document to JSON. An empty document is "null".
func ToJSON(doc []byte) ([]byte, error) {
	ref, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &root); err != nil || root.Kind != yamlv3.DocumentNode || len(root.Content) != 1 {
		// YAML 1.2 cannot read what YAML 1.1 did: kubectl's reading stands.
		return ref, nil
	}
	dec := json.NewDecoder(bytes.NewReader(ref))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := write(&buf, root.Content[0], v, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxDepth bounds the recursion over aliases, which may nest.
const maxDepth = 10000

// write writes ref, the value kubectl reads, taking key order and number
// literals from n where n holds the same value.
func write(buf *bytes.Buffer, n *yamlv3.Node, ref any, depth int) error {
	if depth > maxDepth {
		return errors.New("yaml: nested too deeply")
	}
	for n != nil && n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	switch r := ref.(type) {
	case map[string]any:
		if n == nil || n.Kind != yamlv3.MappingNode {
			return marshal(buf, r)
		}
		buf.WriteByte('{')
		seen := make(map[string]bool, len(r))
		put := func(k string, vn *yamlv3.Node) error {
			if len(seen) > 0 {
				buf.WriteByte(',')
			}
			seen[k] = true
			if err := marshal(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			return write(buf, vn, r[k], depth+1)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := n.Content[i]
			for kn.Kind == yamlv3.AliasNode {
				kn = kn.Alias
			}
			k := kn.Value
			if _, ok := r[k]; !ok || seen[k] || kn.Kind != yamlv3.ScalarNode {
				continue
			}
			// The last of duplicate keys is the one kubectl reads.
			vn := n.Content[i+1]
			for j := i + 2; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == k {
					vn = n.Content[j+1]
				}
			}
			if err := put(k, vn); err != nil {
				return err
			}
		}
		rest := make([]string, 0, len(r)-len(seen))
		for k := range r {
			if !seen[k] {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		for _, k := range rest {
			if err := put(k, nil); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case []any:
		if n == nil || n.Kind != yamlv3.SequenceNode || len(n.Content) != len(r) {
			return marshal(buf, r)
		}
		buf.WriteByte('[')
		for i, it := range r {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, n.Content[i], it, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case json.Number:
		if n != nil && n.Kind == yamlv3.ScalarNode && n.Style == 0 && sameNumber(n.Value, r.String()) {
			buf.WriteString(n.Value)
			return nil
		}
		buf.WriteString(r.String())
		return nil
	}
	return marshal(buf, ref)
}

// sameNumber reports whether lit is a JSON number literal with the value
// kubectl read, ref (its float64 value when the literal does not fit one).
func sameNumber(lit, ref string) bool {
	if lit == "" || (lit[0] != '-' && (lit[0] < '0' || lit[0] > '9')) || !json.Valid([]byte(lit)) {
		return false
	}
	if lit == ref {
		return true
	}
	a, err1 := strconv.ParseFloat(lit, 64)
	b, err2 := strconv.ParseFloat(ref, 64)
	return err1 == nil && err2 == nil && a == b
}

func marshal(buf *bytes.Buffer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

// FromJSON converts one JSON value to a YAML document, keeping key order
// and number literals. Strings that a YAML 1.1 reader would take for
// something else ("yes", "0777", "1:20") are quoted.
func FromJSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := node(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("json: more than one value")
	}
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// misread reports whether a common YAML reader would read the plain
// scalar s as something other than the string s: kubectl's (YAML 1.1 as
// sigs.k8s.io/yaml reads it: "yes", "on", "y", 0777), or one that follows
// the YAML 1.1 type repository in full (PyYAML, Ruby, SnakeYAML): base 60
// numbers (22:00 is 1320, 1:30:00.5 a float), timestamps, "=" (the value
// key) and "<<" (the merge key). YAML 1.2, which the encoder follows,
// reads these as strings and would write them plain.
func misread(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	if yaml11.MatchString(s) {
		return true
	}
	if !strings.ContainsRune("0123456789+-.:~yYnNoOtTfF", rune(s[0])) {
		return false
	}
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		return true
	}
	var got string
	return json.Unmarshal(j, &got) != nil || got != s
}

// yaml11 matches the plain scalars the YAML 1.1 type repository
// (yaml.org/type) resolves to something other than a string: bool, int
// and float (with base 60 and underscores), null, timestamp, merge and
// value.
var yaml11 = regexp.MustCompile(`^(?:` + strings.Join([]string{
	`y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF`,
	`[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+`,
	`[-+]?(?:[0-9][0-9_]*)?\.[0-9.]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)`,
	`~|null|Null|NULL`,
	`[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?(?:[ \t]*Z|[-+][0-9]{1,2}(?::[0-9]{2})?)?`,
	`<<|=`,
}, "|") + `)$`)

func node(dec *json.Decoder, depth int) (*yamlv3.Node, error) {
	if depth > maxDepth {
		return nil, errors.New("json: nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		kind, tag, end := yamlv3.SequenceNode, "!!seq", json.Delim(']')
		if t == '{' {
			kind, tag, end = yamlv3.MappingNode, "!!map", '}'
		}
		n := &yamlv3.Node{Kind: kind, Tag: tag}
		for dec.More() {
			if kind == yamlv3.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: k.(string)})
			}
			v, err := node(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if tok, err := dec.Token(); err != nil || tok != end {
			return nil, fmt.Errorf("json: want %v, got %v (%v)", end, tok, err)
		}
		if len(n.Content) == 0 {
			n.Style = yamlv3.FlowStyle // {} and []
		}
		return n, nil
	case string:
		n := &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: t}
		if misread(t) {
			n.Style = yamlv3.DoubleQuotedStyle
		}
		return n, nil
	case json.Number:
		// YAML 1.2 reads every JSON number as a number; written plain,
		// the literal is kept as is.
		// The tag must be the one it resolves to, or the encoder writes
		// it out.
		tag := "!!float"
		if _, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			tag = "!!int"
		} else if _, err := strconv.ParseUint(t.String(), 10, 64); err == nil {
			tag = "!!int"
		}
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	case nil:
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("json: unexpected token %v", tok)
}
