package apivalidation_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/internal/cli"
	_ "github.com/hubspoke/hubspoke/internal/cli/apivalidation"
	"github.com/hubspoke/hubspoke/schema"
)

// TestInstalled: importing the package installs both validations, and
// they answer as schema/crdvalidation does.
func TestInstalled(t *testing.T) {
	if cli.APIValidation.Create == nil || cli.APIValidation.Update == nil {
		t.Fatal("cli.APIValidation not installed")
	}
	crd, err := schema.LoadFile("../../../schema/crdvalidation/testdata/invalid/scope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := cli.APIValidation.Create(crd.Object)
	if len(got) != 1 || got[0].Field != "spec.scope" || got[0].Pointer != "/spec/scope" || !strings.HasPrefix(got[0].Message, "Unsupported value") {
		t.Errorf("Create = %+v, want one refusal of spec.scope", got)
	}
	live := crd.Object.DeepCopy()
	live.Spec.Scope = "Namespaced"
	live.ResourceVersion = "7"
	if got := cli.APIValidation.Update(crd.Object, live); len(got) == 0 || got[0].Field != "spec.scope" {
		t.Errorf("Update = %+v, want spec.scope refused", got)
	}
}

// TestHubspokeInstallsIt: the hubspoke binary links the package (its
// check, deploy and doctor use it), the slim webhook binary does not.
func TestHubspokeInstallsIt(t *testing.T) {
	const pkg = "github.com/hubspoke/hubspoke/internal/cli/apivalidation"
	for bin, want := range map[string]bool{
		"github.com/hubspoke/hubspoke/cmd/hubspoke":         true,
		"github.com/hubspoke/hubspoke/cmd/hubspoke-webhook": false,
	} {
		out, err := exec.Command("go", "list", "-deps", bin).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", bin, err)
		}
		if got := strings.Contains("\n"+string(out), "\n"+pkg+"\n"); got != want {
			t.Errorf("%s links %s: %v, want %v", bin, pkg, got, want)
		}
	}
}
