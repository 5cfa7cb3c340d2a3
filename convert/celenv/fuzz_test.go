package celenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// FuzzValue: a JSON value read from its bytes (lazily for objects) is the
// value encoding/json decodes (integer literals that fit as int64, other
// numbers as float64, the first of duplicate keys), equal to it as CEL
// compares, and written back (from the bytes, from the read value and
// from every member read at once) as the oracle writes the decoded one.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`1`, `-0`, `1.5e3`, `"a"`, `"\u00e9"`, `"é"`, `""`, `true`, `null`, `"a\"b"`,
		`9223372036854775808`, `{"z":1,"a":[true,null,{"b":2.50}]}`, `{"a":1,"a":2}`, ` [ 1 , "x<y" , {} ] `,
		`{"k\u0041":"\u2028","kA":0,"":{"":[]}}`, `{"m":{"zeta":1,"alpha":2e-7}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var doc jsonscan.Scanner
		doc.Reset(raw)
		if doc.Document(0) != nil {
			return
		}
		decoded, err := oracleDecode(raw)
		if err != nil {
			t.Fatalf("jsonscan accepts %q, encoding/json: %v", raw, err)
		}
		want := oracleEncode(nil, decoded)
		got, err := valueAt(&doc, 0, inside)
		if err != nil {
			t.Fatalf("valueAt(%q): %v", raw, err)
		}
		old := adapter{}.NativeToValue(decoded)
		if got.Equal(old) != types.True || old.Equal(got) != types.True {
			t.Fatalf("valueAt(%q) = %v, not equal to the decoded %v", raw, got, old)
		}
		for name, v := range map[string]ref.Val{"read": got, "decoded": old} {
			out, err := encode(nil, v)
			if err != nil || string(out) != string(want) {
				t.Fatalf("encode of the %s value of %q = %s, %v; want %s", name, raw, out, err, want)
			}
		}
		if o, ok := got.(*lazyObject); ok {
			out, err := encode(nil, o.whole())
			if err != nil || string(out) != string(want) {
				t.Fatalf("encode of all members of %q = %s, %v; want %s", raw, out, err, want)
			}
		}
	})
}

// oracleDecode decodes raw with encoding/json as the API server reads
// JSON: numbers as int64 when they are integer literals that fit, else
// float64; of duplicate keys the first (as the engine reads them).
func oracleDecode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := oracleValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

func oracleValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			l := []any{}
			for d.More() {
				v, err := oracleValue(d)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := d.Token()
			return l, err
		}
		m := map[string]any{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := oracleValue(d)
			if err != nil {
				return nil, err
			}
			if _, dup := m[k.(string)]; !dup {
				m[k.(string)] = v
			}
		}
		_, err := d.Token()
		return m, err
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
		}
		return strconv.ParseFloat(s, 64)
	}
	return tok, nil
}

// oracleEncode writes decoded JSON with encoding/json's strings, keys in
// order and the API server's numbers.
func oracleEncode(b []byte, v any) []byte {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			q, _ := json.Marshal(k)
			b = oracleEncode(append(append(b, q...), ':'), t[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = oracleEncode(b, e)
		}
		return append(b, ']')
	case int64:
		return strconv.AppendInt(b, t, 10)
	case float64:
		return apirules.AppendFloat(b, t)
	}
	q, _ := json.Marshal(v)
	return append(b, q...)
}
