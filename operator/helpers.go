package operator

import (
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/convert"
)

type convertRule = convert.Rule

// standIn is a Go rule that takes the name of one of the webhook's funcs:
// it loads, and fails every conversion it is asked for.
func standIn(name string) convert.Rule {
	fail := func(*convert.Object) error {
		return fmt.Errorf("Go func %s runs in the webhook only", name)
	}
	r, err := convert.Funcs(name, fail, fail)
	if err != nil {
		panic(err) // both functions are given
	}
	return r
}

// schemaGVR is the resource of a CRD at a version.
func schemaGVR(crd *apiextv1.CustomResourceDefinition, version string) k8sschema.GroupVersionResource {
	return k8sschema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}
