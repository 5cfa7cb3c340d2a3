package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/servecmd"
)

// versionString is shared with the slim webhook binary, so both report the
// same version: set it at link time with
// -ldflags "-X github.com/hubspoke/hubspoke/internal/servecmd.version=v1.2.3".
func versionString() string { return servecmd.Version() }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the hubspoke version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "hubspoke %s\n", versionString())
			return err
		},
	}
}
