// Package cli implements the hubspoke command line: one file per subcommand.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and found or hit a failure
	exitUsage = 2 // the command line was wrong
)

// usageError marks an error as a usage error (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError lets a command choose its exit code after printing its own
// report (check, for example, exits 1 when it finds violations).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

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
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
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
// failure found or hit, 2 a usage error.
func Run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFail
}

// isCobraUsage recognises cobra's own argument errors, which it does not type.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
