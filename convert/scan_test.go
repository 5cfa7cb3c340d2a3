package convert

import (
	"encoding/json"
	"strings"
	"testing"
)

var scanSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `-1.5E-3`, `true`, `false`, `null`, ` {"a" : [1, {"b":null}] } `,
	`{"a":"\u00e9\n\"\\\/"}`, `"\ud83c\udf89"`, `{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `1e`, `-`, `"\x"`, `"\u12"`,
	"\"a\tb\"", `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, `tru`, `nul`, `{"a":1}}`, ``, ` `, "\"\xff\"",
	`{"spec":{"replicas":3,"x":[{"y":{}}]},"apiVersion":"a/b"}`, `{"spec":{"replicas":1,"replicas":2}}`,
}

// FuzzScanAgreesWithEncodingJSON holds the hand-written scanner to
// encoding/json: the same inputs are valid.
func FuzzScanAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	t := &trie{}
	t.add(MustPath("spec.template.x"))
	t.add(MustPath("metadata.annotations"))
	f.Fuzz(func(tt *testing.T, data []byte) {
		st := getState()
		defer putState(st)
		_, err := parseWith(st, data, &trie{})
		if got, want := err == nil, json.Valid(data); got != want {
			tt.Fatalf("scanner valid=%v, encoding/json valid=%v, err=%v, input %q", got, want, err, data)
		}
		// With objects expanded on a trie the verdict is the same, except
		// for duplicate keys on the trie, which the engine refuses.
		_, err2 := parseWith(st, data, t)
		if (err2 == nil) != (err == nil) {
			if se, ok := err2.(*syntaxError); !ok || len(se.msg) < 9 || se.msg[:9] != "duplicate" {
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
		if (err == nil) != json.Valid([]byte(s)) {
			t.Errorf("%q: scanner err=%v, encoding/json valid=%v", s, err, json.Valid([]byte(s)))
		}
	}
}

func TestDeepNesting(t *testing.T) {
	deep := make([]byte, 0, 2*maxDepth+4)
	for i := 0; i < maxDepth+1; i++ {
		deep = append(deep, '[')
	}
	for i := 0; i < maxDepth+1; i++ {
		deep = append(deep, ']')
	}
	st := getState()
	defer putState(st)
	if _, err := parseWith(st, deep, &trie{}); err == nil || json.Valid(deep) {
		t.Fatalf("nesting past %d accepted (encoding/json valid=%v)", maxDepth, json.Valid(deep))
	}
	ok := deep[1 : len(deep)-1]
	if _, err := parseWith(st, ok, &trie{}); err != nil || !json.Valid(ok) {
		t.Fatalf("nesting of %d refused: %v", maxDepth, err)
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
				if (err == nil) != json.Valid([]byte(doc)) {
					t.Errorf("%q: scanner err=%v, encoding/json valid=%v", doc, err, json.Valid([]byte(doc)))
				}
			}
		}
	}
}
