package celenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/hubspoke/hubspoke/convert"
)

// lazyObject is a CEL map over the raw JSON of an object (valid, as the
// engine hands it over) that decodes a member only when an expression
// reads it: object.metadata.namespace reads three members of a 3 KB
// object, not all of it. Anything that needs the whole map (iteration,
// size, equality, conversion) decodes it once, into the sorted map every
// decoded object is.
type lazyObject struct {
	raw  []byte
	role role // where it is in the object context
	once sync.Once
	full ref.Val
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

// objectValue returns the whole object raw (valid JSON) as the CEL value
// of the variable object: lazily, without the preserved annotation.
func objectValue(raw []byte) (ref.Val, error) { return lazyValueAs(raw, root) }

var (
	_ traits.Mapper = (*lazyObject)(nil)
	_ ref.Val       = (*lazyObject)(nil)
)

// lazyValue returns raw (valid JSON) as a CEL value: an object lazily,
// anything else decoded.
func lazyValue(raw []byte) (ref.Val, error) { return lazyValueAs(raw, inside) }

func lazyValueAs(raw []byte, r role) (ref.Val, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		return &lazyObject{raw: raw, role: r}, nil
	}
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return adapter{}.NativeToValue(v), nil
}

// whole decodes the object once.
func (o *lazyObject) whole() ref.Val {
	o.once.Do(func() {
		v, err := decode(o.raw)
		if err != nil {
			o.full = types.NewErr("object: %v", err)
			return
		}
		if o.role != inside {
			hidePreserved(v, o.role)
		}
		o.full = adapter{}.NativeToValue(v)
	})
	return o.full
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
	v, found := member(o.raw, string(k))
	if !found {
		return nil, false
	}
	val, err := lazyValueAs(v, o.role.child(string(k)))
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

// hidePreserved removes the preserved annotation from v, decoded JSON of
// role r.
func hidePreserved(v any, r role) {
	m, _ := v.(map[string]any)
	switch r {
	case root:
		hidePreserved(m["metadata"], metadata)
	case metadata:
		if an, ok := m["annotations"].(map[string]any); ok {
			delete(an, convert.PreservedAnnotation)
		}
	case annotations:
		delete(m, convert.PreservedAnnotation)
	}
}

// member returns the raw value of the member key of the object raw
// (valid JSON), reading members only up to it; the last one when the key
// is there twice, as the API server reads it.
func member(raw []byte, key string) ([]byte, bool) {
	i := skipSpace(raw, 1) // after '{'
	var found []byte
	ok := false
	for i < len(raw) && raw[i] == '"' {
		kEnd := stringEnd(raw, i)
		k := raw[i:kEnd]
		i = skipSpace(raw, kEnd)
		i = skipSpace(raw, i+1) // ':'
		vEnd := valueEnd(raw, i)
		if keyIs(k, key) {
			found, ok = raw[i:vEnd], true
		}
		i = skipSpace(raw, vEnd)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return found, ok
}

// keyIs reports whether the quoted key k is key.
func keyIs(k []byte, key string) bool {
	inner := k[1 : len(k)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == key
	}
	var s string
	return json.Unmarshal(k, &s) == nil && s == key
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset after the string starting at d[i].
func stringEnd(d []byte, i int) int {
	for j := i + 1; j < len(d); {
		k := bytes.IndexAny(d[j:], `"\`)
		if k < 0 {
			return len(d)
		}
		j += k
		if d[j] == '\\' {
			j += 2
			continue
		}
		return j + 1
	}
	return len(d)
}

// valueEnd returns the offset after the value starting at d[i].
func valueEnd(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		return stringEnd(d, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(d); j++ {
			switch d[j] {
			case '"':
				j = stringEnd(d, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(d)
	}
	j := i
	for j < len(d) && d[j] != ',' && d[j] != '}' && d[j] != ']' && d[j] != ' ' && d[j] != '\t' && d[j] != '\n' && d[j] != '\r' {
		j++
	}
	return j
}

// String is for error messages.
func (o *lazyObject) String() string { return fmt.Sprintf("%.60s", o.raw) }
