package check

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/hubspoke/hubspoke/schema"
)

// Rules is what the static checks need to know of a rule file
// (hubspoke.dev/v1alpha1 Conversion): which fields each spoke's rules map.
// It is read leniently: compiling and validating the rules is the job of
// the rule loader; unknown rule kinds are kept with their parameters.
type Rules struct {
	// File is the rule file name (for positions).
	File string
	// Group, Kind and Hub as in spec.
	Group, Kind, Hub string
	// Spokes in declaration order.
	Spokes []SpokeRules
}

// SpokeRules are the rules of one spoke, written spoke -> hub.
type SpokeRules struct {
	Version string
	Line    int
	Rules   []Rule
}

// Rule is one rule: its kind (rename, enum, duration, intToString,
// stringToInt, scale, listToMap, hubOnly, spokeOnly, ...) and parameters.
type Rule struct {
	Kind string
	// From is the spoke-side path, To the hub-side path (both segments).
	// For hubOnly, To is the path; for spokeOnly, From is.
	From, To []string
	// Params holds every parameter as decoded YAML.
	Params map[string]any
	// Line is the rule's line in File.
	Line int
}

// Name renders the rule as "kind path" for messages.
func (r Rule) Name() string {
	switch {
	case r.From != nil && r.To != nil:
		return fmt.Sprintf("%s %s -> %s", r.Kind, schema.Pointer(r.From), schema.Pointer(r.To))
	case r.From != nil:
		return fmt.Sprintf("%s %s", r.Kind, schema.Pointer(r.From))
	case r.To != nil:
		return fmt.Sprintf("%s %s", r.Kind, schema.Pointer(r.To))
	}
	return r.Kind
}

// Spoke returns the rules of the named spoke, or nil.
func (r *Rules) Spoke(version string) *SpokeRules {
	for i := range r.Spokes {
		if r.Spokes[i].Version == version {
			return &r.Spokes[i]
		}
	}
	return nil
}

// Pos returns "file:line".
func (r *Rules) Pos(line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", r.File, line)
	}
	return r.File
}

// LoadRulesFile reads a rule file for the static checks.
func LoadRulesFile(path string) (*Rules, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	return LoadRules(path, data)
}

// LoadRules decodes a rule file; name is used in error positions. The first
// document of kind Conversion is used.
func LoadRules(name string, data []byte) (*Rules, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: no Conversion document found", name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if k := mapGet(root, "kind"); k == nil || k.Value != "Conversion" {
			continue
		}
		return parseRules(name, root)
	}
}

func mapGet(n *yamlv3.Node, key string) *yamlv3.Node {
	if n == nil || n.Kind != yamlv3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func parseRules(name string, root *yamlv3.Node) (*Rules, error) {
	r := &Rules{File: name}
	spec := mapGet(root, "spec")
	if spec == nil {
		return nil, fmt.Errorf("%s:%d: no spec", name, root.Line)
	}
	str := func(n *yamlv3.Node) string {
		if n == nil {
			return ""
		}
		return n.Value
	}
	r.Group, r.Kind, r.Hub = str(mapGet(spec, "group")), str(mapGet(spec, "kind")), str(mapGet(spec, "hub"))
	spokes := mapGet(spec, "spokes")
	if spokes == nil {
		return r, nil
	}
	if spokes.Kind != yamlv3.SequenceNode {
		return nil, fmt.Errorf("%s:%d: spec.spokes: not a list", name, spokes.Line)
	}
	for _, sn := range spokes.Content {
		sp := SpokeRules{Version: str(mapGet(sn, "version")), Line: sn.Line}
		if rules := mapGet(sn, "rules"); rules != nil {
			if rules.Kind != yamlv3.SequenceNode {
				return nil, fmt.Errorf("%s:%d: spoke %s: rules: not a list", name, rules.Line, sp.Version)
			}
			for _, rn := range rules.Content {
				rule, err := parseRule(rn)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: spoke %s: %w", name, rn.Line, sp.Version, err)
				}
				rs, err := funcsRules(rule)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: spoke %s: %w", name, rn.Line, sp.Version, err)
				}
				sp.Rules = append(sp.Rules, rs...)
			}
		}
		r.Spokes = append(r.Spokes, sp)
	}
	return r, nil
}

func parseRule(n *yamlv3.Node) (Rule, error) {
	if n.Kind != yamlv3.MappingNode || len(n.Content) != 2 {
		return Rule{}, errors.New("a rule is a map with exactly one key, its kind")
	}
	rule := Rule{Kind: n.Content[0].Value, Line: n.Line}
	var params map[string]any
	if err := n.Content[1].Decode(&params); err != nil {
		return Rule{}, fmt.Errorf("rule %s: %w", rule.Kind, err)
	}
	rule.Params = params
	path := func(key string) ([]string, error) {
		v, ok := params[key].(string)
		if !ok {
			return nil, nil
		}
		segs, err := schema.ParsePath(v)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %s: %w", rule.Kind, key, err)
		}
		return segs, nil
	}
	var err error
	switch rule.Kind {
	case "hubOnly":
		rule.To, err = path("path")
	case "spokeOnly":
		rule.From, err = path("path")
	default:
		if rule.From, err = path("from"); err != nil {
			return rule, err
		}
		if rule.To, err = path("to"); err != nil {
			return rule, err
		}
		if rule.To == nil {
			// "to" defaults to "from" (a rule rewriting a field in place).
			rule.To = rule.From
		}
	}
	return rule, err
}

// hasPrefix reports whether p starts with prefix (segment-wise), treating
// "*", "[]" and numbers as the same item segment.
func hasPrefix(p, prefix []string) bool {
	if len(prefix) == 0 || len(p) < len(prefix) {
		return false
	}
	for i := range prefix {
		if !segEqual(p[i], prefix[i]) {
			return false
		}
	}
	return true
}

func segEqual(a, b string) bool {
	if a == b {
		return true
	}
	return isItem(a) && isItem(b)
}

func isItem(s string) bool {
	if s == "*" || s == "[]" {
		return true
	}
	if s == "" {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}
