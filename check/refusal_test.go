package check

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAddCRDRefusals: each refusal becomes a crd-validation error, but for
// a field a CRD-wide check already reported, at it or above it; a pointer
// that merely starts with the same letters, or a finding of another check
// at the same pointer (an object's field), does not hide one.
func TestAddCRDRefusals(t *testing.T) {
	r := &Report{}
	r.Add(Finding{Check: CheckStorage, Path: "/spec/versions"})
	r.Add(Finding{Check: CheckStructural, From: "v1", Path: "/spec/versions/1/schema"})
	r.Add(Finding{Check: CheckDomain, Path: "/spec/scope"})
	r.AddCRDRefusals([]CRDRefusal{
		{Pointer: "/spec/versions", Pos: "crd.yaml:25", Message: "Invalid value: must have exactly one version marked as storage version"},
		{Pointer: "/spec/versions/1/schema/openAPIV3Schema/properties/spec/type", Pos: "crd.yaml:40", Message: "Required value"},
		{Pointer: "/spec/versions/0/schema/openAPIV3Schema/properties/spec/default", Pos: "crd.yaml:30", Message: "Invalid value: -1"},
		{Pointer: "/spec/versionsX", Pos: "crd.yaml:9", Message: "made up"},
		{Pointer: "/spec/scope", Pos: "crd.yaml:14", Message: `Unsupported value: "Namespaced ["`},
	})
	var got []string
	for _, f := range r.Findings[3:] {
		if f.Check != CheckCRDValidation || f.Severity != SeverityError {
			t.Errorf("finding %+v: want a crd-validation error", f)
		}
		got = append(got, f.Path+" "+f.Pos)
	}
	want := []string{
		"/spec/versions/0/schema/openAPIV3Schema/properties/spec/default crd.yaml:30",
		"/spec/versionsX crd.yaml:9",
		"/spec/scope crd.yaml:14",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("crd-validation findings (-want +got):\n%s", diff)
	}
	if r.Checks != 1 {
		t.Errorf("Checks = %d, want 1", r.Checks)
	}
}
