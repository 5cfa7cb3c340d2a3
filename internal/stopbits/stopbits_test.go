package stopbits

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
)

// reference marks d byte by byte.
func reference(d []byte) []uint64 {
	out := make([]uint64, (len(d)+63)/64)
	for i, c := range d {
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			out[i/64] |= 1 << (i % 64)
		}
	}
	return out
}

func check(t *testing.T, d []byte) {
	t.Helper()
	want := reference(d)
	prefix := []uint64{42}
	got := Append(prefix, d)
	if got[0] != 42 || len(got) != len(want)+1+Pad {
		t.Fatalf("Append kept %v and gave %d words, want 42 and %d", got[:1], len(got)-1, len(want)+Pad)
	}
	for _, w := range got[len(got)-Pad:] {
		if w != 0 {
			t.Fatalf("input %q: a pad word is %064b, want 0", d, w)
		}
	}
	// Reused memory (a pooled scanner's) holds old words: the pad words
	// must be written, not assumed zero.
	dirty := make([]uint64, len(got)+4)
	for k := range dirty {
		dirty[k] = ^uint64(0)
	}
	reused := Append(dirty[:1], d)
	for _, w := range reused[len(reused)-Pad:] {
		if w != 0 {
			t.Fatalf("input %q, reused memory: a pad word is %064b, want 0", d, w)
		}
	}
	for w := range want {
		if got[w+1] != want[w] {
			t.Fatalf("input %q: word %d is %064b, want %064b", d, w, got[w+1], want[w])
		}
	}
	// The plain-Go path must agree with whatever path Append took.
	if len(d) >= 64 {
		blocks := len(d) / 64
		g := make([]uint64, blocks)
		genericWords(g, d[:blocks*64])
		for w := range g {
			if g[w] != want[w] {
				t.Fatalf("input %q: generic word %d is %064b, want %064b", d, w, g[w], want[w])
			}
		}
	}
	// Quotes and backslashes of each whole block, both paths.
	for b := 0; b+64 <= len(d); b += 64 {
		var wantQ, wantB uint64
		for k, c := range d[b : b+64] {
			if c == '"' {
				wantQ |= 1 << k
			}
			if c == '\\' {
				wantB |= 1 << k
			}
		}
		blk := (*[64]byte)(d[b : b+64])
		if q, bs := QuotesBackslashes(blk); q != wantQ || bs != wantB {
			t.Fatalf("input %q: QuotesBackslashes of block %d = %064b, %064b, want %064b, %064b", d, b/64, q, bs, wantQ, wantB)
		}
		if q, bs := genericQuotesBackslashes(blk); q != wantQ || bs != wantB {
			t.Fatalf("input %q: generic QuotesBackslashes of block %d = %064b, %064b, want %064b, %064b", d, b/64, q, bs, wantQ, wantB)
		}
	}
	for i := 0; i <= len(d); i++ {
		wantNext := -1
		for j := i; j < len(d); j++ {
			if c := d[j]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				wantNext = j
				break
			}
		}
		if n := Next(got[1:], i); n != wantNext {
			t.Fatalf("input %q: Next(%d) = %d, want %d", d, i, n, wantNext)
		}
	}
}

func TestEveryByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 130; pos += 7 {
			d := make([]byte, 140)
			for i := range d {
				d[i] = 'a'
			}
			d[pos] = byte(c)
			check(t, d[:pos+1+c%5])
		}
	}
}

func TestRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0x9f, 0xa2, 0xdc, 0xff, 'a'}
	for n := 0; n < 300; n++ {
		d := make([]byte, r.IntN(400))
		for i := range d {
			d[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(t, d)
	}
}

func FuzzAppend(f *testing.F) {
	f.Add([]byte(`{"a":"b\"c\\d\n"}`))
	f.Add(make([]byte, 200))
	f.Fuzz(func(t *testing.T, d []byte) { check(t, d) })
}

// BenchmarkAppend marks documents of a few sizes. The engine marks each
// object of a review on its own, so the cost of a call matters as much as
// the cost of a byte: the small sizes show it (on some CPUs a legacy SSE
// instruction after a 256-bit one once cost 300 ns a call, more than the
// marks of a 4 KiB object).
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{0, 100, 4 << 10, 64 << 10} {
		d := make([]byte, size)
		for i := range d {
			d[i] = "abc\"\\\x01é 0123456789"[i%18]
		}
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			var m []uint64
			for b.Loop() {
				m = Append(m[:0], d)
			}
		})
	}
}

// TestNoLegacySSEWithDirtyUpper reads the assembly: no legacy SSE
// instruction (an X register without a VEX mnemonic) may run after a
// 256-bit one and before VZEROUPPER. On some CPUs each such instruction
// stalls for hundreds of cycles on a state transition (see BenchmarkAppend).
func TestNoLegacySSEWithDirtyUpper(t *testing.T) {
	src, err := os.ReadFile("stopbits_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	xreg := regexp.MustCompile(`\bX([0-9]|1[0-5])\b`)
	yreg := regexp.MustCompile(`\bY([0-9]|1[0-5])\b`)
	dirty := false
	for n, line := range strings.Split(string(src), "\n") {
		code, _, _ := strings.Cut(line, "//")
		fields := strings.Fields(code)
		if len(fields) == 0 {
			continue
		}
		op := fields[0]
		switch {
		case op == "TEXT":
			dirty = false
		case op == "VZEROUPPER":
			dirty = false
		case yreg.MatchString(code):
			dirty = true
		case dirty && !strings.HasPrefix(op, "V") && xreg.MatchString(code):
			t.Errorf("stopbits_amd64.s:%d: legacy SSE %s after a 256-bit instruction, before VZEROUPPER", n+1, strings.TrimSpace(code))
		}
	}
}
