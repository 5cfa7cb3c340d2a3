package convert

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	kjson "sigs.k8s.io/json"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// apiServerAccepts is the scanner's oracle (see internal/jsonscan): JSON
// the API server's decoder takes without an error and without replacing
// invalid UTF-8.
func apiServerAccepts(d []byte) bool {
	if !json.Valid(d) || !utf8.Valid(d) {
		return false
	}
	var v any
	return kjson.UnmarshalCaseSensitivePreserveInts(d, &v) == nil
}

var scanSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `-1.5E-3`, `true`, `false`, `null`, ` {"a" : [1, {"b":null}] } `,
	`{"a":"\u00e9\n\"\\\/"}`, `"\ud83c\udf89"`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `1e`, `-`, `"\x"`, `"\u12"`,
	"\"a\tb\"", `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, `tru`, `nul`, `{"a":1}}`, ``, ` `, "\"\xff\"",
	`{"spec":{"replicas":3,"x":[{"y":{}}]},"apiVersion":"a/b"}`, `{"spec":{"replicas":1,"replicas":2}}`,
	// Integers where a float64 ends (1e308 written out is accepted, 309
	// nines are not), inside objects and lists as the engine reads them.
	`{"spec":{"x":1` + strings.Repeat("0", 308) + `}}`, `{"spec":{"x":` + strings.Repeat("9", 309) + `}}`,
	`{"spec":{"l":[1,` + strings.Repeat("9", 309) + `]}}`, `{"spec":{"x":-` + strings.Repeat("9", 309) + `}}`,
	`{"metadata":{"annotations":{"a":"b"}},"spec":{"x":` + strings.Repeat("9", 305) + `}}`,
}

// FuzzScanAgreesWithAPIServer holds the engine's parse to the scanner's
// oracle: the same inputs are valid, with or without a trie.
func FuzzScanAgreesWithAPIServer(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	t := &trie{}
	t.add(MustPath("spec.template.x"))
	t.add(MustPath("metadata.annotations"))
	t.add(MustPath("spec.x[*].y"))
	t.add(MustPath("spec.m.*.z"))
	t.add(MustPath("spec.l[*][*]"))
	f.Fuzz(func(tt *testing.T, data []byte) {
		st := getState()
		defer putState(st)
		_, err := parseWith(st, data, &trie{})
		if got, want := err == nil, apiServerAccepts(data); got != want {
			tt.Fatalf("scanner valid=%v, oracle valid=%v, err=%v, input %q", got, want, err, data)
		}
		// With objects expanded on a trie the verdict is the same, except
		// for duplicate keys on the trie, which the engine refuses.
		_, err2 := parseWith(st, data, t)
		if (err2 == nil) != (err == nil) {
			if se, ok := err2.(*syntaxError); !ok || len(se.Msg) < 9 || se.Msg[:9] != "duplicate" {
				tt.Fatalf("trie changed the verdict: %v vs %v, input %q", err, err2, data)
			}
		}
	})
}

func TestScanSeeds(t *testing.T) {
	for _, s := range scanSeeds {
		st := getState()
		_, err := parseWith(st, []byte(s), &trie{})
		putState(st)
		if (err == nil) != apiServerAccepts([]byte(s)) {
			t.Errorf("%q: scanner err=%v, oracle valid=%v", s, err, apiServerAccepts([]byte(s)))
		}
	}
}

// TestDeepNesting: an object nests at most as deep as the API server
// decodes it inside a ConversionReview, 10000 levels counted from the
// review, so 9997 from the object; with or without a trie.
func TestDeepNesting(t *testing.T) {
	const limit = jsonscan.MaxDepth - jsonscan.EnvelopeDepth
	nested := func(n int) []byte { // an object n levels deep
		return []byte(`{"spec":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
	}
	tr := &trie{}
	tr.add(MustPath("spec"))
	for _, tc := range []struct {
		name string
		t    *trie
	}{{"no trie", &trie{}}, {"trie", tr}} {
		t.Run(tc.name, func(t *testing.T) {
			st := getState()
			defer putState(st)
			if _, err := parseWith(st, nested(limit+1), tc.t); err == nil || !strings.Contains(err.Error(), "exceeded maximum nesting depth") {
				t.Fatalf("nesting of %d accepted or refused for another reason: %v", limit+1, err)
			}
			if _, err := parseWith(st, nested(limit), tc.t); err != nil {
				t.Fatalf("nesting of %d refused: %v", limit, err)
			}
		})
	}
	objs := []byte(strings.Repeat(`{"a":`, limit) + "1" + strings.Repeat("}", limit))
	deepTrie := &trie{}
	deepTrie.add(Path{segs: strings.Split(strings.Repeat("a.", limit), ".")[:limit]})
	st := getState()
	defer putState(st)
	if _, err := parseWith(st, objs, deepTrie); err != nil {
		t.Fatalf("objects nested %d deep on the trie refused: %v", limit, err)
	}
	objs = []byte(`{"a":` + string(objs) + `}`)
	if _, err := parseWith(st, objs, deepTrie); err == nil {
		t.Fatalf("objects nested %d deep on the trie accepted", limit+1)
	}
}

func parseWith(st *state, data []byte, t *trie) (node, error) {
	st.p.reset(data)
	return st.p.parseDocument(t)
}

// TestScanAcrossWords puts escapes, quotes, control characters and the end
// of input at and around the 64-byte boundaries of the stop bits, where the
// scanner moves from one word of marks to the next.
func TestScanAcrossWords(t *testing.T) {
	tails := []string{`\"`, `\\`, `\u00e9`, `\u12`, `\x`, "\n", `"`, `\`, `\\\"`, ``}
	for _, tail := range tails {
		for pad := 50; pad < 140; pad++ {
			body := strings.Repeat("a", pad) + tail
			for _, doc := range []string{
				`{"k":"` + body + `","n":1}`,
				`["` + body + `"]`,
				`{"` + body + `":[]}`,
				`"` + body,
			} {
				st := getState()
				_, err := parseWith(st, []byte(doc), &trie{})
				putState(st)
				if (err == nil) != apiServerAccepts([]byte(doc)) {
					t.Errorf("%q: scanner err=%v, oracle valid=%v", doc, err, apiServerAccepts([]byte(doc)))
				}
			}
		}
	}
}
