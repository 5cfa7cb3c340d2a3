package apirules

import (
	"testing"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// FuzzAnnotationsSize: AnnotationsSize counts what stringMap decodes, as
// the API server's validation sums it (annotationsSize), and fails where
// stringMap fails.
func FuzzAnnotationsSize(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"bc"}`, `{"\u00e9":"\u00e9"}`, `{"a":"x","a":"yy"}`, `{"b":"1","a":"x","b":"22","a":""}`,
		`{"a":1}`, `{"k":"\"q\"\\n","k\u0041":"kA"}`, `{"a" : "b" , "c":"d"}`, `{"a":"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		i := jsonscan.SkipSpace(raw, 0)
		if i >= len(raw) || raw[i] != '{' {
			return // null and other kinds are told apart before either counts
		}
		m, merr := stringMap(raw[i:])
		got, err := AnnotationsSize(raw)
		if (err != nil) != (merr != nil) {
			t.Fatalf("AnnotationsSize(%q) error %v, stringMap %v", raw, err, merr)
		}
		if err == nil && got != annotationsSize(m) {
			t.Fatalf("AnnotationsSize(%q) = %d, the decoded map sums to %d", raw, got, annotationsSize(m))
		}
	})
}
