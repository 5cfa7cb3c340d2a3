// Package exitcode is the exit-code convention of both hubspoke binaries
// (hubspoke and hubspoke-webhook), in one place: 0 ok, 1 the command ran
// and found or hit a failure, 2 the command line was wrong. Errors go to
// standard error as "error: ...".
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// The exit codes.
const (
	OK      = 0
	Failure = 1 // the command ran and found or hit a failure
	Usage   = 2 // the command line was wrong (or the command could not start)
)

// Coder is an error that chooses the exit code: UsageError, Exit, or a
// command's own type with an ExitCode method.
type Coder interface {
	error
	ExitCode() int
}

// Reported is an error whose command has already printed what went wrong
// (check's report of violations): Run prints nothing more.
type Reported interface {
	error
	Reported() bool
}

// UsageError marks an error as a usage error: exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode implements Coder: Usage.
func (e UsageError) ExitCode() int { return Usage }

// Usagef returns a UsageError with a formatted message (%w wraps).
func Usagef(format string, args ...any) error {
	return UsageError{Err: fmt.Errorf(format, args...)}
}

// Exit ends a command with Code after it has printed its own report
// (check exits 1 when it finds violations): nothing more is printed.
type Exit struct{ Code int }

func (e Exit) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode implements Coder.
func (e Exit) ExitCode() int { return e.Code }

// Reported implements Reported.
func (e Exit) Reported() bool { return true }

// Code returns the exit code for the error a command returned: the first
// Coder's in its chain, Usage for cobra's own argument errors, else
// Failure.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	if isCobraUsage(err) {
		return Usage
	}
	return Failure
}

// isCobraUsage recognises cobra's own argument errors, which it does not
// type (flag errors are typed by Run's flag error function).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "accepts ", "requires at least ", "required flag(s) ", "invalid argument "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// Run executes root with args and returns the exit code, printing any error
// but a Reported one on stderr as "error: ...". It silences cobra's own
// error and usage printing and marks flag errors as usage errors.
func Run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{Err: flagError(err)} })
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var rep Reported
	if err != nil && !(errors.As(err, &rep) && rep.Reported()) {
		fmt.Fprintf(stderr, "error: %v\n", err)
	}
	return Code(err)
}

// flagError rewrites pflag's error for a value it could not parse
// (`invalid argument "-1" for "--seed" flag: strconv.ParseUint: parsing
// "-1": invalid syntax`) to say what the flag wants instead of which Go
// function failed.
func flagError(err error) error {
	msg := err.Error()
	for _, w := range []struct{ from, want string }{
		{": strconv.ParseUint: ", "want a whole number, 0 or more"},
		{": strconv.ParseInt: ", "want a whole number"},
		{": strconv.ParseFloat: ", "want a number"},
		{": strconv.ParseBool: ", "want true or false"},
		{": time: ", "want a duration such as 30s, 5m or 1h30m"},
	} {
		if i := strings.Index(msg, w.from); i >= 0 {
			if strings.HasSuffix(msg, "value out of range") {
				return fmt.Errorf("%s: out of range", msg[:i])
			}
			return fmt.Errorf("%s: %s", msg[:i], w.want)
		}
	}
	return err
}
