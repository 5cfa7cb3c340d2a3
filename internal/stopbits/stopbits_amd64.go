//go:build amd64 && !purego

package stopbits

import "golang.org/x/sys/cpu"

var useAVX2 = cpu.X86.HasAVX2

// blockWords fills out with the marks of d, whose length is 64*len(out).
func blockWords(out []uint64, d []byte) {
	if useAVX2 {
		marksAVX2(&d[0], len(out), &out[0])
		return
	}
	genericWords(out, d)
}

//go:noescape
func marksAVX2(d *byte, blocks int, out *uint64)

func quotesBackslashes(block *[64]byte) (quotes, backslashes uint64) {
	if useAVX2 {
		return quotesBackslashesAVX2(block)
	}
	return genericQuotesBackslashes(block)
}

//go:noescape
func quotesBackslashesAVX2(block *[64]byte) (quotes, backslashes uint64)
