package celenv

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// adapter turns decoded JSON into CEL values whose maps iterate in key
// order, so that an expression iterating over an object of the input
// (self.map(k, ...), self.filter(...)) gives the same result every time:
// cel-go iterates a Go map in Go's random order.
type adapter struct{}

func (adapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return sortedMap{Mapper: types.NewDynamicMap(adapter{}, t), keys: keys}
	case []any:
		return types.NewDynamicList(adapter{}, t)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// sortedMap is a CEL map of a JSON object that iterates in key order.
type sortedMap struct {
	traits.Mapper
	keys []string
}

func (m sortedMap) Iterator() traits.Iterator { return &keyIterator{keys: m.keys} }

// keyIterator yields the keys of a sortedMap in order.
type keyIterator struct {
	keys []string
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return types.NewErr("no more keys")
	}
	it.i++
	return types.String(it.keys[it.i-1])
}

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("an iterator has no native form")
}
func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an iterator has no type conversion")
}
func (it *keyIterator) Equal(ref.Val) ref.Val { return types.NewErr("an iterator cannot be compared") }
func (it *keyIterator) Type() ref.Type        { return types.IteratorType }
func (it *keyIterator) Value() any            { return it }
