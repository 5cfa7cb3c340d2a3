//go:build !amd64 || purego

package stopbits

const useAVX2 = false

func blockWords(out []uint64, d []byte) { genericWords(out, d) }

func quotesBackslashes(block *[64]byte) (quotes, backslashes uint64) {
	return genericQuotesBackslashes(block)
}
