// Package cli implements the hubspoke command line: one file per subcommand.
package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/exitcode"
)

// Exit codes: internal/exitcode's convention, shared with the slim webhook
// binary, which also maps errors to them (Main calls exitcode.Run).
const (
	exitOK    = exitcode.OK
	exitFail  = exitcode.Failure
	exitUsage = exitcode.Usage
)

// usageError marks an error as a usage error (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }
func (e usageError) ExitCode() int { return exitUsage }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError lets a command choose its exit code after printing its own
// report (check, for example, exits 1 when it finds violations).
type exitError struct{ code int }

func (e exitError) Error() string  { return fmt.Sprintf("exit status %d", e.code) }
func (e exitError) ExitCode() int  { return e.code }
func (e exitError) Reported() bool { return true }

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
		newCertsCmd(),
		newDeployCmd(),
		newDoctorCmd(),
		newExplainCmd(),
		newInitCmd(),
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
	return Run(ctx, NewRoot(extra...), args, stdin, stdout, stderr)
}

// Run runs root with args and returns the process exit code: 0 ok, 1 a
// failure found or hit, 2 a usage error (internal/exitcode).
func Run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return exitcode.Run(ctx, root, args, stdin, stdout, stderr)
}
