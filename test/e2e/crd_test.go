package e2e

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInstallUpdateDeleteCRD: InstallCRD on an existing CRD updates it and
// returns once the new version is served; DeleteCRD waits until it is gone.
func TestInstallUpdateDeleteCRD(t *testing.T) {
	ctx := context.Background()
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.tmp.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "tmp.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaProps},
			},
		},
	}
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatalf("install: %v", err)
	}
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Schema: schemaProps})
	got, err := sb.InstallCRD(ctx, crd)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if n := len(got.Spec.Versions); n != 2 {
		t.Errorf("updated CRD has %d versions, want 2", n)
	}
	gvr := schema.GroupVersionResource{Group: "tmp.example.com", Version: "v2", Resource: "gizmos"}
	if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list through the added version: %v", err)
	}

	if err := sb.DeleteCRD(ctx, crd.Name); err != nil {
		t.Fatalf("delete: %v", err)
	}
	crds, err := apiextensionsclient.NewForConfig(sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
	if err := sb.DeleteCRD(ctx, crd.Name); err != nil {
		t.Errorf("deleting a missing CRD: %v, want nil", err)
	}
}
