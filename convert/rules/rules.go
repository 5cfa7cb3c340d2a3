// Package rules loads hubspoke rule files: YAML documents of kind Conversion
// (apiVersion hubspoke.dev/v1alpha1) that name a group, a kind, the hub
// version and, for each spoke version, the rules that map it to the hub.
//
// Every error names the file and line it comes from. A rule that cannot be
// inverted is refused when the file loads, with the reason.
package rules

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hubspoke/hubspoke/convert"
)

// APIVersion and Kind of a rule file.
const (
	APIVersion = "hubspoke.dev/v1alpha1"
	Kind       = "Conversion"
)

// File is a parsed rule file.
type File struct {
	// Name is the file name used in errors.
	Name string
	// Metadata.name of the document, conventionally the CRD's name.
	MetadataName     string
	Group, Kind, Hub string
	Spokes           []SpokeSpec
	// Rollout and Storage are spec.rollout and spec.storage, read by the
	// operator when the file is a Conversion object (nil when absent).
	Rollout *Rollout
	Storage *Storage
}

// SpokeSpec is one spoke of a rule file.
type SpokeSpec struct {
	Version string
	Line    int
	Rules   []RuleSpec
}

// RuleSpec is one rule as written, with where it was written.
type RuleSpec struct {
	// Type is the rule kind, as written: rename, enum, duration, quantity,
	// hubOnly, cel, ... (the keys of the file format).
	Type string
	Line int
	// From and To are the spoke and hub paths (for hubOnly and spokeOnly,
	// both are the rule's path).
	From, To convert.Path
	// Rule is the compiled rule (nil for funcs rules until Compile).
	Rule convert.Rule
	// FuncName is the name of a funcs rule.
	FuncName string
	// Params holds the rule's remaining parameters as written.
	Params map[string]any
}

// Options configure loading.
type Options struct {
	// Funcs are the Go rules that funcs entries may name, besides those
	// registered with RegisterFuncs.
	Funcs map[string]convert.Rule
	// CEL compiles the expressions of cel rules; nil means the compiler
	// registered with RegisterCEL (package convert/celenv registers one).
	CEL convert.CELCompiler
}

// LoadFile reads, validates and compiles the rule file at path.
func LoadFile(path string, opts ...Options) (*convert.Converter, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Load(path, data, opts...)
}

// Load validates and compiles the rule file data; name is used in errors.
func Load(name string, data []byte, opts ...Options) (*convert.Converter, error) {
	f, err := Parse(name, data, opts...)
	if err != nil {
		return nil, err
	}
	return f.Converter()
}

// ParseFile reads and parses the rule file at path.
func ParseFile(path string, opts ...Options) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, opts...)
}

// Converter compiles the file into a Converter.
func (f *File) Converter() (*convert.Converter, error) {
	def := convert.Definition{Group: f.Group, Kind: f.Kind, Hub: f.Hub}
	for _, s := range f.Spokes {
		sp := convert.Spoke{Version: s.Version}
		for _, r := range s.Rules {
			sp.Rules = append(sp.Rules, r.Rule)
		}
		def.Spokes = append(def.Spokes, sp)
	}
	c, err := convert.New(def)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return c, nil
}

// Error is a problem in a rule file, with its position.
type Error struct {
	File         string
	Line, Column int
	// Field is where in the document, e.g. spec.spokes[0].rules[1].enum.
	Field string
	Err   error
}

func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += fmt.Sprintf(":%d:%d", e.Line, e.Column)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %v", pos, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", pos, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

type loader struct {
	name string
	opts Options
}

func (l *loader) errf(n *yaml.Node, field, format string, args ...any) error {
	e := &Error{File: l.name, Field: field, Err: fmt.Errorf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// Parse validates a rule file and compiles its rules.
func Parse(name string, data []byte, opts ...Options) (*File, error) {
	l := &loader{name: name}
	for _, o := range opts {
		if o.Funcs != nil {
			l.opts.Funcs = o.Funcs
		}
		if o.CEL != nil {
			l.opts.CEL = o.CEL
		}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, syntaxError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, l.errf(&extra, "", "a rule file holds one document; found another")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{File: name, Err: errors.New("empty rule file")}
	}
	root := doc.Content[0]
	top, err := l.mapping(root, "", "apiVersion", "kind", "metadata", "spec")
	if err != nil {
		return nil, err
	}
	f := &File{Name: name}
	if av := l.scalar(top, "apiVersion"); av != APIVersion {
		return nil, l.errf(l.at(top, "apiVersion", root), "apiVersion", "want %s, got %q", APIVersion, av)
	}
	if k := l.scalar(top, "kind"); k != Kind {
		return nil, l.errf(l.at(top, "kind", root), "kind", "want %s, got %q", Kind, k)
	}
	if md, ok := top["metadata"]; ok {
		m, err := l.mapping(md.val, "metadata", "name")
		if err != nil {
			return nil, err
		}
		f.MetadataName = l.scalar(m, "name")
	}
	specNode, ok := top["spec"]
	if !ok {
		return nil, l.errf(root, "spec", "missing")
	}
	spec, err := l.mapping(specNode.val, "spec", SpecFields...)
	if err != nil {
		return nil, err
	}
	if e, ok := spec["rollout"]; ok {
		if f.Rollout, err = l.rollout(e); err != nil {
			return nil, err
		}
	}
	if e, ok := spec["storage"]; ok {
		if f.Storage, err = l.storage(e); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"group", "kind", "hub"} {
		if l.scalar(spec, k) == "" {
			return nil, l.errf(specNode.val, "spec."+k, "missing")
		}
	}
	f.Group, f.Kind, f.Hub = l.scalar(spec, "group"), l.scalar(spec, "kind"), l.scalar(spec, "hub")
	spokes, ok := spec["spokes"]
	if !ok {
		return f, nil
	}
	if spokes.val.Kind != yaml.SequenceNode {
		return nil, l.errf(spokes.val, "spec.spokes", "want a list of spokes")
	}
	seen := map[string]int{}
	for i, sn := range spokes.val.Content {
		field := fmt.Sprintf("spec.spokes[%d]", i)
		sm, err := l.mapping(sn, field, "version", "rules")
		if err != nil {
			return nil, err
		}
		s := SpokeSpec{Version: l.scalar(sm, "version"), Line: sn.Line}
		if s.Version == "" {
			return nil, l.errf(sn, field+".version", "missing")
		}
		if s.Version == f.Hub {
			return nil, l.errf(sm["version"].val, field+".version", "%s is the hub; the hub has no rules of its own", s.Version)
		}
		if line, dup := seen[s.Version]; dup {
			return nil, l.errf(sm["version"].val, field+".version", "spoke %s is already declared at line %d", s.Version, line)
		}
		seen[s.Version] = sn.Line
		if rn, ok := sm["rules"]; ok {
			if rn.val.Kind != yaml.SequenceNode {
				return nil, l.errf(rn.val, field+".rules", "want a list of rules")
			}
			for j, r := range rn.val.Content {
				spec, err := l.rule(r, fmt.Sprintf("%s.rules[%d]", field, j))
				if err != nil {
					return nil, err
				}
				s.Rules = append(s.Rules, spec)
			}
		}
		f.Spokes = append(f.Spokes, s)
	}
	return f, nil
}

type entry struct {
	key, val *yaml.Node
}

// mapping checks that n is a mapping with only the allowed keys, each once.
func (l *loader) mapping(n *yaml.Node, field string, allowed ...string) (map[string]entry, error) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return nil, l.errf(n, field, "want a mapping, got %s", kindName(n))
	}
	pairs, err := l.pairs(n, field)
	if err != nil {
		return nil, err
	}
	out := map[string]entry{}
	for _, e := range pairs {
		name := e.key.Value
		if !contains(allowed, name) {
			return nil, l.errf(e.key, join(field, name), "unknown field (allowed: %s)", strings.Join(allowed, ", "))
		}
		out[name] = e
	}
	return out, nil
}

// deref follows aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// isMerge reports whether k is a merge key (<<), as Kubernetes' YAML
// reader takes it.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "" && k.Style == 0)
}

// pairs returns the members of the mapping n, in order, values
// dereferenced, with merge keys (<<: *anchor, <<: [*a, *b]) applied as
// YAML 1.1 and Kubernetes' reader apply them: a key of n itself wins over
// a merged one, and an earlier merged mapping over a later one. A key
// written twice in n is an error.
func (l *loader) pairs(n *yaml.Node, field string) ([]entry, error) {
	return l.mergePairs(n, field, 0)
}

func (l *loader) mergePairs(n *yaml.Node, field string, depth int) ([]entry, error) {
	if depth > 100 {
		return nil, l.errf(n, field, "merge keys nested too deeply")
	}
	var own, merged []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if isMerge(k) {
			var sources []*yaml.Node
			switch v.Kind {
			case yaml.MappingNode:
				sources = []*yaml.Node{v}
			case yaml.SequenceNode:
				for _, m := range v.Content {
					sources = append(sources, deref(m))
				}
			}
			for _, m := range sources {
				if m.Kind != yaml.MappingNode {
					return nil, l.errf(m, join(field, "<<"), "a merge key takes a mapping or a list of mappings, got %s", kindName(m))
				}
				ps, err := l.mergePairs(m, field, depth+1)
				if err != nil {
					return nil, err
				}
				merged = append(merged, ps...)
			}
			if len(sources) == 0 {
				return nil, l.errf(v, join(field, "<<"), "a merge key takes a mapping or a list of mappings, got %s", kindName(v))
			}
			continue
		}
		if seen[k.Value] {
			return nil, l.errf(k, join(field, k.Value), "set twice")
		}
		seen[k.Value] = true
		own = append(own, entry{key: k, val: v})
	}
	for _, e := range merged {
		if !seen[e.key.Value] {
			seen[e.key.Value] = true
			own = append(own, e)
		}
	}
	return own, nil
}

func (l *loader) scalar(m map[string]entry, k string) string {
	if e, ok := m[k]; ok && e.val.Kind == yaml.ScalarNode {
		return e.val.Value
	}
	return ""
}

func (l *loader) at(m map[string]entry, k string, def *yaml.Node) *yaml.Node {
	if e, ok := m[k]; ok {
		return e.val
	}
	return def
}

func join(field, k string) string {
	if field == "" {
		return k
	}
	return field + "." + k
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.MappingNode:
		return "a mapping"
	}
	return "nothing"
}

func ruleKinds() string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (l *loader) rule(n *yaml.Node, field string) (RuleSpec, error) {
	n = deref(n)
	var ps []entry
	if n.Kind == yaml.MappingNode {
		var err error
		if ps, err = l.pairs(n, field); err != nil {
			return RuleSpec{}, err
		}
	}
	if len(ps) != 1 {
		return RuleSpec{}, l.errf(n, field, "a rule is a mapping with exactly one key, the rule kind (one of %s)", ruleKinds())
	}
	kn, body := ps[0].key, ps[0].val
	name := kn.Value
	k, ok := kinds[name]
	if !ok {
		return RuleSpec{}, l.errf(kn, field, "unknown rule kind %q (want one of %s)", name, ruleKinds())
	}
	field = field + "." + name
	m, err := l.mapping(body, field, append(append([]string(nil), k.params...), k.mods...)...)
	if err != nil {
		return RuleSpec{}, err
	}
	b := &build{l: l, field: field, kindNode: kn, body: deref(body), m: m,
		spec: RuleSpec{Type: name, Line: kn.Line, Params: map[string]any{}}}
	if err := k.build(b); err != nil {
		return RuleSpec{}, err
	}
	if err := b.modifiers(); err != nil {
		return RuleSpec{}, err
	}
	return b.spec, nil
}

// nodeJSON converts a YAML value to JSON.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return jsonMarshal(v)
}
