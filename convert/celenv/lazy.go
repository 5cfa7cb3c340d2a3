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
	once       sync.Once
	full       ref.Val
}

// raw returns the JSON of the object.
func (o *lazyObject) raw() []byte {
	if o.end < 0 {
		o.end, _ = o.doc.SkipTrusted(o.start, 0)
	}
	return o.doc.Data[o.start:o.end]
}

// docs pools the scanners of lazily read documents: one an evaluation,
// given back when it is done (nothing of it outlives the evaluation).
var docs = sync.Pool{New: func() any { return new(jsonscan.Scanner) }}

// newDoc returns a scanner of raw (valid JSON), and the function that
// gives it back.
func newDoc(raw []byte) (*jsonscan.Scanner, func()) {
	s := docs.Get().(*jsonscan.Scanner)
	s.Reset(raw)
	return s, func() {
		s.Trim()
		docs.Put(s)
	}
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
func objectValue(doc *jsonscan.Scanner) (ref.Val, error) { return valueAt(doc, 0, root) }

var (
	_ traits.Mapper = (*lazyObject)(nil)
	_ ref.Val       = (*lazyObject)(nil)
)

// valueAt returns the value at doc.Data[i] as a CEL value: an object
// lazily, anything else decoded; r is the role of an object.
func valueAt(doc *jsonscan.Scanner, i int, r role) (ref.Val, error) {
	i = skipSpace(doc.Data, i)
	if i < len(doc.Data) && doc.Data[i] == '{' {
		return &lazyObject{doc: doc, start: i, end: -1, role: r}, nil
	}
	end, err := doc.SkipTrusted(i, 0)
	if err != nil {
		return nil, err
	}
	v, err := decode(doc.Data[i:end])
	if err != nil {
		return nil, err
	}
	return adapter{}.NativeToValue(v), nil
}

// whole decodes the object once.
func (o *lazyObject) whole() ref.Val {
	o.once.Do(func() {
		v, err := decode(o.raw())
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
	var s string
	return json.Unmarshal(k, &s) == nil && s == key
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// String is for error messages.
func (o *lazyObject) String() string { return fmt.Sprintf("%.60s", o.raw()) }
