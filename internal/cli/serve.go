package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/servecmd"
)

// newServeCmd returns `hubspoke serve`, implemented in internal/servecmd so
// that the slim hubspoke-webhook binary can share it without linking this
// package's other subcommands.
func newServeCmd() *cobra.Command {
	cmd := servecmd.New()
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		err := run(c, args)
		var ue servecmd.UsageError
		if errors.As(err, &ue) {
			return usageError{err}
		}
		return err
	}
	return cmd
}
