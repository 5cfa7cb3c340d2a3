package check

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/hubspoke/hubspoke/schema"
)

type schemaVV = structuralschema.ValueValidation

// conflict is one way a value accepted by schema a cannot be held by b.
type conflict struct {
	what     string // constraint name: type, minimum, enum, ...
	a, b     string // the two constraints as written
	severity Severity
}

func typeOf(n *schema.Node) string {
	switch {
	case n == nil:
		return "any"
	case n.XIntOrString:
		return "int-or-string"
	case n.Type == "" && n.XPreserveUnknownFields:
		return "any"
	case n.Type == "":
		return "any"
	}
	return n.Type
}

// intBounds returns the integer range a node accepts (format and bounds).
func intBounds(n *schema.Node) (lo, hi float64, loDesc, hiDesc string) {
	lo, hi = math.Inf(-1), math.Inf(1)
	loDesc, hiDesc = "no minimum", "no maximum"
	vv := n.ValueValidation
	format := ""
	if vv != nil {
		format = vv.Format
	}
	switch format {
	case "int32":
		lo, hi = math.MinInt32, math.MaxInt32
		loDesc, hiDesc = "format int32 (minimum -2147483648)", "format int32 (maximum 2147483647)"
	case "int64":
		lo, hi = math.MinInt64, math.MaxInt64
		loDesc, hiDesc = "format int64", "format int64"
	}
	if vv == nil {
		return
	}
	if vv.Minimum != nil {
		m := *vv.Minimum
		d := "minimum " + num(m)
		if vv.ExclusiveMinimum {
			d = "exclusiveMinimum " + num(m)
			if n.Type == "integer" {
				m = math.Floor(m) + 1
			} else {
				m = math.Nextafter(m, math.Inf(1))
			}
		}
		if m > lo {
			lo, loDesc = m, d
		}
	}
	if vv.Maximum != nil {
		m := *vv.Maximum
		d := "maximum " + num(m)
		if vv.ExclusiveMaximum {
			d = "exclusiveMaximum " + num(m)
			if n.Type == "integer" {
				m = math.Ceil(m) - 1
			} else {
				m = math.Nextafter(m, math.Inf(-1))
			}
		}
		if m < hi {
			hi, hiDesc = m, d
		}
	}
	return
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', 0, 64) // exact integer digits
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func jsonStr(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func enumValues(n *schema.Node) []any {
	if n == nil || n.ValueValidation == nil {
		return nil
	}
	out := make([]any, len(n.ValueValidation.Enum))
	for i, e := range n.ValueValidation.Enum {
		out[i] = e.Object
	}
	return out
}

func enumDesc(vals []any) string {
	if len(vals) == 0 {
		return "any value"
	}
	return "enum " + jsonStr(vals)
}

func containsValue(vals []any, v any) bool {
	for _, x := range vals {
		if Equal(x, v) {
			return true
		}
	}
	return false
}

func vvInt(p *int64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

// contain lists the values that schema node a accepts and node b cannot
// hold, constraint by constraint (children are compared separately).
func contain(a, b *schema.Node) []conflict {
	var out []conflict
	add := func(what, da, db string, sev Severity) {
		out = append(out, conflict{what: what, a: da, b: db, severity: sev})
	}
	ta, tb := typeOf(a), typeOf(b)
	switch {
	case tb == "any" || ta == tb:
	case ta == "integer" && tb == "number":
	case tb == "int-or-string" && (ta == "integer" || ta == "string"):
	default:
		add("type", "type "+ta, "type "+tb, SeverityError)
		return out
	}
	if a.Nullable && !b.Nullable {
		add("nullable", "nullable", "not nullable", SeverityError)
	}
	if ea, eb := enumValues(a), enumValues(b); len(eb) > 0 {
		if len(ea) == 0 {
			add("enum", enumDesc(ea), enumDesc(eb), SeverityError)
		} else {
			var missing []any
			for _, v := range ea {
				if !containsValue(eb, v) {
					missing = append(missing, v)
				}
			}
			if len(missing) > 0 {
				add("enum", enumDesc(ea)+" (accepts "+jsonStr(missing)+")", enumDesc(eb), SeverityError)
			}
		}
	}
	va, vb := a.ValueValidation, b.ValueValidation
	if ta == "integer" || ta == "number" {
		loA, hiA, loDA, hiDA := intBounds(a)
		loB, hiB, loDB, hiDB := intBounds(b)
		if loA < loB {
			add("minimum", loDA, loDB, SeverityError)
		}
		if hiA > hiB {
			add("maximum", hiDA, hiDB, SeverityError)
		}
		if vb != nil && vb.MultipleOf != nil {
			if va == nil || va.MultipleOf == nil || math.Mod(*va.MultipleOf, *vb.MultipleOf) != 0 {
				add("multipleOf", "multipleOf "+orNone(va, func(v *schemaVV) string {
					if v.MultipleOf == nil {
						return ""
					}
					return num(*v.MultipleOf)
				}), "multipleOf "+num(*vb.MultipleOf), SeverityError)
			}
		}
	}
	if ta == "string" && vb != nil {
		if vb.MaxLength != nil && (va == nil || va.MaxLength == nil || *va.MaxLength > *vb.MaxLength) {
			add("maxLength", "maxLength "+orNone(va, func(v *schemaVV) string { return vvInt(v.MaxLength) }), "maxLength "+vvInt(vb.MaxLength), SeverityError)
		}
		if vb.MinLength != nil && (va == nil || va.MinLength == nil || *va.MinLength < *vb.MinLength) {
			add("minLength", "minLength "+orNone(va, func(v *schemaVV) string { return vvInt(v.MinLength) }), "minLength "+vvInt(vb.MinLength), SeverityError)
		}
		if vb.Pattern != "" && (va == nil || va.Pattern != vb.Pattern) {
			add("pattern", "pattern "+orNone(va, func(v *schemaVV) string { return quoteOrEmpty(v.Pattern) }), "pattern "+quoteOrEmpty(vb.Pattern), SeverityWarning)
		}
		if vb.Format != "" && (va == nil || va.Format != vb.Format) {
			add("format", "format "+orNone(va, func(v *schemaVV) string { return v.Format }), "format "+vb.Format, SeverityWarning)
		}
	}
	if ta == "array" {
		if vb != nil && vb.MaxItems != nil && (va == nil || va.MaxItems == nil || *va.MaxItems > *vb.MaxItems) {
			add("maxItems", "maxItems "+orNone(va, func(v *schemaVV) string { return vvInt(v.MaxItems) }), "maxItems "+vvInt(vb.MaxItems), SeverityError)
		}
		if vb != nil && vb.MinItems != nil && (va == nil || va.MinItems == nil || *va.MinItems < *vb.MinItems) {
			add("minItems", "minItems "+orNone(va, func(v *schemaVV) string { return vvInt(v.MinItems) }), "minItems "+vvInt(vb.MinItems), SeverityError)
		}
		la, ka := schema.ListType(a)
		lb, kb := schema.ListType(b)
		switch {
		case lb == "set" && la != "set":
			add("list-type", "list-type "+la+" (duplicates accepted)", "list-type set", SeverityError)
		case lb == "map" && (la != "map" || !sameStrings(ka, kb)):
			add("list-type", listDesc(la, ka)+" (duplicate keys accepted)", listDesc(lb, kb), SeverityError)
		}
	}
	if ta == "object" {
		if a.XPreserveUnknownFields && !b.XPreserveUnknownFields {
			add("x-kubernetes-preserve-unknown-fields", "preserves unknown fields", "prunes unknown fields", SeverityError)
		}
		if a.AdditionalProperties != nil && (a.AdditionalProperties.Bool || a.AdditionalProperties.Structural != nil) &&
			(b.AdditionalProperties == nil || (!b.AdditionalProperties.Bool && b.AdditionalProperties.Structural == nil)) && !b.XPreserveUnknownFields {
			add("additionalProperties", "map (additionalProperties)", "fixed properties", SeverityError)
		}
		if vb != nil && vb.MaxProperties != nil && (va == nil || va.MaxProperties == nil || *va.MaxProperties > *vb.MaxProperties) {
			add("maxProperties", "maxProperties "+orNone(va, func(v *schemaVV) string { return vvInt(v.MaxProperties) }), "maxProperties "+vvInt(vb.MaxProperties), SeverityError)
		}
	}
	return out
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf("%q", s)
}

func listDesc(t string, keys []string) string {
	if t == "map" {
		return "list-type map keyed by " + strings.Join(keys, ",")
	}
	return "list-type " + t
}

func sameStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

func orNone(v *schemaVV, f func(*schemaVV) string) string {
	if v == nil {
		return "none"
	}
	if s := f(v); s != "" {
		return s
	}
	return "none"
}

func required(n *schema.Node) []string {
	if n == nil || n.ValueValidation == nil {
		return nil
	}
	return n.ValueValidation.Required
}
