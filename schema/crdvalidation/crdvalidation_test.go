package crdvalidation_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
)

// TestValidCRDs: every CRD of the project's examples and tests, the real
// projects' among them, is one the API server accepts (test/e2e installs
// them), so none may be refused here.
func TestValidCRDs(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/crd.yaml")
	if err != nil || len(files) < 7 {
		t.Fatalf("example CRDs: %v %v", files, err)
	}
	files = append(files, "../../check/testdata/crd.yaml", "../../check/testdata/podset/crd.yaml", "../../check/webhook/testdata/gizmo-crd.yaml")
	for _, f := range files {
		crd, err := schema.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if errs := crdvalidation.Validate(crd); len(errs) > 0 {
			t.Errorf("%s: refused: %v", f, errs)
		}
	}
}

// TestInvalidCRDs: each file of testdata/invalid is refused for exactly
// the fields its "# want:" line names, each at the line given after "@".
// test/e2e sends the same files to kube-apiserver, which must refuse each
// naming the same fields.
func TestInvalidCRDs(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid CRDs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := wantLine(t, f)
			crd, err := schema.LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range crdvalidation.Validate(crd) {
				got = append(got, e.Field+"@"+strings.TrimPrefix(e.Pos, f+":"))
				if e.Message == "" || len(e.Message) > 600 {
					t.Errorf("%s: message of %d bytes: %q", e.Field, len(e.Message), e.Message)
				}
				if !strings.HasPrefix(e.Pointer, "/") {
					t.Errorf("%s: pointer %q", e.Field, e.Pointer)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLongValueLeftOut: the API server quotes the whole list of versions
// when two are marked storage; the message keeps its words, not the list.
func TestLongValueLeftOut(t *testing.T) {
	crd, err := schema.LoadFile("testdata/invalid/two-storage-versions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	errs := crdvalidation.Validate(crd)
	if len(errs) != 1 {
		t.Fatalf("got %d errors: %v", len(errs), errs)
	}
	if got, want := errs[0].Message, "Invalid value: must have exactly one version marked as storage version"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got, want := errs[0].Error(), "testdata/invalid/two-storage-versions.yaml:25: spec.versions: Invalid value: must have exactly one version marked as storage version"; got != want {
		t.Errorf("Error() %q, want %q", got, want)
	}
}

// TestCRDUnchanged: Validate defaults and prepares a copy.
func TestCRDUnchanged(t *testing.T) {
	crd, err := schema.LoadFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := crd.Object.DeepCopy()
	crdvalidation.Validate(crd)
	if diff := cmp.Diff(before, crd.Object); diff != "" {
		t.Errorf("Validate changed the CRD:\n%s", diff)
	}
}

// wantLine reads the "# want: field@line ..." line of an invalid CRD.
func wantLine(t *testing.T, file string) []string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("%s: no # want: line", file)
	return nil
}

func Example() {
	crd, err := schema.LoadFile("testdata/invalid/scope.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range crdvalidation.Validate(crd) {
		fmt.Println(e)
	}
	// Output:
	// testdata/invalid/scope.yaml:14: spec.scope: Unsupported value: "Namespaced [": supported values: "Cluster", "Namespaced"
}

// TestUpdate: replacing a live CRD (storage moved to v1, established)
// with a file's revision. Unchanged is accepted; a dropped stored version,
// a new scope or kind are refused, each at its field. test/e2e holds the
// same cases against kube-apiserver.
func TestUpdate(t *testing.T) {
	crd, err := schema.LoadFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	live := crd.Object.DeepCopy()
	live.UID, live.ResourceVersion, live.Generation = "6d1f0f8e", "41", 2
	live.Status.StoredVersions = []string{"v1alpha1", "v1"}
	live.Status.Conditions = []apiextv1.CustomResourceDefinitionCondition{{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}
	for _, c := range []struct {
		name   string
		change func(*apiextv1.CustomResourceDefinition)
		want   []string
	}{
		{"unchanged", func(*apiextv1.CustomResourceDefinition) {}, nil},
		{"stored version dropped", func(c *apiextv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[1:] }, []string{"status.storedVersions[0]"}},
		{"scope changed", func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = apiextv1.ClusterScoped }, []string{"spec.scope"}},
		{"kind changed", func(c *apiextv1.CustomResourceDefinition) { c.Spec.Names.Kind = "Gadget" }, []string{"spec.names.kind"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := crd.Object.DeepCopy() // as written: no status, no uid
			c.change(file)
			before := file.DeepCopy()
			var got []string
			for _, e := range crdvalidation.Update(file, live) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, file); diff != "" {
				t.Errorf("Update changed the CRD:\n%s", diff)
			}
		})
	}
}
