package convert

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// TestPreservedEncodingIsJSON: the annotation's encoder writes exactly
// what json.Marshal writes, keys, raw values and strings of any content
// included, so an annotation written before it came is written the same.
func TestPreservedEncodingIsJSON(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{"<a&b>", "\u2028\u2029", "\x00\x1f\x7f", "\"\\", "/spec/a~1b", "é", "\xff\xfe"}))
	raw := rapid.SampledFrom([]string{`1`, `"x"`, `{"a": [1, 2]}`, `"<&>"`, `"\u2028"`, ` true `, `null`, `-0`, `1.50e3`, `{"k":"é"}`, `[]`})
	rapid.Check(t, func(t *rapid.T) {
		data := map[string]*stash{}
		for range rapid.IntRange(0, 3).Draw(t, "versions") {
			s := &stash{}
			if rapid.Bool().Draw(t, "fields?") {
				s.Fields = map[string]json.RawMessage{str.Draw(t, "key"): json.RawMessage(raw.Draw(t, "raw"))}
			}
			if rapid.Bool().Draw(t, "exact?") {
				e := exactValue{Value: json.RawMessage(raw.Draw(t, "value"))}
				if rapid.Bool().Draw(t, "as?") {
					e.As = json.RawMessage(raw.Draw(t, "as"))
				}
				s.Exact = map[string]exactValue{str.Draw(t, "key"): e}
			}
			if rapid.Bool().Draw(t, "order?") {
				s.Order = map[string][]string{str.Draw(t, "key"): rapid.SliceOf(str).Draw(t, "order")}
			}
			if rapid.Bool().Draw(t, "presence?") {
				s.Presence = map[string]bool{str.Draw(t, "key"): rapid.Bool().Draw(t, "set")}
			}
			data[str.Draw(t, "version")] = s
		}
		want, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendPreserved(nil, data)
		if !ok || string(got) != string(want) {
			t.Fatalf("appendPreserved:\n got %s\nwant %s", got, want)
		}
		wantQ, _ := json.Marshal(string(want))
		if gotQ := appendJSONString(nil, got); string(gotQ) != string(wantQ) {
			t.Fatalf("appendJSONString:\n got %s\nwant %s", gotQ, wantQ)
		}
	})
}
