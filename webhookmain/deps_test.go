package webhookmain_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies holds what the package doc promises: a binary built on
// webhookmain links neither the API server (its HTTP server, storage,
// endpoints, registries), nor etcd, nor controller-runtime. It links the
// API server's validation of a CRD's schemas (for check) and its CEL
// environment (for cel rules), which are libraries; not its validation of
// whole CRDs (schema/crdvalidation), which pulls in some 20 MB more.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hubspoke/hubspoke/webhookmain").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"go.etcd.io/", "sigs.k8s.io/controller-runtime/",
		"k8s.io/apiserver/pkg/server/", "k8s.io/apiserver/pkg/storage/", "k8s.io/apiserver/pkg/endpoints/", "k8s.io/apiserver/pkg/registry/",
		"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/", "k8s.io/apiextensions-apiserver/pkg/registry/", "k8s.io/apiextensions-apiserver/pkg/cmd/",
		"github.com/hubspoke/hubspoke/schema/crdvalidation/", "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(pkg+"/", f) {
				t.Errorf("webhookmain links %s", pkg)
			}
		}
	}
	if pkg := "k8s.io/apiextensions-apiserver/pkg/apiserver"; strings.Contains(" "+strings.Join(strings.Fields(string(out)), " ")+" ", " "+pkg+" ") {
		t.Errorf("webhookmain links %s", pkg)
	}
}
