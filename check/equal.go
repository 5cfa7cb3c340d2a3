package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/schema"
)

// This file is hubspoke's one semantic JSON equality (Equal, Diff, Diffs):
// key order never matters, numbers compare by value, list order matters
// unless the schema says set or map.

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

// sameNumber compares two numbers by value. A float64 holds only the
// float64 nearest to the literal it was decoded from, so a float64 equals
// a number whose float64 is the same (0.1 decoded as a float64 equals the
// literal 0.1; 9007199254740993 decoded as an int64 equals it decoded as a
// float64): the same bytes decoded by two decoders are equal. Two exact
// numbers (literals, int64s) compare exactly.
func sameNumber(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		if y, ok := b.(json.Number); ok && x == y {
			return true
		}
	}
	_, fa := a.(float64)
	_, fb := b.(float64)
	if fa || fb {
		x, oka := toFloat64(a)
		y, okb := toFloat64(b)
		return oka && okb && x == y
	}
	ra, oka := toRat(a)
	rb, okb := toRat(b)
	return oka && okb && ra.Cmp(rb) == 0
}

func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, int64, int, float64:
		return true
	}
	return false
}

// EqualJSON reports whether two JSON documents are semantically equal (see
// Equal); a document that does not parse equals nothing.
func EqualJSON(a, b []byte) bool {
	x, err1 := decodeJSON(a)
	y, err2 := decodeJSON(b)
	return err1 == nil && err2 == nil && Equal(x, y)
}

// Equal reports whether two decoded JSON values are semantically equal: key
// order never matters, numbers compare by value, list order matters.
func Equal(a, b any) bool {
	d := differ{stop: true}
	d.diff(a, b, nil, nil)
	return len(d.out) == 0
}

// Diff compares two decoded JSON values under schema node n (nil: no
// schema) and returns the JSON pointer of the first difference (in key
// order). Key order never matters; list order matters unless n marks the
// list x-kubernetes-list-type set or map; numbers compare by value.
func Diff(a, b any, n *schema.Node) (string, bool) {
	d := differ{stop: true}
	d.diff(a, b, n, nil)
	if len(d.out) == 0 {
		return "", false
	}
	return d.out[0], true
}

// Diffs is Diff returning every difference: the pointer of each value of a
// that is missing or different in b, and of each value b adds, deepest
// first where they nest. Pointers into list items use a's index, or b's
// for added items.
func Diffs(a, b any, n *schema.Node) []string {
	d := differ{}
	d.diff(a, b, n, nil)
	return d.out
}

type differ struct {
	stop bool // at the first difference
	out  []string
}

func (d *differ) add(path []string) { d.out = append(d.out, pointerOf(path)) }

func (d *differ) done() bool { return d.stop && len(d.out) > 0 }

// pointerOf escapes keys into a JSON pointer (convert's one escaper).
func pointerOf(keys []string) string { return convert.PathOf(keys...).Pointer() }

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

func with(path []string, seg string) []string {
	return append(path[:len(path):len(path)], seg)
}

func (d *differ) diff(a, b any, n *schema.Node, path []string) {
	if d.done() {
		return
	}
	if isNumber(a) && isNumber(b) {
		if !sameNumber(a, b) {
			d.add(path)
		}
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			d.add(path)
			return
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
			va, oka := x[k]
			vb, okb := y[k]
			if oka != okb {
				d.add(with(path, k))
			} else {
				d.diff(va, vb, child(n, k), with(path, k))
			}
			if d.done() {
				return
			}
		}
	case []any:
		y, ok := b.([]any)
		if !ok {
			d.add(path)
			return
		}
		var items *schema.Node
		lt := "atomic"
		var keys []string
		if n != nil {
			items = n.Items
			lt, keys = schema.ListType(n)
		}
		if lt == "set" || lt == "map" {
			d.unordered(x, y, items, lt, keys, path)
			return
		}
		for i := 0; i < len(x) || i < len(y); i++ {
			if i >= len(x) || i >= len(y) {
				d.add(with(path, strconv.Itoa(i)))
			} else {
				d.diff(x[i], y[i], items, with(path, strconv.Itoa(i)))
			}
			if d.done() {
				return
			}
		}
	case nil:
		if b != nil {
			d.add(path)
		}
	default:
		if a != b {
			d.add(path)
		}
	}
}

// unordered compares list-type set and map lists: items pair by equality
// (set) or by their key fields (map), whatever their order.
func (d *differ) unordered(x, y []any, items *schema.Node, lt string, keys []string, path []string) {
	used := make([]bool, len(y))
	for i, ea := range x {
		found := -1
		for j, eb := range y {
			if used[j] {
				continue
			}
			if lt == "map" && sameKeys(ea, eb, keys) || lt == "set" && Equal(ea, eb) {
				found = j
				break
			}
		}
		if found < 0 {
			d.add(with(path, strconv.Itoa(i)))
		} else {
			used[found] = true
			if lt == "map" {
				d.diff(ea, y[found], items, with(path, strconv.Itoa(i)))
			}
		}
		if d.done() {
			return
		}
	}
	for j := range y {
		if !used[j] {
			d.add(with(path, strconv.Itoa(j)))
			if d.done() {
				return
			}
		}
	}
}

func sameKeys(a, b any, keys []string) bool {
	ma, ok1 := a.(map[string]any)
	mb, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	for _, k := range keys {
		if !Equal(ma[k], mb[k]) {
			return false
		}
	}
	return true
}

// lookupPointer returns the value at JSON pointer p in v.
func lookupPointer(v any, p string) (any, bool) {
	if p == "" {
		return v, true
	}
	cp, err := convert.ParsePointer(p)
	if err != nil {
		return nil, false
	}
	for _, seg := range cp.Segments() {
		switch x := v.(type) {
		case map[string]any:
			c, ok := x[seg]
			if !ok {
				return nil, false
			}
			v = c
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
