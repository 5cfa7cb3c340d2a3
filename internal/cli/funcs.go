package cli

import "github.com/spf13/cobra"

// NewFuncsRoot returns the root command of a user's own hubspoke binary,
// one that registers Go funcs (package webhookmain): serve, check, convert
// and version, without the storage commands (which link client-go's
// cluster access) or the sandbox.
func NewFuncsRoot(use string) *cobra.Command {
	root := &cobra.Command{
		Use:           use,
		Short:         "A hubspoke conversion webhook with its own Go funcs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCmd(), newConvertCmd(), newCheckCmd(), newServeCmd())
	return root
}
