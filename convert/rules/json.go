package rules

import (
	"encoding/json"
	"fmt"
)

// jsonMarshal marshals a value decoded from YAML, whose maps may have
// non-string keys.
func jsonMarshal(v any) ([]byte, error) {
	return json.Marshal(normalize(v))
}

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i := range t {
			t[i] = normalize(t[i])
		}
		return t
	}
	return v
}
