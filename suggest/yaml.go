package suggest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Header is written above the rule file by YAML: how it was made.
type Header struct {
	// Source names where the CRD came from ("crd.yaml", or "the cluster's
	// CRD widgets.example.com").
	Source string
	// Check is the command that checks the file, printed as the next step.
	Check string
}

// YAML renders the rule file: every rule in flow style with a comment
// saying why, a TODO comment where a decision is needed.
func (r *Result) YAML(h Header) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by hubspoke init from %s: a starting point.\n", h.Source)
	b.WriteString("# Each rule says why it was suggested; read the TODOs, then check it:\n")
	if h.Check != "" {
		fmt.Fprintf(&b, "#   %s\n", h.Check)
	}
	fmt.Fprintf(&b, "apiVersion: hubspoke.dev/v1alpha1\nkind: Conversion\nmetadata:\n  name: %s\nspec:\n  group: %s\n  kind: %s\n",
		scalar(r.Name), scalar(r.Group), scalar(r.Kind))
	fmt.Fprintf(&b, "  hub: %s # %s\n", scalar(r.Hub), r.HubReason)
	b.WriteString("  spokes:\n")
	for _, s := range r.Spokes {
		fmt.Fprintf(&b, "  - version: %s\n", scalar(s.Version))
		for _, n := range s.Notes {
			comment(&b, "    ", n)
		}
		if len(s.Rules) == 0 {
			b.WriteString("    rules: []\n")
			continue
		}
		b.WriteString("    rules:\n")
		for _, x := range s.Rules {
			comment(&b, "    ", x.Why+".")
			if x.TODO != "" {
				comment(&b, "    ", "TODO: "+x.TODO+".")
			}
			fmt.Fprintf(&b, "    - %s: %s\n", x.Kind, x.flow())
		}
	}
	return []byte(b.String())
}

// comment writes text as comment lines at indent, wrapped at 78 columns.
func comment(b *strings.Builder, indent, text string) {
	line := indent + "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 78 && len(line) > len(indent)+1 {
			b.WriteString(line + "\n")
			line = indent + "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// flow renders the rule's parameters as a YAML flow mapping.
func (x Rule) flow() string {
	var parts []string
	switch x.Kind {
	case "hubOnly", "spokeOnly":
		parts = append(parts, "path: "+scalar(x.From))
	default:
		parts = append(parts, "from: "+scalar(x.From))
		if x.To != "" && x.To != x.From {
			parts = append(parts, "to: "+scalar(x.To))
		}
	}
	for _, p := range x.Params {
		parts = append(parts, p.Key+": "+value(p.Value))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func value(v any) string {
	switch v := v.(type) {
	case string:
		return scalar(v)
	case int64:
		return fmt.Sprint(v)
	case []Pair:
		var parts []string
		for _, p := range v {
			parts = append(parts, scalar(p.Key)+": "+scalar(p.Value))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case json.RawMessage:
		return string(v) // JSON is YAML
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// plain matches the strings written unquoted: words any YAML reader reads
// back as the same string.
var plain = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_./-]*$`)

var yamlWords = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true, "true": true, "false": true, "null": true}

// scalar quotes a string unless YAML (1.1 and 1.2) reads it back as
// itself unquoted; quoted, it is a JSON string, which YAML reads too.
func scalar(s string) string {
	if plain.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return s
	}
	if !strings.Contains(s, `\`) && !strings.Contains(s, "'") && !strings.ContainsAny(s, "\n\t") {
		return "'" + s + "'"
	}
	q, _ := json.Marshal(s)
	return string(q)
}
