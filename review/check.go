package review

import (
	"fmt"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// selfCheck checks the converted object out, written by a converter other
// than the engine, against the original in with the rules the API server
// applies to a conversion webhook's answer (package apirules): the whole
// object is validated, then its head checked. It returns the first
// violation. (The engine's output is checked from the head it reports;
// see convertReview.) s is scratch memory for the scan.
func selfCheck(out []byte, in *object, desired []byte, s *jsonscan.Scanner) error {
	i := skipSpace(out, 0)
	if i >= len(out) || out[i] != '{' {
		if i >= len(out) {
			return fmt.Errorf("the converted object is empty")
		}
		return fmt.Errorf("the converted object is %s, not an object", valueKind(out[i]))
	}
	s.Reset(out)
	var h apirules.Head
	end, err := apirules.ScanHead(s, i, apirules.EnvelopeDepth+1, &h, false)
	if err != nil {
		return fmt.Errorf("the converted object is not JSON the API server decodes: %w", err)
	}
	if end = skipSpace(out, end); end != len(out) {
		return fmt.Errorf("the converted object is not valid JSON: %w", errAt(end, "unexpected data after the object"))
	}
	return apirules.CheckHead(&in.Head, &h, desired)
}
