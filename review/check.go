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
func selfCheck(out []byte, in *object, desired []byte, s *jsonscan.Scanner) error {
	h, err := apirules.ReadHeadWith(s, out, "the converted object")
	if err != nil {
		return err
	}
	return apirules.CheckHead(&in.Head, &h, desired)
}
