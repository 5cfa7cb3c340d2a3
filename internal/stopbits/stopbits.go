// Package stopbits marks the bytes at which a JSON string scan must stop: a
// quote, a backslash, a control character (a byte below 0x20) or a byte of
// a multi-byte UTF-8 sequence (0x80 and above), whose encoding the scanner
// then checks.
//
// A scanner that has the marks of a document finds the end of a string with
// a shift and a count of trailing zeros, however long the string is, instead
// of testing its bytes one by one. On amd64 CPUs with AVX2 the marks are
// computed 64 bytes at a time; elsewhere eight bytes at a time in plain Go.
// Both give the same bits, which a fuzz test holds them to.
//
// QuotesBackslashes tells a block's quotes and backslashes apart, for a
// scanner that meets a run of escapes (JSON inside a string) and reads the
// rest of the block at once.
package stopbits

import (
	"encoding/binary"
	"math/bits"
)

// Append appends the marks of d to dst and returns the extended slice:
// (len(d)+63)/64 words, where bit i%64 of word i/64 is set exactly when
// d[i] is '"', '\\', below 0x20 or at least 0x80, then Pad zero words.
func Append(dst []uint64, d []byte) []uint64 {
	blocks := len(d) / 64
	n := len(dst)
	dst = grow(dst, (len(d)+63)/64+Pad)
	if blocks > 0 {
		blockWords(dst[n:n+blocks], d[:blocks*64])
	}
	if rest := d[blocks*64:]; len(rest) > 0 {
		// The tail is padded with spaces, which are never marked.
		var pad [64]byte
		for i := copy(pad[:], rest); i < len(pad); i++ {
			pad[i] = ' '
		}
		blockWords(dst[n+blocks:n+blocks+1], pad[:])
	}
	clear(dst[len(dst)-Pad:])
	return dst
}

// Pad is the number of zero words Append writes after the marks of a
// document, so that a scanner may read the word of the offset len(d) and
// the one after it without a bounds test of its own.
const Pad = 2

// Next returns the index of the first marked byte at or after i, or -1 when
// there is none. marks must be the marks of the document, as Append made them.
func Next(marks []uint64, i int) int {
	w := i >> 6
	if w >= len(marks) {
		return -1
	}
	if m := marks[w] >> (i & 63); m != 0 {
		return i + bits.TrailingZeros64(m)
	}
	for w++; w < len(marks); w++ {
		if m := marks[w]; m != 0 {
			return w<<6 + bits.TrailingZeros64(m)
		}
	}
	return -1
}

func grow(s []uint64, n int) []uint64 {
	if cap(s)-len(s) < n {
		s = append(s[:cap(s)], make([]uint64, n-(cap(s)-len(s)))...)[:len(s)]
	}
	return s[:len(s)+n]
}

const (
	lsb  = 0x0101010101010101
	msb  = 0x8080808080808080
	low7 = 0x7f7f7f7f7f7f7f7f
)

// genericWords fills out with the marks of d, 64 bytes a word, in plain Go.
func genericWords(out []uint64, d []byte) {
	for w := range out {
		blk := d[w*64 : w*64+64]
		var m uint64
		for k := 0; k < 8; k++ {
			m |= uint64(byteMarks(binary.LittleEndian.Uint64(blk[k*8:]))) << (k * 8)
		}
		out[w] = m
	}
}

// QuotesBackslashes returns two bits for each of the 64 bytes of block:
// bit i of quotes is set when block[i] is '"', bit i of backslashes when it
// is '\\'. A scanner that meets escapes in a string reads them with these,
// a word at a time, instead of looking at each marked byte.
func QuotesBackslashes(block *[64]byte) (quotes, backslashes uint64) {
	return quotesBackslashes(block)
}

// genericQuotesBackslashes is QuotesBackslashes in plain Go.
func genericQuotesBackslashes(block *[64]byte) (quotes, backslashes uint64) {
	for k := 0; k < 8; k++ {
		x := binary.LittleEndian.Uint64(block[k*8:])
		quotes |= uint64(equalBytes(x, '"')) << (k * 8)
		backslashes |= uint64(equalBytes(x, '\\')) << (k * 8)
	}
	return quotes, backslashes
}

// equalBytes returns one bit per byte of x (lowest byte first) for bytes
// equal to c, each exact, as byteMarks's.
func equalBytes(x uint64, c byte) uint8 {
	return gatherHigh(zeroBytes(x^(lsb*uint64(c))) & msb)
}

// zeroBytes returns x with the high bit of each byte set exactly when that
// byte is 0 (the low bits are noise). Unlike the usual has-zero-byte trick,
// no borrow crosses from one byte into the next.
func zeroBytes(x uint64) uint64 { return ^(((x & low7) + low7) | x) }

// gatherHigh returns the high bits of the bytes of m, which has no other
// bit set, as one bit per byte (lowest byte first).
func gatherHigh(m uint64) uint8 { return uint8(((m >> 7) * 0x0102040810204080) >> 56) }

// byteMarks returns one bit per byte of x (lowest byte first) for bytes that
// are '"', '\\', below 0x20 or at least 0x80, each flag exact (see
// zeroBytes).
func byteMarks(x uint64) uint8 {
	zq := zeroBytes(x ^ (lsb * '"'))            // high bit set iff the byte is '"'
	zb := zeroBytes(x ^ (lsb * '\\'))           // likewise for '\\'
	lt := ^(((x & low7) + lsb*0x60) | x)        // high bit set iff the byte is < 0x20
	return gatherHigh((zq | zb | lt | x) & msb) // x: bytes with the high bit set
}
