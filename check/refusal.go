package check

import "strings"

// CRDRefusal is one reason the API server refuses to create the CRD, as
// package schema/crdvalidation finds them with the API server's own
// validation. check does not call it (it links client-go); the hubspoke
// command does, and adds the reasons with AddCRDRefusals.
type CRDRefusal struct {
	// Pointer is the refused field's JSON pointer in the CRD (/spec/scope).
	Pointer string
	// Pos is "file:line" of the field.
	Pos string
	// Message is the API server's message, without the field.
	Message string
}

// AddCRDRefusals adds a crd-validation error for each reason the API
// server refuses the CRD, but for a field that a CRD-wide static check of
// r already reported: storage-version and conversion-strategy at the same
// pointer, structural-schema at the version's schema or below it. That
// finding says the same, with more context. It counts one static check.
func (r *Report) AddCRDRefusals(rs []CRDRefusal) {
	r.Checks++
	for _, x := range rs {
		if r.crdFieldReported(x.Pointer) {
			continue
		}
		r.Add(Finding{Check: CheckCRDValidation, Path: x.Pointer, Message: "the API server refuses the CRD: " + x.Message, Pos: x.Pos})
	}
}

func (r *Report) crdFieldReported(ptr string) bool {
	for _, f := range r.Findings {
		switch f.Check {
		case CheckStorage, CheckStrategy:
			if f.Path != "" && ptr == f.Path {
				return true
			}
		case CheckStructural:
			if f.Path != "" && (ptr == f.Path || strings.HasPrefix(ptr, f.Path+"/")) {
				return true
			}
		}
	}
	return false
}
