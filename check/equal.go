package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"

	"github.com/hubspoke/hubspoke/schema"
)

// decodeJSON decodes JSON keeping numbers exact (json.Number).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

// unstructured converts json.Number values to int64 (when integral and in
// range) or float64, the form the API server's validation code expects.
func unstructured(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = unstructured(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = unstructured(e)
		}
		return out
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	}
	return v
}

func toRat(v any) (*big.Rat, bool) {
	r := new(big.Rat)
	switch x := v.(type) {
	case json.Number:
		if _, ok := r.SetString(string(x)); !ok {
			return nil, false
		}
	case int64:
		r.SetInt64(x)
	case int:
		r.SetInt64(int64(x))
	case float64:
		if r.SetFloat64(x) == nil {
			return nil, false
		}
	default:
		return nil, false
	}
	return r, true
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, int64, int, float64:
		return true
	}
	return false
}

// Equal reports whether two decoded JSON values are semantically equal: key
// order never matters, numbers compare by value, list order matters.
func Equal(a, b any) bool {
	_, diff := Diff(a, b, nil)
	return !diff
}

// Diff compares two decoded JSON values under schema node n (nil: no
// schema) and returns the JSON pointer of the first difference. Key order
// never matters; list order matters unless n marks the list
// x-kubernetes-list-type set or map; numbers compare by value.
func Diff(a, b any, n *schema.Node) (string, bool) {
	return diff(a, b, n, "")
}

func child(n *schema.Node, key string) *schema.Node {
	if n == nil {
		return nil
	}
	if p, ok := n.Properties[key]; ok {
		return &p
	}
	if n.AdditionalProperties != nil {
		return n.AdditionalProperties.Structural
	}
	return nil
}

func diff(a, b any, n *schema.Node, ptr string) (string, bool) {
	if isNumber(a) && isNumber(b) {
		if x, ok := a.(json.Number); ok {
			if y, ok := b.(json.Number); ok && x == y {
				return "", false
			}
		}
		ra, oka := toRat(a)
		rb, okb := toRat(b)
		if oka && okb && ra.Cmp(rb) == 0 {
			return "", false
		}
		return ptrOrRoot(ptr), true
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return ptrOrRoot(ptr), true
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := ptr + "/" + escapePtr(k)
			va, oka := x[k]
			vb, okb := y[k]
			if oka != okb {
				return p, true
			}
			if d, ok := diff(va, vb, child(n, k), p); ok {
				return d, true
			}
		}
		return "", false
	case []any:
		y, ok := b.([]any)
		if !ok {
			return ptrOrRoot(ptr), true
		}
		var items *schema.Node
		lt := "atomic"
		var keys []string
		if n != nil {
			items = n.Items
			lt, keys = schema.ListType(n)
		}
		if len(x) != len(y) {
			// Point at the first index that differs in order, or the end.
			for i := 0; i < len(x) && i < len(y); i++ {
				if _, d := diff(x[i], y[i], items, ""); d {
					return fmt.Sprintf("%s/%d", ptr, i), true
				}
			}
			m := len(x)
			if len(y) < m {
				m = len(y)
			}
			return fmt.Sprintf("%s/%d", ptr, m), true
		}
		if lt == "set" || lt == "map" {
			// Match each item of a to an unused equal-keyed item of b.
			used := make([]bool, len(y))
			for i, ea := range x {
				found := -1
				for j, eb := range y {
					if used[j] {
						continue
					}
					if lt == "map" && !sameKeys(ea, eb, keys) {
						continue
					}
					if _, d := diff(ea, eb, items, ""); !d {
						found = j
						break
					}
					if lt == "map" {
						// Same keys but different content: report inside.
						p, _ := diff(ea, eb, items, fmt.Sprintf("%s/%d", ptr, i))
						return p, true
					}
				}
				if found < 0 {
					return fmt.Sprintf("%s/%d", ptr, i), true
				}
				used[found] = true
			}
			return "", false
		}
		for i := range x {
			if d, ok := diff(x[i], y[i], items, fmt.Sprintf("%s/%d", ptr, i)); ok {
				return d, true
			}
		}
		return "", false
	case nil:
		if b == nil {
			return "", false
		}
		return ptrOrRoot(ptr), true
	default:
		if a != b {
			return ptrOrRoot(ptr), true
		}
		return "", false
	}
}

func sameKeys(a, b any, keys []string) bool {
	ma, ok1 := a.(map[string]any)
	mb, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	for _, k := range keys {
		if _, d := diff(ma[k], mb[k], nil, ""); d {
			return false
		}
	}
	return true
}

// ptrOrRoot returns the pointer; "" is the whole document.
func ptrOrRoot(p string) string { return p }

func escapePtr(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
