package cli

import (
	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/servecmd"
)

// newServeCmd returns `hubspoke serve`, implemented in internal/servecmd so
// that the slim hubspoke-webhook binary can share it without linking this
// package's other subcommands.
func newServeCmd() *cobra.Command { return servecmd.New() }
