package review

import (
	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// selfCheck checks the converted object out, written by a converter other
// than the engine, against the original in with the rules the API server
// applies to a conversion webhook's answer (package apirules): the whole
// object is validated, then its head checked. It returns the first
// violation. (The engine's output is checked from the head it reports;
// see convertReview.) s is scratch memory for the scan.
// The object at out[mark:] is first completed with metadata when its
// original has none (withMetadata); selfCheck returns out as completed.
func selfCheck(out []byte, mark int, in *object, desired []byte, s *jsonscan.Scanner) ([]byte, error) {
	h, err := apirules.ReadHeadWith(s, out[mark:], "the converted object")
	if err != nil {
		return out, err
	}
	out = withMetadata(out, mark, &in.Head, &h)
	return out, apirules.CheckHead(&in.Head, &h, desired)
}

// withMetadata completes the converted object at out[mark:], whose head is
// h, with an empty metadata object when apirules.NeedsMetadata holds: its
// original (head in) has no metadata, as the objects the API server's field
// manager converts in a server-side apply across versions, and the API
// server refuses an answer without. The member is written last (before the
// closing brace), so that it also wins over a metadata that is null; h
// then says the object has metadata. Anything else comes back as it was.
func withMetadata(out []byte, mark int, in, h *apirules.Head) []byte {
	if !apirules.NeedsMetadata(in, h) {
		return out
	}
	end := len(out)
	for end > mark && jsonscan.IsSpace(out[end-1]) {
		end--
	}
	if end-mark < 2 || out[end-1] != '}' {
		return out // not an object: the self-check says so
	}
	last := end - 2
	for last > mark && jsonscan.IsSpace(out[last]) {
		last--
	}
	out = out[:end-1]
	if out[last] != '{' {
		out = append(out, ',')
	}
	out = append(out, apirules.EmptyMetadata...)
	out = append(out, '}')
	h.Metadata, h.MetadataNotObject = true, false
	return out
}
