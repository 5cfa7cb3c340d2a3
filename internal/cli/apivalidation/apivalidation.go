// Package apivalidation installs the API server's own validation of CRDs
// (package schema/crdvalidation) in the hubspoke command line
// (cli.APIValidation): check's crd-validation findings, deploy's refusal
// of a CRD the API server would refuse, doctor's crd.planned. Import it
// for its side effect:
//
//	import _ "github.com/hubspoke/hubspoke/internal/cli/apivalidation"
//
// cmd/hubspoke does; webhookmain does not, since the validation code
// makes a binary some 20 MB larger.
package apivalidation

import (
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
)

func init() {
	cli.APIValidation.Create = func(crd *apiextv1.CustomResourceDefinition) []cli.CRDRefusal {
		return refusals(crdvalidation.Object(crd))
	}
	cli.APIValidation.Update = func(crd, live *apiextv1.CustomResourceDefinition) []cli.CRDRefusal {
		return refusals(crdvalidation.Update(crd, live))
	}
}

func refusals(errs []crdvalidation.Error) []cli.CRDRefusal {
	var out []cli.CRDRefusal
	for _, e := range errs {
		out = append(out, cli.CRDRefusal{Field: e.Field, Pointer: e.Pointer, Message: e.Message})
	}
	return out
}
