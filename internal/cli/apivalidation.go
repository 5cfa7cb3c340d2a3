package cli

import apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// CRDRefusal is one reason the API server would refuse a CRD.
type CRDRefusal struct {
	// Field is the field as the API server names it (spec.scope).
	Field string
	// Pointer is its JSON pointer in the CRD as written (/spec/scope).
	Pointer string
	// Message is the API server's message, without the field.
	Message string
}

// APIValidation is the API server's own validation of CRDs (package
// schema/crdvalidation): Create as a new CRD, Update as one replacing the
// live CRD. It links the API server's validation code, and with it some
// 20 MB, so it is installed by importing package
// internal/cli/apivalidation for its side effect, as cmd/hubspoke does.
// A binary built on webhookmain leaves it out: its check then has no
// crd-validation findings.
var APIValidation struct {
	Create func(crd *apiextv1.CustomResourceDefinition) []CRDRefusal
	Update func(crd, live *apiextv1.CustomResourceDefinition) []CRDRefusal
}
