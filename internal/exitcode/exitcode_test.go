package exitcode_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/internal/exitcode"
)

// ownCode is a command's own error type choosing its exit code.
type ownCode struct{}

func (ownCode) Error() string { return "mine" }
func (ownCode) ExitCode() int { return 3 }

func newRoot() *cobra.Command {
	root := &cobra.Command{Use: "tool"}
	var fail string
	run := &cobra.Command{
		Use:  "run",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch fail {
			case "usage":
				return fmt.Errorf("run: %w", exitcode.Usagef("--fail %q is wrong", "usage"))
			case "failure":
				return errors.New("it broke")
			case "report":
				return exitcode.Exit{Code: 1}
			case "own":
				return fmt.Errorf("wrapped: %w", ownCode{})
			}
			return nil
		},
	}
	run.Flags().StringVar(&fail, "fail", "", "")
	run.Flags().Uint64("seed", 0, "")
	run.Flags().Int32("replicas", 0, "")
	run.Flags().Duration("wait", 0, "")
	run.Flags().Bool("dry", false, "")
	root.AddCommand(run)
	return root
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr string // "" means nothing is printed
	}{
		{"ok", []string{"run"}, exitcode.OK, ""},
		{"usage error, wrapped", []string{"run", "--fail", "usage"}, exitcode.Usage, "error: run: --fail \"usage\" is wrong\n"},
		{"failure", []string{"run", "--fail", "failure"}, exitcode.Failure, "error: it broke\n"},
		{"report printed, exit 1, nothing more", []string{"run", "--fail", "report"}, exitcode.Failure, ""},
		{"a command's own Coder", []string{"run", "--fail", "own"}, 3, "error: wrapped: mine\n"},
		{"unknown flag", []string{"run", "--nope"}, exitcode.Usage, "error: unknown flag: --nope\n"},
		{"negative unsigned", []string{"run", "--seed", "-1"}, exitcode.Usage, "error: invalid argument \"-1\" for \"--seed\" flag: want a whole number, 0 or more\n"},
		{"not a number", []string{"run", "--replicas", "two"}, exitcode.Usage, "error: invalid argument \"two\" for \"--replicas\" flag: want a whole number\n"},
		{"out of range", []string{"run", "--replicas", "9999999999"}, exitcode.Usage, "error: invalid argument \"9999999999\" for \"--replicas\" flag: out of range\n"},
		{"not a duration", []string{"run", "--wait", "soon"}, exitcode.Usage, "error: invalid argument \"soon\" for \"--wait\" flag: want a duration such as 30s, 5m or 1h30m\n"},
		{"not a boolean", []string{"run", "--dry=maybe"}, exitcode.Usage, "error: invalid argument \"maybe\" for \"--dry\" flag: want true or false\n"},
		{"unknown command", []string{"walk"}, exitcode.Usage, "error: unknown command \"walk\" for \"tool\"\n"},
		{"extra argument", []string{"run", "x"}, exitcode.Usage, "error: unknown command \"x\" for \"tool run\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := exitcode.Run(context.Background(), newRoot(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || stderr.String() != tt.wantStderr {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, stderr.String(), tt.code, tt.wantStderr)
			}
		})
	}
}
