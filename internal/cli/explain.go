package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/explain"
)

type explainOptions struct {
	file   string
	output string
}

func newExplainCmd() *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain [MESSAGE | -f FILE]",
		Short: "Translate a conversion webhook error message: its cause, the fixes, the doctor check",
		Long: `Explain reads an error message as users see it — from kubectl, a
controller's log or an event — and names its cause, the likely fixes and
the ` + "`hubspoke doctor`" + ` check that confirms it. A message nests several errors
("conversion webhook for X failed: Post URL: ... x509: ..."): each one
recognised is explained, the innermost (the root cause) first.

The message is the argument, or the contents of -f FILE ("-" or no
argument: standard input); a whole log works too, each kind of error is
explained once. Known messages: ` + "`hubspoke explain --list`" + `.

Exit status: 0 explained, 1 nothing recognised, 2 usage error.`,
		Example: `  hubspoke explain 'conversion webhook for example.com/v1, Kind=Widget failed: Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority'
  kubectl get widgets.v1alpha1.example.com 2>&1 | hubspoke explain
  hubspoke explain -f controller.log -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", `file holding the message ("-": standard input)`)
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.Bool("list", false, "list the messages explain knows")
	return cmd
}

func (o *explainOptions) run(cmd *cobra.Command, args []string) error {
	if o.output != "text" && o.output != "json" {
		return usagef("-o %q: want text or json", o.output)
	}
	if list, _ := cmd.Flags().GetBool("list"); list {
		return o.list(cmd.OutOrStdout())
	}
	var msg string
	switch {
	case len(args) == 1 && o.file != "":
		return usagef("give the message as an argument or with -f, not both")
	case len(args) == 1:
		msg = args[0]
	default:
		var r io.Reader = cmd.InOrStdin()
		if o.file != "" && o.file != "-" {
			f, err := os.Open(o.file)
			if err != nil {
				return usageError{err}
			}
			defer f.Close()
			r = f
		}
		b, err := io.ReadAll(io.LimitReader(r, 64<<20))
		if err != nil {
			return fmt.Errorf("read message: %w", err)
		}
		msg = string(b)
	}
	if strings.TrimSpace(msg) == "" {
		return usagef("no message: give it as an argument, with -f FILE or on standard input")
	}
	xs := explain.Explain(msg)
	out := cmd.OutOrStdout()
	if o.output == "json" {
		if xs == nil {
			xs = []explain.Explanation{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"crd": explain.CRDName(msg), "explanations": xs}); err != nil {
			return err
		}
	} else {
		writeExplanations(out, xs, orDefault(explain.CRDName(msg), "CRD-NAME"))
	}
	if len(xs) == 0 {
		if o.output == "text" {
			fmt.Fprintln(cmd.ErrOrStderr(), "no known error in the message (hubspoke explain --list shows the known ones); hubspoke doctor CRD-NAME diagnoses the conversion webhook live")
		}
		return exitError{exitFail}
	}
	return nil
}

// writeExplanations prints the root cause first, then the errors around it.
func writeExplanations(w io.Writer, xs []explain.Explanation, crd string) {
	for i, x := range xs {
		if i == 1 {
			fmt.Fprintln(w, "\naround it:")
		}
		if i == 0 {
			fmt.Fprintf(w, "cause: %s [%s]\n", x.Title, x.ID)
		} else {
			fmt.Fprintf(w, "\n- %s [%s]\n", x.Title, x.ID)
		}
		fmt.Fprintf(w, "  matched: %s\n", x.Match)
		fmt.Fprintf(w, "  %s\n", x.Cause)
		if len(x.Fixes) > 0 {
			fmt.Fprintln(w, "  fixes:")
			for _, f := range x.Fixes {
				fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(f, "CRD-NAME", crd))
			}
		}
		fmt.Fprintf(w, "  confirm: hubspoke doctor %s (check %s)\n", crd, x.Check)
		fmt.Fprintf(w, "  source: %s\n", x.Source)
	}
}

func (o *explainOptions) list(w io.Writer) error {
	var xs []explain.Explanation
	for _, id := range explain.IDs() {
		x, _ := explain.Lookup(id)
		xs = append(xs, x)
	}
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"explanations": xs})
	}
	for _, x := range xs {
		fmt.Fprintf(w, "%-30s %-28s %s\n", x.ID, x.Check, x.Title)
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
