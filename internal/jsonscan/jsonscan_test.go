package jsonscan

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hubspoke/hubspoke/internal/stopbits"
	kjson "sigs.k8s.io/json"
)

// apiServerAccepts is the oracle: the grammar of encoding/json, and what
// the API server's decoder (sigs.k8s.io/json, as
// k8s.io/apimachinery/pkg/util/json.Unmarshal calls it) decodes without an
// error and without replacing invalid UTF-8.
func apiServerAccepts(d []byte) bool {
	if !json.Valid(d) || !utf8.Valid(d) {
		return false
	}
	var v any
	return kjson.UnmarshalCaseSensitivePreserveInts(d, &v) == nil
}

func scan(d []byte) error {
	var s Scanner
	s.Reset(d)
	return s.Document(0)
}

func TestScannerTable(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name, in string
		ok       bool
		msg      string // in the error when !ok
	}{
		{name: "object", in: `{"a":[1,-0.5e+3,true,false,null,{"":""}],"b":"\u00e9\ud83d\ude00"}`, ok: true},
		{name: "utf-8", in: `"héllo 😀"`, ok: true},
		{name: "lone surrogate escape", in: `"\ud800"`, ok: true},
		{name: "invalid utf-8", in: "\"a\xffb\"", msg: "invalid UTF-8 in string"},
		{name: "raw surrogate", in: "\"\xed\xa0\x80\"", msg: "invalid UTF-8 in string"},
		{name: "truncated utf-8", in: "\"\xc3\"", msg: "invalid UTF-8 in string"},
		{name: "int64 max", in: `9223372036854775807`, ok: true},
		{name: "beyond int64", in: `123456789012345678901234567890`, ok: true},
		{name: "largest float", in: `1.7976931348623157e308`, ok: true},
		{name: "underflow", in: `1e-400`, ok: true},
		{name: "299 digits", in: strings.Repeat("9", 299), ok: true},
		{name: "400 digits", in: strings.Repeat("9", 400), msg: "out of range"},
		// Integers of 300 to 309 digits, where a float64 ends, inside an
		// object and an array as at the top: the scan's fast path for
		// plain integers must hand them to the range check.
		{name: "1e308 written out in an object", in: `{"a":1` + strings.Repeat("0", 308) + `}`, ok: true},
		{name: "1e308 written out, nested", in: `{"a":{"b":[1` + strings.Repeat("0", 308) + `]}}`, ok: true},
		{name: "300 nines in an object", in: `{"a":` + strings.Repeat("9", 300) + `}`, ok: true},
		{name: "308 nines in an object", in: `{"a":` + strings.Repeat("9", 308) + `}`, ok: true},
		{name: "309 nines in an object", in: `{"a":` + strings.Repeat("9", 309) + `}`, msg: "out of range"},
		{name: "309 nines in an array", in: `[` + strings.Repeat("9", 309) + `]`, msg: "out of range"},
		{name: "-309 nines in an object", in: `{"a":-` + strings.Repeat("9", 309) + `}`, msg: "out of range"},
		{name: "309 nines at the top", in: strings.Repeat("9", 309), msg: "out of range"},
		{name: "largest float written out", in: `{"a":179769313486231570` + strings.Repeat("0", 291) + `}`, ok: true},
		{name: "just above the largest float", in: `{"a":179769313486231581` + strings.Repeat("0", 291) + `}`, msg: "out of range"},
		{name: "1e400", in: `[1e400]`, msg: "number 1e400 is out of range"},
		{name: "-1e309", in: `{"a":-1e309}`, msg: "out of range"},
		{name: "depth 10000", in: deep(10000), ok: true},
		{name: "depth 10001", in: deep(10001), msg: "exceeded maximum nesting depth 10000"},
		{name: "control character", in: "\"a\x01\"", msg: "invalid control character"},
		{name: "bad escape", in: `"\x"`, msg: "invalid escape character"},
		{name: "trailing comma", in: `{"a":1,}`, msg: "looking for beginning of object key"},
		{name: "space around colons", in: `{"a" : 1, "\u0062"	:2, "c"
:{"d" :3}}`, ok: true},
		{name: "no colon", in: `{"a" 1}`, msg: `invalid character '1' after object key`},
		{name: "no colon after an escaped key", in: `{"\u0061" 1}`, msg: `invalid character '1' after object key`},
		{name: "no colon after a long key", in: `{"` + strings.Repeat("k", 70) + `"}`, msg: `invalid character '}' after object key`},
		{name: "trailing data", in: `{} x`, msg: "unexpected data after the top-level value"},
		{name: "bad number", in: `1.`, msg: "no digits after the decimal point"},
		{name: "empty", in: ``, msg: "unexpected end of JSON input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := scan([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("scan: %v, want ok=%v", err, tc.ok)
			}
			if got := apiServerAccepts([]byte(tc.in)); got != tc.ok {
				t.Fatalf("the oracle says %v, the table %v: fix the table", got, tc.ok)
			}
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.msg) {
					t.Fatalf("error %v, want a *SyntaxError saying %q", err, tc.msg)
				}
			}
		})
	}
}

// FuzzScanner holds the scanner to the oracle, and Object, Array and
// SkipTrusted to Value.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-0.5e+3,true,false,null,{"":""}]}`, `"\u00e9\ud83d\ude00"`, "\"\xff\"", `1e400`,
		`[[[[]]]]`, `"\u12"`, `1.5e`, `-`, `{"a":1,}`, `{"a" 1}`, `{"k\"ey":"v\\"}`, "\"é\"", `1E-400`,
		strings.Repeat("1", 320), strings.Repeat("1", 320) + ".5",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		err := scan(d)
		if want := apiServerAccepts(d); (err == nil) != want {
			t.Fatalf("scanner error %v, oracle accepts: %v", err, want)
		}
		if ref := scanMarkByMark(d); !sameError(err, ref) {
			t.Fatalf("scanner error %v, read mark by mark: %v", err, ref)
		}
		var s Scanner
		s.Reset(d)
		i := SkipSpace(d, 0)
		if i >= len(d) {
			return
		}
		vend, verr := s.Value(i, 0)
		var end int
		var oerr error
		switch d[i] {
		case '{':
			end, oerr = s.Object(i, 1, func(_ []byte, v int) (int, error) { return s.Value(v, 1) })
		case '[':
			end, oerr = s.Array(i, 1, func(_, v int) (int, error) { return s.Value(v, 1) })
		default:
			return
		}
		if (oerr == nil) != (verr == nil) || oerr == nil && end != vend {
			t.Fatalf("Value: %d, %v; Object/Array: %d, %v", vend, verr, end, oerr)
		}
		if verr == nil {
			if tend, err := s.SkipTrusted(i, 0); err != nil || tend != vend {
				t.Fatalf("SkipTrusted: %d, %v; Value: %d", tend, err, vend)
			}
		}
	})
}

func TestStringValue(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`["plain","a\nb\u00e9\ud800x",""]`))
	want := []string{"plain", "a\nbé\uFFFDx", ""}
	_, err := s.Array(0, 1, func(n, v int) (int, error) {
		str, end, ok, err := s.StringValue(v, 1)
		if !ok || string(str) != want[n] || str == nil {
			t.Errorf("element %d: %q ok=%v, want %q", n, str, ok, want[n])
		}
		return end, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStringsAcrossWords puts strings of every length up to 140 bytes at
// every offset of a 64-byte word of stop bits, with a quote, a backslash, a
// control character or a non-ASCII byte right after the word boundary, and
// holds the scanner to the oracle: StringEnd reads two words at once.
func TestStringsAcrossWords(t *testing.T) {
	inner := []string{`\"`, `\\`, `\\\"`, `\n\"`, "\x01", "é", "\xff", `\u00e9`, `\x`, `"`, `a`}
	for pad := 0; pad < 64; pad++ {
		for n := 0; n < 140; n += 3 {
			for _, in := range inner {
				for shift := -1; shift <= 0; shift++ {
					body := strings.Repeat("a", n)
					// The inner text just past the first word boundary after
					// the opening quote, when the string reaches it, or
					// astride it.
					if at := 64 - (pad + 3) - 1 + shift; at >= 0 && at < n {
						body = body[:at] + in + body[at:]
					}
					for _, doc := range []string{
						`[` + strings.Repeat(" ", pad) + `"` + body + `"]`,
						`{` + strings.Repeat(" ", pad) + `"` + body + `":"` + body + `"}`,
					} {
						d := []byte(doc)
						err := scan(d)
						if want := apiServerAccepts(d); (err == nil) != want {
							t.Fatalf("%q: scanner error %v, oracle accepts: %v", doc, err, want)
						}
					}
				}
			}
		}
	}
}

// TestDeepMixedNesting nests objects and arrays in random order past the
// 64 levels the scanner keeps in a register, with a member or element
// after each container closes, so that every level's kind must come back
// right; then closes one level with the wrong bracket. The oracle decides.
func TestDeepMixedNesting(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, depth := range []int{63, 64, 65, 127, 128, 129, 200} {
		for round := 0; round < 20; round++ {
			kinds := make([]bool, depth) // true: an object
			var b strings.Builder
			for k := range kinds {
				kinds[k] = r.IntN(2) == 0
				if kinds[k] {
					b.WriteString(`{"k":`)
				} else {
					b.WriteString(`[`)
				}
			}
			b.WriteString(`0`)
			wrong := -1
			if round%2 == 1 {
				wrong = r.IntN(depth)
			}
			for k := depth - 1; k >= 0; k-- {
				obj := kinds[k]
				if k == wrong {
					obj = !obj
				}
				if obj {
					b.WriteString(`,"x":1}`)
				} else {
					b.WriteString(`,1]`)
				}
			}
			d := []byte(b.String())
			err := scan(d)
			if want := apiServerAccepts(d); (err == nil) != want {
				t.Fatalf("depth %d, wrong bracket at %d: scanner error %v, oracle accepts: %v", depth, wrong, err, want)
			}
		}
	}
}

// TestCursor walks the strings of random documents with a Cursor, as the
// scanning loops do, and holds each answer to StringEnd's and StringEnd's
// to the bytes. Some strings are passed without the cursor seeing them, and
// some answers are dropped, as happens when a loop hands a value to another
// scanner: the cursor must then decline (0), never answer wrong. Most
// strings of a plain document must be found by the cursor.
func TestCursor(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	inner := []string{`\"`, `\\`, `\n`, "\x01", "é", `\u00e9`}
	for doc := 0; doc < 2000; doc++ {
		var b []byte
		var opens []int
		for len(b) < 600 {
			b = append(b, ",:{[ 0123"[:1+rng.IntN(9)]...)
			opens = append(opens, len(b))
			b = append(b, '"')
			body := []byte(strings.Repeat("a", rng.IntN(16)))
			if doc%2 == 1 && rng.IntN(8) == 0 {
				at := rng.IntN(len(body) + 1)
				body = append(body[:at], append([]byte(inner[rng.IntN(len(inner))]), body[at:]...)...)
			}
			b = append(append(b, body...), '"')
		}
		marks := stopbits.Append(nil, b)
		var c Cursor
		found, plain := 0, 0
		for k, q := range opens {
			if rng.IntN(10) == 0 {
				continue // passed by another scanner
			}
			want := 0
			for j := q + 1; j < len(b) && j < q+65; j++ {
				if c := b[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
					if c == '"' {
						want = j
					}
					break
				}
			}
			j2, c2 := StringEnd(b, marks, q+1)
			if j2 != want {
				t.Fatalf("doc %d string %d at %d: StringEnd says %d, the bytes %d", doc, k, q, j2, want)
			}
			j1, c1 := c.Next(b, q+1)
			if j1 != 0 && j1 != want {
				t.Fatalf("doc %d string %d at %d: the cursor says %d, the bytes %d", doc, k, q, j1, want)
			}
			if want > 0 {
				plain++
			}
			switch {
			case rng.IntN(10) == 0:
				// the answer dropped: the cursor stays where it was
			case j1 > 0:
				c, found = c1, found+1
			case j2 > 0:
				c = c2
			}
		}
		if doc%2 == 0 && found < plain/3 {
			t.Fatalf("doc %d: the cursor found %d of %d plain strings", doc, found, plain)
		}
	}
}

// scanMarkByMark is scan with every escape read mark by mark (no
// escapeRun): the reference for escapeRun's errors and offsets.
func scanMarkByMark(d []byte) error {
	noEscapeRun = true
	defer func() { noEscapeRun = false }()
	return scan(d)
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// TestEscapedBits holds escapedBits to a byte-by-byte reading of random
// words, dense in backslashes, and to every run at the word's end.
func TestEscapedBits(t *testing.T) {
	check := func(b uint64) {
		t.Helper()
		var want uint64
		esc := false
		for k := 0; k < 64; k++ {
			switch {
			case esc:
				want |= 1 << k
				esc = false
			case b>>k&1 != 0:
				esc = true
			}
		}
		if got, carry := escapedBits(b); got != want || carry != esc {
			t.Fatalf("escapedBits(%064b) = %064b, %v; want %064b, %v", b, got, carry, want, esc)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		check(r.Uint64()&r.Uint64() | r.Uint64()&r.Uint64())
		check(r.Uint64())
	}
	for n := 0; n <= 64; n++ { // a run of n backslashes ending at bit 63
		check(^uint64(0) << (64 - n) * uint64(min(n, 1)))
	}
}

// TestEscapeRuns reads strings dense in escapes, valid and not, at every
// offset in a word, with escapeRun and mark by mark: the two must agree on
// the end, the error and its offset, and the oracle on what is valid.
func TestEscapeRuns(t *testing.T) {
	tokens := []string{`\"`, `\\`, `\n`, `\/`, `\t`, `\u00e9`, `\ud83d\ude00`, `a`, `bc`, `é`, `😀`,
		`\\\"`, `\\\\`, `\x`, `\u12`, "\x01", "\\\x01", `\é`, "\xff", "\x01"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		var b strings.Builder
		for n := r.IntN(40); n > 0; n-- {
			tok := tokens[r.IntN(len(tokens))]
			if r.IntN(8) != 0 { // mostly valid tokens: the runs go on
				tok = tokens[r.IntN(12)]
			}
			b.WriteString(tok)
		}
		pad := strings.Repeat(" ", r.IntN(64))
		for _, doc := range []string{
			`[` + pad + `"` + b.String() + `","\"\""]`,
			`{` + pad + `"` + b.String() + `":"` + b.String() + `"}`,
			pad + `"` + b.String(), // unterminated
			pad + `"` + b.String() + `\`,
		} {
			d := []byte(doc)
			err := scan(d)
			if want := apiServerAccepts(d); (err == nil) != want {
				t.Fatalf("%q: scanner error %v, oracle accepts: %v", doc, err, want)
			}
			if ref := scanMarkByMark(d); !sameError(err, ref) {
				t.Fatalf("%q: scanner error %v, read mark by mark: %v", doc, err, ref)
			}
			i := strings.IndexByte(doc, '"')
			var s, ref Scanner
			s.Reset(d)
			ref.Reset(d)
			end, esc, err := s.String(i)
			noEscapeRun = true
			rend, resc, rerr := ref.String(i)
			noEscapeRun = false
			if end != rend || esc != resc || !sameError(err, rerr) {
				t.Fatalf("%q: String = %d, %v, %v; mark by mark %d, %v, %v", doc, end, esc, err, rend, resc, rerr)
			}
		}
	}
}
