package cli

import "github.com/spf13/cobra"

func newConvertCmd() *cobra.Command {
	return &cobra.Command{Use: "convert", Short: "Convert objects offline between versions (not yet implemented)"}
}
