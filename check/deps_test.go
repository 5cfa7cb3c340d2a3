package check

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports holds the boundary: check imports neither client-go nor
// net/http directly (the black-box client lives in check/webhook), and, as
// library code, neither testing nor flag (rapid's generators are driven
// through Generator.Example, never through rapid.Check and its flags).
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Split(string(out), "\n") {
		if imp == "net/http" || imp == "testing" || imp == "flag" || strings.HasPrefix(imp, "k8s.io/client-go") {
			t.Errorf("check imports %s", imp)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if strings.Contains(string(deps), "k8s.io/client-go") {
		t.Error("check depends on k8s.io/client-go")
	}
}
