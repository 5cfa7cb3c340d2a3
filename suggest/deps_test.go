package suggest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: suggest reads schemas only; no client, no network.
func TestImports(t *testing.T) {
	imports, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Split(string(imports), "\n") {
		if imp == "net/http" || imp == "testing" || imp == "flag" {
			t.Errorf("suggest imports %s", imp)
		}
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Split(string(deps), "\n") {
		if strings.HasPrefix(d, "k8s.io/client-go") {
			t.Errorf("suggest depends on %s", d)
		}
	}
}
