package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hubspoke/hubspoke/internal/cli"
	_ "github.com/hubspoke/hubspoke/internal/cli/apivalidation" // as cmd/hubspoke
)

// TestMain lets testscript run `hubspoke` as a command inside the scripts
// of testdata/script, as a user would type it.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"hubspoke": func() {
			os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			return nil
		},
	})
}
