package apirules_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies holds the boundary: the rules link no client-go and no
// net/http, so convert and check can use them.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hubspoke/hubspoke/apirules").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go", "net/http", "k8s.io/apiserver", "k8s.io/apiextensions-apiserver"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("apirules depends on %s", dep)
			}
		}
	}
}
