// Command hubspoke-webhook is the slim conversion webhook server: the
// `serve` and `version` subcommands of hubspoke, without the API server
// and the other subcommands' dependencies. See docs/serve.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hubspoke/hubspoke/internal/servecmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := servecmd.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
