package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

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
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var obj apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(data, &obj); err != nil {
				t.Fatal(err)
			}
			_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), &obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
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
			crd, err := schema.Load(f, data)
			if err != nil {
				t.Fatal(err)
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
