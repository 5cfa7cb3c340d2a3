package celenv

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// lazyObject is a CEL map over the raw JSON of an object (valid, as the
// engine hands it over) that decodes a member only when an expression
// reads it: object.metadata.namespace reads three members of a 3 KB
// object, not all of it. Anything that needs the whole map (iteration,
// size, equality, conversion) decodes it once, into the sorted map every
// decoded object is.
type lazyObject struct {
	doc        *jsonscan.Scanner // the document, with its stop bits
	start, end int               // the object in doc.Data; end -1 until needed
	role       role              // where it is in the object context
	full       ref.Val           // every member, once whole read them
}

// raw returns the JSON of the object.
func (o *lazyObject) raw() []byte {
	if o.end < 0 {
		o.end, _ = o.doc.SkipTrusted(o.start, 0)
	}
	return o.doc.Data[o.start:o.end]
}

// role says where a lazyObject is in the object context, whose preserved
// annotation is hubspoke's bookkeeping, hidden from expressions.
type role byte

const (
	inside      role = iota // anywhere else
	root                    // the object
	metadata                // its metadata
	annotations             // its annotations
)

// child is the role of member key of an object of role r.
func (r role) child(key string) role {
	switch {
	case r == root && key == "metadata":
		return metadata
	case r == metadata && key == "annotations":
		return annotations
	}
	return inside
}

// hidden reports whether member key of an object of role r is hidden.
func (r role) hidden(key string) bool { return r == annotations && key == convert.PreservedAnnotation }

// at returns the document's value as a CEL value, as valueAt: an object
// is o, made to read it lazily (it is r).
func (o *lazyObject) at(doc *jsonscan.Scanner, r role) (ref.Val, error) {
	if i := skipSpace(doc.Data, 0); i < len(doc.Data) && doc.Data[i] == '{' {
		*o = lazyObject{doc: doc, start: i, end: -1, role: r}
		return o, nil
	}
	return valueAt(doc, 0, r)
}

var (
	_ traits.Mapper = (*lazyObject)(nil)
	_ ref.Val       = (*lazyObject)(nil)
)

// valueAt returns the value at doc.Data[i] (valid JSON) as a CEL value:
// an object lazily, anything else read straight from its bytes; r is the
// role of an object.
func valueAt(doc *jsonscan.Scanner, i int, r role) (ref.Val, error) {
	v, _, err := value(doc, i, r, false)
	return v, err
}

// value is valueAt that also returns the offset after the value when end
// is set (an object's end is otherwise found only if it is needed).
//
// Numbers are read as encoding/json with UseNumber and the API server
// read them: an integer literal that fits is an int, anything else a
// double. Strings are their decoded text.
func value(doc *jsonscan.Scanner, i int, r role, end bool) (ref.Val, int, error) {
	d := doc.Data
	i = skipSpace(d, i)
	if i >= len(d) {
		return nil, i, jsonscan.Errorf(i, "unexpected end of JSON input")
	}
	switch c := d[i]; c {
	case '{':
		o := &lazyObject{doc: doc, start: i, end: -1, role: r}
		if !end {
			return o, i, nil
		}
		e, err := doc.SkipTrusted(i, 0)
		o.end = e
		return o, e, err
	case '[':
		var elems []ref.Val
		j := skipSpace(d, i+1)
		if j < len(d) && d[j] == ']' {
			return types.NewRefValList(adapter{}, elems), j + 1, nil
		}
		for j < len(d) {
			v, e, err := value(doc, j, inside, true)
			if err != nil {
				return nil, e, err
			}
			elems = append(elems, v)
			j = skipSpace(d, e)
			if j < len(d) && d[j] == ',' {
				j = skipSpace(d, j+1)
				continue
			}
			if j < len(d) && d[j] == ']' {
				return types.NewRefValList(adapter{}, elems), j + 1, nil
			}
			break
		}
		return nil, j, jsonscan.Errorf(j, "unexpected end of JSON input")
	case '"':
		e, err := doc.SkipTrusted(i, 0)
		if err != nil {
			return nil, e, err
		}
		return types.String(stringAt(d[i:e])), e, nil
	case 't':
		return types.True, i + 4, nil
	case 'f':
		return types.False, i + 5, nil
	case 'n':
		return types.NullValue, i + 4, nil
	}
	e, err := doc.SkipTrusted(i, 0)
	if err != nil {
		return nil, e, err
	}
	v, err := number(d[i:e])
	return v, e, err
}

// stringAt decodes q, a JSON string with its quotes.
func stringAt(q []byte) string {
	inner := q[1 : len(q)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	return string(jsonscan.Unquote(nil, inner))
}

// number reads the JSON number lit: an int for an integer literal that
// fits in one, else a double.
func number(lit []byte) (ref.Val, error) {
	if bytes.IndexAny(lit, ".eE") < 0 {
		if i, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			return types.Int(i), nil
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %w", lit, err)
	}
	return types.Double(f), nil
}

// whole reads every member of the object once, into a map that iterates
// in key order; its objects stay lazy. Of duplicate keys the first
// counts, as for Find. (A lazyObject belongs to one evaluation, on one
// goroutine.)
func (o *lazyObject) whole() ref.Val {
	if o.full == nil {
		o.full = o.readAll()
	}
	return o.full
}

func (o *lazyObject) readAll() ref.Val {
	m := make(map[ref.Val]ref.Val)
	var keys []string
	err := o.each(func(key []byte, v int) error {
		if o.role.hidden(string(key)) {
			return nil
		}
		k := types.String(key)
		if _, dup := m[k]; dup {
			return nil
		}
		val, err := valueAt(o.doc, v, o.role.child(string(key)))
		if err != nil {
			return err
		}
		m[k] = val
		keys = append(keys, string(k))
		return nil
	})
	if err != nil {
		return types.NewErr("object: %v", err)
	}
	sort.Strings(keys)
	return sortedMap{Mapper: types.NewRefValMap(adapter{}, m), keys: keys}
}

func (o *lazyObject) mapper() traits.Mapper {
	if m, ok := o.whole().(traits.Mapper); ok {
		return m
	}
	return nil
}

// Find returns the member key, decoding only it.
func (o *lazyObject) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok || o.role.hidden(string(k)) {
		return nil, false
	}
	v, found := o.member(string(k))
	if !found {
		return nil, false
	}
	val, err := valueAt(o.doc, v, o.role.child(string(k)))
	if err != nil {
		return types.NewErr("object: %v", err), true
	}
	return val, true
}

func (o *lazyObject) Get(key ref.Val) ref.Val {
	if v, ok := o.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

func (o *lazyObject) Contains(key ref.Val) ref.Val {
	_, ok := o.Find(key)
	return types.Bool(ok)
}

func (o *lazyObject) Iterator() traits.Iterator {
	if m := o.mapper(); m != nil {
		return m.Iterator()
	}
	return (&sortedMap{}).Iterator()
}

func (o *lazyObject) Size() ref.Val {
	if m := o.mapper(); m != nil {
		return m.Size()
	}
	return o.whole()
}

func (o *lazyObject) ConvertToNative(t reflect.Type) (any, error) {
	return o.whole().ConvertToNative(t)
}

func (o *lazyObject) ConvertToType(t ref.Type) ref.Val {
	if t == types.MapType {
		return o
	}
	return o.whole().ConvertToType(t)
}

func (o *lazyObject) Equal(other ref.Val) ref.Val {
	if x, ok := other.(*lazyObject); ok {
		other = x.whole()
	}
	return o.whole().Equal(other)
}

func (o *lazyObject) Type() ref.Type { return types.MapType }
func (o *lazyObject) Value() any     { return o.whole().Value() }

// each calls f with every member's key (decoded) and the offset of its
// value, in order, until f returns an error.
func (o *lazyObject) each(f func(key []byte, v int) error) error {
	d := o.doc.Data
	i := skipSpace(d, o.start+1) // after '{'
	for i < len(d) && d[i] == '"' {
		kEnd, err := o.doc.SkipTrusted(i, 0)
		if err != nil {
			return err
		}
		k := d[i+1 : kEnd-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			k = jsonscan.Unquote(nil, k)
		}
		i = skipSpace(d, kEnd)
		i = skipSpace(d, i+1) // ':'
		if err := f(k, i); err != nil {
			return err
		}
		if i, err = o.doc.SkipTrusted(i, 0); err != nil {
			return err
		}
		i = skipSpace(d, i)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	return nil
}

// member returns where the value of member key starts, reading the
// members before it only (the first of duplicate keys, as the engine's
// rules read them).
func (o *lazyObject) member(key string) (int, bool) {
	d := o.doc.Data
	i := skipSpace(d, o.start+1) // after '{'
	for i < len(d) && d[i] == '"' {
		kEnd, err := o.doc.SkipTrusted(i, 0)
		if err != nil {
			return 0, false
		}
		k := d[i:kEnd]
		i = skipSpace(d, kEnd)
		i = skipSpace(d, i+1) // ':'
		if keyIs(k, key) {
			return i, true
		}
		if i, err = o.doc.SkipTrusted(i, 0); err != nil {
			return 0, false
		}
		i = skipSpace(d, i)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	return 0, false
}

// keyIs reports whether the quoted key k is key.
func keyIs(k []byte, key string) bool {
	inner := k[1 : len(k)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == key
	}
	return string(jsonscan.Unquote(nil, inner)) == key
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// String is for error messages.
func (o *lazyObject) String() string { return fmt.Sprintf("%.60s", o.raw()) }

// appendJSON appends the JSON of the object as encode writes a map: its
// members in key order (the first of duplicate keys), hidden ones left
// out, strings as json.Marshal writes them and numbers as the API server
// does. It reads the object's bytes, building no value: an expression that
// gives back self, or an object of it, costs no decoding.
func (o *lazyObject) appendJSON(b []byte) ([]byte, error) {
	b, _, err := appendObjectAt(b, o.doc, o.start, o.role)
	return b, err
}

// appendValueAt appends the JSON of the value at doc.Data[i] (valid JSON)
// as encode writes the value valueAt reads there, and returns the offset
// after it; r is the role of an object.
func appendValueAt(b []byte, doc *jsonscan.Scanner, i int, r role) ([]byte, int, error) {
	d := doc.Data
	i = skipSpace(d, i)
	if i >= len(d) {
		return nil, i, jsonscan.Errorf(i, "unexpected end of JSON input")
	}
	switch d[i] {
	case '{':
		return appendObjectAt(b, doc, i, r)
	case '[':
		b = append(b, '[')
		j := skipSpace(d, i+1)
		if j < len(d) && d[j] == ']' {
			return append(b, ']'), j + 1, nil
		}
		for n := 0; j < len(d); n++ {
			if n > 0 {
				b = append(b, ',')
			}
			var err error
			if b, j, err = appendValueAt(b, doc, j, inside); err != nil {
				return nil, j, err
			}
			j = skipSpace(d, j)
			if j < len(d) && d[j] == ',' {
				j = skipSpace(d, j+1)
				continue
			}
			if j < len(d) && d[j] == ']' {
				return append(b, ']'), j + 1, nil
			}
			break
		}
		return nil, j, jsonscan.Errorf(j, "unexpected end of JSON input")
	case '"':
		e, err := doc.SkipTrusted(i, 0)
		if err != nil {
			return nil, e, err
		}
		inner := d[i+1 : e-1]
		if bytes.IndexByte(inner, '\\') >= 0 {
			inner = jsonscan.Unquote(nil, inner)
		}
		return convert.AppendJSONString(b, inner), e, nil
	case 't':
		return append(b, "true"...), i + 4, nil
	case 'f':
		return append(b, "false"...), i + 5, nil
	case 'n':
		return append(b, "null"...), i + 4, nil
	}
	e, err := doc.SkipTrusted(i, 0)
	if err != nil {
		return nil, e, err
	}
	v, err := number(d[i:e])
	if err != nil {
		return nil, e, err
	}
	b, err = encode(b, v)
	return b, e, err
}

// rawMember is a member of an object being written: its decoded key and
// the offset of its value.
type rawMember struct {
	key []byte
	v   int
}

// appendObjectAt is appendValueAt for the object at doc.Data[i].
func appendObjectAt(b []byte, doc *jsonscan.Scanner, i int, r role) ([]byte, int, error) {
	d := doc.Data
	var buf [16]rawMember
	ms := buf[:0]
	i = skipSpace(d, i+1) // after '{'
	for i < len(d) && d[i] == '"' {
		kEnd, err := doc.SkipTrusted(i, 0)
		if err != nil {
			return nil, kEnd, err
		}
		k := d[i+1 : kEnd-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			k = jsonscan.Unquote(nil, k)
		}
		i = skipSpace(d, kEnd)
		i = skipSpace(d, i+1) // ':'
		ms = append(ms, rawMember{key: k, v: i})
		if i, err = doc.SkipTrusted(i, 0); err != nil {
			return nil, i, err
		}
		i = skipSpace(d, i)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	if i >= len(d) || d[i] != '}' {
		return nil, i, jsonscan.Errorf(i, "unexpected end of JSON input")
	}
	end := i + 1
	// In key order; of duplicate keys the first, as whole and Find read
	// them (the sort is stable).
	slices.SortStableFunc(ms, func(a, b rawMember) int { return bytes.Compare(a.key, b.key) })
	b = append(b, '{')
	first := true
	for n := range ms {
		m := &ms[n]
		if n > 0 && bytes.Equal(m.key, ms[n-1].key) || r.hidden(string(m.key)) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(convert.AppendJSONString(b, m.key), ':')
		var err error
		if b, _, err = appendValueAt(b, doc, m.v, r.child(string(m.key))); err != nil {
			return nil, end, err
		}
	}
	return append(b, '}'), end, nil
}
