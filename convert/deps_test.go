package convert_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies holds the boundary: the engine links no client-go, no
// net/http and no API server, so every binary that embeds it stays small.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/hubspoke/hubspoke/convert", "github.com/hubspoke/hubspoke/convert/rules").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"k8s.io/client-go", "net/http", "k8s.io/apiserver", "k8s.io/apiextensions-apiserver", "go.etcd.io"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("convert depends on %s", dep)
			}
		}
	}
}
