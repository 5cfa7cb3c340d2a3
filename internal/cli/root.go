// Package cli implements the hubspoke command line: one file per subcommand.
package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/exitcode"
)

// The exit-code convention is internal/exitcode's, shared with the slim
// webhook binary; these names keep the subcommands' files short.
const (
	exitOK    = exitcode.OK
	exitFail  = exitcode.Failure
	exitUsage = exitcode.Usage
)

type (
	usageError = exitcode.UsageError
	exitError  = exitcode.Exit
)

func usagef(format string, args ...any) error { return exitcode.Usagef(format, args...) }

// Extra holds commands that live outside this package (the sandbox and demo
// commands, which link the API server). cmd/hubspoke adds them; the slim
// webhook binary does not.
type Extra func() *cobra.Command

// NewRoot returns the hubspoke root command with every subcommand of this
// package plus extra.
func NewRoot(extra ...Extra) *cobra.Command {
	root := &cobra.Command{
		Use:           "hubspoke",
		Short:         "Hub-and-spoke conversion for multi-version CustomResourceDefinitions",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newConvertCmd(),
		newCheckCmd(),
		// subcommands: keep one line each, in alphabetical order below this line
		newBackupCmd(),
		newMigrateCmd(),
		newPlanCmd(),
		newRestoreCmd(),
		newServeCmd(),
	)
	for _, e := range extra {
		root.AddCommand(e())
	}
	return root
}

// Main runs the command line args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, extra ...Extra) int {
	return exitcode.Run(ctx, NewRoot(extra...), args, stdin, stdout, stderr)
}
