package celenv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzScalar: the fast path for scalars agrees with encoding/json on every
// input it accepts.
func FuzzScalar(f *testing.F) {
	for _, s := range []string{`1`, `-0`, `1.5e3`, `"a"`, `"\u00e9"`, `"é"`, `""`, `true`, `null`, `"a\"b"`, `9223372036854775808`, "\"\x01\"", `"\xff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := scalar(bytes.Trim(raw, " \t\r\n"))
		if !ok {
			return
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil || d.More() {
			t.Fatalf("scalar accepted %q, which is not one JSON value: %v", raw, err)
		}
		want, err := numbers(v)
		if err != nil {
			t.Fatalf("numbers(%v): %v", v, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scalar(%q) = %#v, encoding/json gives %#v", raw, got, want)
		}
	})
}
