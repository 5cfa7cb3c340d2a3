package crdfile_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/schema/crdfile"
)

func ExampleRead() {
	crds, err := crdfile.Read("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true}
`), true)
	fmt.Println(crds[0].Object.Spec.Names.Kind, err)

	_, err = crdfile.Read("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scop: Namespaced
`), true)
	fmt.Println(err)
	// Output:
	// Widget <nil>
	// crd.yaml:6:3: unknown field spec.scop
}
