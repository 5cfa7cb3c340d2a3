// Command hubspoke converts, serves, checks and migrates multi-version
// Kubernetes CustomResourceDefinitions. See the README.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hubspoke/hubspoke/internal/cli"
	_ "github.com/hubspoke/hubspoke/internal/cli/apivalidation" // the API server's CRD validation, for check, deploy and doctor
	"github.com/hubspoke/hubspoke/internal/operatorcmd"
	"github.com/hubspoke/hubspoke/internal/sandboxcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, sandboxcmd.NewSandboxCmd, sandboxcmd.NewDemoCmd, operatorcmd.New)
	stop()
	os.Exit(code)
}
