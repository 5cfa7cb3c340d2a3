package sandboxcmd

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDemoHelpNamesEverySteps: demo --help and the README's demo sample
// list the same seven steps.
func TestDemoHelpNamesEverySteps(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := regexp.MustCompile(`(?m)^\[\d/\d\] .*$`).FindAllString(string(readme), -1)
	if len(steps) != 7 {
		t.Fatalf("the README's demo sample shows %d steps, want 7:\n%s", len(steps), strings.Join(steps, "\n"))
	}
	help := NewDemoCmd().Long
	for _, s := range steps {
		if !strings.Contains(help, "  "+s+"\n") {
			t.Errorf("demo --help does not list the README's step %q", s)
		}
	}
}
