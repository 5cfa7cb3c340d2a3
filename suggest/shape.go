package suggest

import (
	"crypto/sha256"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/hubspoke/hubspoke/schema"
)

// Node is one node of a structural schema.
type node = schema.Node

// kind of a schema node, as the rules see it.
func kind(n *node) string {
	switch {
	case n == nil:
		return "none"
	case n.XIntOrString:
		return "int-or-string"
	case n.Type == "array":
		return "array"
	case n.Type == "object" && n.AdditionalProperties != nil && n.AdditionalProperties.Structural != nil && len(n.Properties) == 0:
		return "map"
	case n.Type == "object":
		return "object"
	case n.Type == "":
		return "any"
	}
	return n.Type
}

func isScalar(k string) bool {
	return k == "string" || k == "integer" || k == "number" || k == "boolean"
}

// canon is a node without its documentation: what makes two fields the
// same shape.
type canon struct {
	Type      string           `json:"t,omitempty"`
	Format    string           `json:"f,omitempty"`
	Enum      []any            `json:"e,omitempty"`
	Pattern   string           `json:"p,omitempty"`
	Bounds    []any            `json:"b,omitempty"`
	Required  []string         `json:"r,omitempty"`
	Nullable  bool             `json:"n,omitempty"`
	Default   any              `json:"d,omitempty"`
	Ext       []any            `json:"x,omitempty"`
	Props     map[string]canon `json:"pr,omitempty"`
	Items     *canon           `json:"i,omitempty"`
	AddlProps *canon           `json:"ap,omitempty"`
}

func canonOf(n *node) canon {
	if n == nil {
		return canon{}
	}
	c := canon{Type: n.Type, Nullable: n.Nullable, Default: n.Default.Object}
	if v := n.ValueValidation; v != nil {
		c.Format, c.Pattern = v.Format, v.Pattern
		for _, e := range v.Enum {
			c.Enum = append(c.Enum, e.Object)
		}
		c.Bounds = []any{v.Maximum, v.ExclusiveMaximum, v.Minimum, v.ExclusiveMinimum, v.MaxLength, v.MinLength, v.MaxItems, v.MinItems, v.MultipleOf, v.MaxProperties, v.MinProperties}
		c.Required = slices.Sorted(slices.Values(v.Required))
	}
	c.Ext = []any{n.XIntOrString, n.XPreserveUnknownFields, n.XEmbeddedResource, n.XListType, n.XListMapKeys, n.XMapType}
	if len(n.Properties) > 0 {
		c.Props = map[string]canon{}
		for k, p := range n.Properties {
			c.Props[k] = canonOf(&p)
		}
	}
	if n.Items != nil {
		i := canonOf(n.Items)
		c.Items = &i
	}
	if n.AdditionalProperties != nil && n.AdditionalProperties.Structural != nil {
		a := canonOf(n.AdditionalProperties.Structural)
		c.AddlProps = &a
	}
	return c
}

// shapeHash is equal for two nodes of the same shape.
func shapeHash(n *node) string {
	b, _ := json.Marshal(canonOf(n))
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// leaves lists the scalar leaves of n with their types ("a.b:string"),
// through objects, lists ("[]") and maps ("{}").
func leaves(n *node) []string {
	var out []string
	var walk func(n *node, p string)
	walk = func(n *node, p string) {
		switch kind(n) {
		case "object":
			for k, c := range n.Properties {
				walk(&c, p+"."+k)
			}
			if len(n.Properties) == 0 {
				out = append(out, p+":object")
			}
		case "array":
			walk(n.Items, p+"[]")
		case "map":
			walk(n.AdditionalProperties.Structural, p+"{}")
		default:
			out = append(out, p+":"+kind(n))
		}
	}
	walk(n, "")
	sort.Strings(out)
	return out
}

// likeness of two compound nodes: the share of their leaves in common.
func likeness(a, b *node) float64 {
	la, lb := leaves(a), leaves(b)
	if len(la) == 0 || len(lb) == 0 {
		return 0
	}
	common := 0
	for _, x := range la {
		if slices.Contains(lb, x) {
			common++
		}
	}
	return float64(common) / float64(len(la)+len(lb)-common)
}

var versionToken = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// tokens splits a path's keys into lower-case singular words: camelCase
// humps, acronyms (authzURL: authz, url; a plural acronym stays one
// word: emailSANs: email, san); version names (v1beta2) are dropped.
func tokens(keys []string) []string {
	var out []string
	for _, k := range keys {
		for _, part := range strings.FieldsFunc(k, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if versionToken.MatchString(part) {
				continue
			}
			for _, w := range splitCamel(part) {
				out = append(out, singular(strings.ToLower(w)))
			}
		}
	}
	return out
}

func splitCamel(k string) []string {
	rs := []rune(k)
	var words []string
	start := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		boundary := false
		switch {
		case (unicode.IsLower(prev) || unicode.IsDigit(prev)) && unicode.IsUpper(cur):
			boundary = true
		case unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			// HTTPServer: Server starts at S; but the s of SANs is a plural.
			plural := rs[i+1] == 's' && (i+2 == len(rs) || !unicode.IsLower(rs[i+2]))
			boundary = !plural
		}
		if boundary {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	return append(words, string(rs[start:]))
}

// singular strips a plural s (addresses -> address, uris -> uri, sans ->
// san).
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"):
		return w
	case strings.HasSuffix(w, "s") && len(w) > 3:
		return w[:len(w)-1]
	}
	return w
}

// sameWord: equal, or one an abbreviation of the other, of at least 3
// letters: a prefix (spec of specification), or its letters in order
// from the first (authz of authorization, img of image, cfg of config).
func sameWord(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) < 3 || a[0] != b[0] {
		return false
	}
	j := 0
	for i := 0; i < len(b) && j < len(a); i++ {
		if b[i] == a[j] {
			j++
		}
	}
	return j == len(a)
}

// nameLikeness of two key paths (their common prefix left out): the share
// of words in common.
func nameLikeness(a, b []string) float64 {
	for len(a) > 1 && len(b) > 1 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	ta, tb := tokens(a), tokens(b)
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	used := make([]bool, len(tb))
	common := 0
	for _, x := range ta {
		for j, y := range tb {
			if !used[j] && sameWord(x, y) {
				used[j] = true
				common++
				break
			}
		}
	}
	return float64(common) / float64(max(len(ta), len(tb)))
}

var stopWords = map[string]bool{"the": true, "and": true, "for": true, "this": true, "that": true, "are": true, "with": true, "from": true, "will": true, "not": true, "which": true, "when": true, "its": true, "can": true, "has": true, "have": true, "into": true, "been": true, "any": true, "all": true, "must": true, "should": true, "may": true, "field": true, "value": true, "set": true}

// descLikeness of two descriptions: the share of their words (3 letters or
// more, but common words) in common; 0 when either is missing.
func descLikeness(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) < 3 || len(wb) < 3 {
		return 0
	}
	common := 0
	for w := range wa {
		if wb[w] {
			common++
		}
	}
	return float64(common) / float64(len(wa)+len(wb)-common)
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) >= 3 && !stopWords[w] {
			out[singular(w)] = true
		}
	}
	return out
}

// normValue folds an enum value for pairing: case, and -, _, . and spaces
// left out (pkcs1 and PKCS1, http-01 and HTTP-01).
func normValue(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r == ' ' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}
