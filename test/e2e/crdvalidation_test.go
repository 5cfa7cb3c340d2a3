package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
)

// TestCRDValidationAgreesWithAPIServer sends each CRD of
// schema/crdvalidation/testdata/invalid to kube-apiserver (a server-side
// dry run, as kubectl create --dry-run=server) and holds that the API
// server refuses it for the fields crdvalidation names, with the same
// message (but where crdvalidation leaves a long value out), and nothing
// else: status.* aside, which the API server sets itself and whose
// errors follow from spec's.
func TestCRDValidationAgreesWithAPIServer(t *testing.T) {
	files, err := filepath.Glob("../../schema/crdvalidation/testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid CRDs: %v", err)
	}
	crds, err := apiextensionsclient.NewForConfig(sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			crd, err := schema.LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), crd.Object, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			var status *apierrors.StatusError
			if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.ErrStatus.Details == nil {
				t.Fatalf("the API server did not refuse it as invalid: %v", err)
			}
			var server []string
			for _, c := range status.ErrStatus.Details.Causes {
				if !strings.HasPrefix(c.Field, "status.") {
					server = append(server, c.Field+": "+c.Message)
				}
			}
			var ours []string
			for _, e := range crdvalidation.Validate(crd) {
				msg := e.Field + ": " + e.Message
				for _, s := range server {
					// A long value crdvalidation leaves out: the rest agrees.
					if len(s) > len(msg) && strings.HasPrefix(s, e.Field+": Invalid value: ") && strings.HasSuffix(s, strings.TrimPrefix(msg, e.Field+": Invalid value")) {
						msg = s
					}
				}
				ours = append(ours, msg)
			}
			sort.Strings(server)
			sort.Strings(ours)
			if diff := cmp.Diff(server, ours); diff != "" {
				t.Errorf("refusals (-kube-apiserver +crdvalidation):\n%s", diff)
			}
		})
	}
}

// TestCRDUpdateValidationAgreesWithAPIServer installs a CRD whose storage
// moved from v1alpha1 to v1 (status.storedVersions [v1alpha1 v1]), then
// sends kube-apiserver changed revisions of it as server-side dry-run
// updates, and holds that crdvalidation.Update refuses each for the same
// fields with the same messages: a stored version dropped, the scope or
// kind changed (immutable once established), a default the field's own
// minimum refuses; and accepts the unchanged CRD.
func TestCRDUpdateValidationAgreesWithAPIServer(t *testing.T) {
	ctx := context.Background()
	crds, err := apiextensionsclient.NewForConfig(sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	props := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer", Minimum: ptrTo(0.0)}}},
	}}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "sprockets.crdvalidation.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "crdvalidation.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sprockets", Singular: "sprocket", Kind: "Sprocket", ListKind: "SprocketList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Storage: true, Schema: props},
				{Name: "v1", Served: true, Schema: props},
			},
		},
	}
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.DeleteCRD(context.Background(), crd.Name) })
	crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	live, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := live.Status.StoredVersions; len(got) != 2 {
		t.Fatalf("storedVersions %v, want [v1alpha1 v1]", got)
	}
	for _, c := range []struct {
		name   string
		change func(*apiextensionsv1.CustomResourceDefinition)
		want   int // refusals, as both count them
	}{
		{"unchanged", func(*apiextensionsv1.CustomResourceDefinition) {}, 0},
		{"stored version dropped", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[1:] }, 1},
		{"scope changed", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = apiextensionsv1.ClusterScoped }, 1},
		{"kind changed", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Kind = "Gear" }, 1},
		{"default below minimum", func(c *apiextensionsv1.CustomResourceDefinition) {
			p := c.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
			r := p.Properties["replicas"]
			r.Default = &apiextensionsv1.JSON{Raw: []byte("-1")}
			p.Properties["replicas"] = r
			c.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = p
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The file about to be applied: no status, no system metadata.
			planned := live.DeepCopy()
			planned.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			c.change(planned)
			file := planned.DeepCopy()
			file.ObjectMeta = metav1.ObjectMeta{Name: planned.Name, Labels: planned.Labels, Annotations: planned.Annotations}
			var server []string
			_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, planned, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				var status *apierrors.StatusError
				if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.ErrStatus.Details == nil {
					t.Fatalf("the API server did not answer as for an invalid CRD: %v", err)
				}
				for _, cause := range status.ErrStatus.Details.Causes {
					server = append(server, cause.Field+": "+cause.Message)
				}
			}
			var ours []string
			for _, e := range crdvalidation.Update(file, live) {
				ours = append(ours, e.Field+": "+e.Message)
			}
			sort.Strings(server)
			sort.Strings(ours)
			if diff := cmp.Diff(server, ours); diff != "" {
				t.Errorf("refusals (-kube-apiserver +crdvalidation):\n%s", diff)
			}
			if len(ours) != c.want {
				t.Errorf("%d refusals, want %d: %v", len(ours), c.want, ours)
			}
		})
	}
}
