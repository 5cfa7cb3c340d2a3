// Package webhookmain builds your own hubspoke binary: the hubspoke
// conversion webhook with the Go funcs your rule files name. Write a main
// package that registers the funcs and calls Main:
//
//	func main() {
//		flags, err := convert.Funcs("flags", argsToOptions, optionsToArgs)
//		if err != nil {
//			panic(err)
//		}
//		webhookmain.Main(map[string]convert.Rule{"flags": flags})
//	}
//
// The binary has the subcommands of hubspoke that use a rule file, with the
// funcs registered for every rule file they load:
//
//   - serve: the HTTPS ConversionReview webhook (docs/serve.md), what you
//     ship in the webhook's image;
//   - check: the static checks and round-trip laws (docs/check.md), with
//     your funcs in the loop (but for crd-validation, the API server's
//     validation of the whole CRD, which would make the binary some 20 MB
//     larger: run hubspoke check for it);
//   - convert: offline conversion of files, as kubectl convert does;
//   - version.
//
// It links neither the API server nor etcd (cel rules run in the API
// server's CEL environment, which is linked). Go funcs read and write the
// object through convert.Object, and keep what the other version cannot
// hold in the preserved annotation with Object.Keep and Object.Restore,
// as the built-in rules do. See examples/gofuncs for a complete program.
package webhookmain

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/cli"
)

// Main runs the command line of the process with funcs registered and
// exits with its code (0 ok, 1 a failure, 2 a usage error). SIGINT and
// SIGTERM cancel it (serve then shuts down gracefully).
func Main(funcs map[string]convert.Rule) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, funcs, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs the command line args with funcs registered (see
// rules.RegisterFuncs) and returns the exit code.
func Run(ctx context.Context, funcs map[string]convert.Rule, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	rules.RegisterFuncs(funcs)
	return cli.Run(ctx, cli.NewFuncsRoot(filepath.Base(os.Args[0])), args, stdin, stdout, stderr)
}
