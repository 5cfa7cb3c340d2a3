package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/suggest"
)

type initOptions struct {
	file    string
	hub     string
	kube    kubeFlags
	check   bool
	objects int
	seed    uint64
}

func newInitCmd() *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:     "init (-f CRD.yaml | CRD-NAME) [--hub VERSION] [--kubeconfig PATH] [--context NAME]",
		Aliases: []string{"suggest"},
		Short:   "Write a starting rule file for a CRD's versions, and check it",
		Long: `Init compares every version of a CRD with the hub and prints a rule file
(hubspoke.dev/v1alpha1 Conversion) on standard output, as kubectl create
--dry-run=client -o yaml prints a starting manifest: save it, read it,
edit it. The CRD is read from -f FILE (- for standard input), or by name
from the cluster (--kubeconfig, --context).

The hub is the storage version (--hub to choose another). For each spoke
it suggests renames and moves (the same shape and a like name or
description, also into or out of a new object), enum changes (values
paired by spelling), type changes (an integer count and a duration, an
integer and its string, integers in units of different sizes), a list and
a map keyed by a field, a singleton list and its item, a cron string and
its fields, and keeps what one version lacks (hubOnly, spokeOnly, with the
hub's default). Every rule has a comment saying why; a TODO marks what it
cannot tell (a guess, a choice such as rounding, a difference no rule
expresses).

Then it checks the suggestion as hubspoke check does (static checks, the
laws on --objects generated objects; --check=false skips it) and prints
the report on standard error, with the command to run again once edited.

Exit status: 0 the rule file was printed (what the check found is for you
to fix), 2 usage error (no CRD, a CRD that cannot be read, one version).`,
		Example: `  hubspoke init -f crd.yaml > conversion.yaml
  hubspoke init widgets.example.com --context prod > conversion.yaml
  kubectl get crd widgets.example.com -o yaml | hubspoke init -f - --hub v1 --check=false`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "the CustomResourceDefinition (YAML or JSON; - for standard input)")
	f.StringVar(&o.hub, "hub", "", "the hub version (default: the storage version)")
	f.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "kubeconfig file, to read CRD-NAME from the cluster (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.kube.context, "context", "", "kubeconfig context (default: the current one)")
	f.BoolVar(&o.check, "check", true, "check the suggested rules (report on standard error)")
	f.IntVar(&o.objects, "objects", 200, "generated objects per law and version pair for the check (0: static checks only)")
	f.Uint64Var(&o.seed, "seed", 0, "random seed of the check's generated objects (0: random)")
	return cmd
}

func (o *initOptions) run(cmd *cobra.Command, args []string) error {
	if (o.file == "") == (len(args) == 0) {
		return usagef("give the CRD: -f FILE, or its name (plural.group) to read it from the cluster")
	}
	if o.objects < 0 {
		return usagef("--objects must not be negative")
	}
	var crd *schema.CRD
	var source, checkCmd string
	switch {
	case o.file != "":
		var err error
		if crd, err = readCRDFile(cmd, o.file); err != nil {
			return err
		}
		source = o.file
		if o.file == "-" {
			source = "standard input"
		}
		checkCmd = "hubspoke check --crd " + o.file + " --rules conversion.yaml"
		if o.file == "-" {
			checkCmd = "hubspoke check --crd crd.yaml --rules conversion.yaml"
		}
	default:
		var err error
		if crd, _, err = readClusterCRD(cmd.Context(), &o.kube, args[0]); err != nil {
			return err
		}
		source = "the cluster's CustomResourceDefinition " + args[0]
		checkCmd = "hubspoke check --rules conversion.yaml --live" + o.kube.flags()
	}
	res, err := suggest.Suggest(crd, suggest.Options{Hub: o.hub})
	if err != nil {
		return usageError{err}
	}
	out := res.YAML(suggest.Header{Source: source, Check: checkCmd})
	if _, err := cmd.OutOrStdout().Write(out); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	rf, err := rules.Parse("conversion.yaml (suggested)", out)
	if err != nil {
		return fmt.Errorf("the suggested rules do not load (a defect of hubspoke init): %w", err)
	}
	fmt.Fprintf(stderr, "init: %d spokes, %d rules, %d TODOs; hub %s (%s)\n", len(res.Spokes), countRules(res), res.TODOs(), res.Hub, res.HubReason)
	if !o.check {
		fmt.Fprintf(stderr, "check it: %s\n", checkCmd)
		return nil
	}
	conv, err := rf.Converter()
	if err != nil {
		return fmt.Errorf("the suggested rules do not compile (a defect of hubspoke init): %w", err)
	}
	co := &checkOptions{}
	report := co.staticChecks(crd, rf)
	if o.objects > 0 {
		report.Merge(check.Laws(cmd.Context(), crd, conv, check.Options{Objects: o.objects, Seed: o.seed, ShrinkTime: 2 * time.Second}))
	}
	fmt.Fprintln(stderr, "check of the suggested rules (fix what it finds, then check again):")
	if err := report.WriteText(stderr); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "check it again once edited: %s\n", checkCmd)
	return nil
}

func countRules(r *suggest.Result) int {
	n := 0
	for _, s := range r.Spokes {
		n += len(s.Rules)
	}
	return n
}

// readCRDFile reads a CRD from path, or from standard input for "-".
func readCRDFile(cmd *cobra.Command, path string) (*schema.CRD, error) {
	if path != "-" {
		crd, err := schema.LoadFile(path)
		if err != nil {
			return nil, usageError{fmt.Errorf("load crd: %w", err)}
		}
		return crd, nil
	}
	data, err := io.ReadAll(cmd.InOrStdin())
	if err != nil {
		return nil, usageError{fmt.Errorf("read standard input: %w", err)}
	}
	crd, err := schema.Load("stdin", data)
	if err != nil {
		return nil, usageError{fmt.Errorf("load crd: %w", err)}
	}
	return crd, nil
}

// flags are the command-line flags that name this cluster, for a command
// printed to run next.
func (k *kubeFlags) flags() string {
	s := ""
	if k.kubeconfig != "" {
		s += " --kubeconfig " + k.kubeconfig
	}
	if k.context != "" {
		s += " --context " + k.context
	}
	return s
}
