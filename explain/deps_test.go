package explain_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies holds the package's promise: the message table links
// no client-go, no net/http and no API server (its tests do, to produce
// the messages), so any binary can carry it.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hubspoke/hubspoke/explain").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io", "net/http", "go.etcd.io"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("explain depends on %s", dep)
			}
		}
	}
}
