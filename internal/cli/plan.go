package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/migrate"
	"github.com/hubspoke/hubspoke/schema"
)

type planOptions struct {
	kube        kubeFlags
	crd         string
	rules       string
	webhookURL  string
	caFile      string
	insecure    bool
	execute     bool
	output      string
	concurrency int

	// rollback only
	to        string
	backup    string
	overwrite bool
}

const planGates = `Gates: the webhook answers every served pair (a live probe: straight to the
webhook with --webhook-url or a clientConfig.url, else through the API
server for the versions it serves), exactly one storage version, no version
removed while still in storedVersions, no version unserved while objects may
remain stored in it, the API server accepting each CRD update (server dry
run), and hubspoke check passing (--rules) for the CRD the upgrade serves
(the new CRD's versions and the live ones it drops). A gate that fails
lists its reasons (check's findings, the objects concerned).

The direct probe trusts --ca-file when given, else the caBundle of the
target CRD (or of the live CRD when the target names none), and checks the
certificate against the name of the CRD's service (NAME.NAMESPACE.svc).

--execute first measures every gate of every step: if one fails, nothing
is changed. Then it runs the steps in order, skipping those already done,
measuring each step's gates again once an earlier step changed the
cluster, and stopping at the first that does not pass, saying why. Running
it again (also after Ctrl-C) continues where it stopped. With -o json or
yaml, the steps' progress goes to standard error and one document with
the plan and what each step did to standard output.

Exit status: 0 every gate passes (or every step ran), 1 a gate fails (or a
step failed), 2 usage error. See docs/migrate.md for the scenarios.`

func newPlanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan (upgrade|rollback)",
		Short: "Print (and with --execute run) the gated steps of a CRD upgrade or rollback",
		Long: `Plan compares the live CRD and its conversion webhook with the target and
prints the ordered steps, each with gates measured on the live cluster.
See "hubspoke plan upgrade --help" and "hubspoke plan rollback --help".

` + planGates,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("plan %q: want upgrade or rollback", args[0])
			}
			return usagef("plan: want upgrade or rollback")
		},
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(newPlanUpgradeCmd(), newPlanRollbackCmd())
	return cmd
}

func (o *planOptions) addCommon(cmd *cobra.Command) {
	o.kube.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.webhookURL, "webhook-url", "", "reach the conversion webhook at this URL for the live probe (e.g. a port-forward)")
	f.StringVar(&o.caFile, "ca-file", "", "PEM CA bundle to trust for the probe (default: the target CRD's caBundle)")
	f.BoolVar(&o.insecure, "webhook-insecure", false, "do not verify the webhook's certificate (a last resort; prefer --ca-file)")
	f.BoolVar(&o.execute, "execute", false, "run the steps whose gates pass, stopping at the first that fails")
	f.StringVarP(&o.output, "output", "o", "text", "plan format: text, json or yaml")
	f.IntVar(&o.concurrency, "concurrency", migrate.DefaultConcurrency, "objects written at once by the migration step")
}

func newPlanUpgradeCmd() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "upgrade --crd NEW.yaml [--rules RULES.yaml] [--webhook-url URL [--ca-file CA.pem]] [--execute]",
		Short: "Plan (and run) the upgrade of a CRD to NEW.yaml",
		Long: `Plan upgrade compares the live CRD with NEW.yaml and prints the steps:

  webhook answers every served pair -> new versions served, not storage ->
  storage switched -> objects migrated -> storedVersions pruned -> old
  versions no longer served -> removed

` + planGates,
		Example: `  hubspoke plan upgrade --crd crd-v2.yaml --rules conversion.yaml --webhook-url https://127.0.0.1:9443/convert --ca-file ca.crt
  hubspoke plan upgrade --crd crd-v2.yaml --rules conversion.yaml --execute`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.crd == "" {
				return usagef("plan upgrade needs --crd NEW.yaml")
			}
			return o.run(cmd, "upgrade", "")
		},
	}
	o.addCommon(cmd)
	cmd.Flags().StringVar(&o.crd, "crd", "", "the target CRD file (required)")
	cmd.Flags().StringVar(&o.rules, "rules", "", "conversion rules: run hubspoke check on the target")
	return cmd
}

func newPlanRollbackCmd() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "rollback CRD-NAME --to VERSION [--backup FILE [--overwrite-changed]] [--crd OLD.yaml] [--execute]",
		Short: "Plan (and run) the rollback of a CRD to an earlier storage version",
		Long: `Plan rollback makes VERSION the storage version of the CRD again:

  webhook answers every served pair -> VERSION served again -> storage
  switched to it -> objects migrated -> storedVersions pruned -> (with
  --backup) objects restored from the backup

VERSION must be defined by the live CRD, by --crd OLD.yaml or by the
backup; a version nothing defines is a usage error. With --backup, the
objects changed since the backup was taken are listed: the restore would
overwrite them, so the first step does not pass without
--overwrite-changed. They are compared by content at the backup's
version: through the API server while it serves that version, else
converted with --rules (or through the webhook at --webhook-url), so an
object that a migration re-encoded and nobody edited is unchanged. Every
object of the backup is checked before anything changes (group, kind,
namespace, version).

` + planGates,
		Example: `  hubspoke plan rollback widgets.example.com --to v1
  hubspoke plan rollback widgets.example.com --to v1 --backup widgets-backup.jsonl --execute`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return o.run(cmd, "rollback", name)
		},
	}
	o.addCommon(cmd)
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "the version to roll back to (required)")
	f.StringVar(&o.crd, "crd", "", "a CRD file defining VERSION if the live CRD no longer does (its name is the default CRD-NAME)")
	f.StringVar(&o.rules, "rules", "", "conversion rules, to convert backed-up objects of versions no longer served")
	f.StringVar(&o.backup, "backup", "", "a backup file to restore after the storage switch (- for standard input)")
	f.BoolVar(&o.overwrite, "overwrite-changed", false, "let the restore overwrite objects changed since the backup")
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command, kind, name string) error {
	if err := checkReportFormat(o.output, ""); err != nil {
		return err
	}
	opts := migrate.PlanOptions{Migrate: migrate.Options{Concurrency: o.concurrency}, OverwriteChanged: o.overwrite}
	if o.webhookURL != "" {
		opts.Prober = &migrate.WebhookProber{URL: o.webhookURL, CAFile: o.caFile, InsecureSkipVerify: o.insecure}
	} else if o.caFile != "" || o.insecure {
		return usagef("--ca-file and --webhook-insecure apply to the direct probe: give --webhook-url too")
	}
	var target *apiextensionsv1.CustomResourceDefinition
	if o.crd != "" {
		crd, err := schema.LoadFile(o.crd)
		if err != nil {
			return usageError{err}
		}
		target = crd.Object
	}
	if o.rules != "" {
		conv, err := rules.LoadFile(o.rules)
		if err != nil {
			return usageError{err}
		}
		opts.Converter = conv
		crdFile := o.crd
		opts.Check = func(ctx context.Context, served *apiextensionsv1.CustomResourceDefinition) error {
			return runCheck(ctx, crdFile, served, o.rules)
		}
	}
	ctx := cmd.Context()
	var (
		plan *migrate.Plan
		err  error
	)
	switch kind {
	case "upgrade":
		if opts.Client, err = o.kube.dynamic(); err != nil {
			return err
		}
		plan, err = migrate.PlanUpgrade(ctx, target, opts)
	case "rollback":
		if name == "" && target != nil {
			name = target.Name
		}
		if name == "" || o.to == "" {
			return usagef("plan rollback needs CRD-NAME (or --crd) and --to VERSION")
		}
		if o.overwrite && o.backup == "" {
			return usagef("--overwrite-changed applies to a restore: give --backup FILE too")
		}
		if o.backup != "" {
			if opts.Backup, err = readBackupFile(o.backup, cmd.InOrStdin()); err != nil {
				return fmt.Errorf("rollback: %w", err)
			}
		}
		opts.Definition = target
		if opts.Client, err = o.kube.dynamic(); err != nil {
			return err
		}
		plan, err = migrate.PlanRollback(ctx, name, o.to, opts)
		var ve *migrate.VersionError
		if errors.As(err, &ve) {
			return usagef("--to %s: %w", o.to, ve)
		}
	}
	if interrupted(ctx, err) {
		return errors.New("interrupted; nothing changed")
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !o.execute {
		if o.output != "text" {
			err = writeStructured(out, o.output, plan)
		} else {
			err = plan.WriteText(out)
		}
		if err != nil {
			return err
		}
		if plan.Blocked() != nil {
			return exitError{exitFail}
		}
		return nil
	}
	progress := out
	if o.output != "text" {
		progress = cmd.ErrOrStderr()
	} else {
		if err := plan.WriteText(out); err != nil {
			return err
		}
		fmt.Fprintln(out, "executing:")
	}
	execErr := plan.Execute(ctx, progress)
	var se *migrate.StepError
	stepErr := errors.As(execErr, &se)
	if interrupted(ctx, execErr) {
		execErr, stepErr = errInterrupted, false
	}
	if o.output != "text" {
		doc := planExecution{Plan: plan, Completed: execErr == nil}
		if execErr != nil {
			doc.Error = execErr.Error()
		}
		if stepErr {
			doc.StoppedAt, doc.NothingChanged = se.Step, se.BeforeStart
		}
		if err := writeStructured(out, o.output, doc); err != nil {
			return err
		}
		if stepErr {
			return exitError{exitFail}
		}
		return execErr
	}
	switch {
	case stepErr:
		writeStopped(out, se)
		return exitError{exitFail}
	case execErr != nil:
		return execErr
	}
	fmt.Fprintln(out, "every step done")
	return nil
}

// planExecution is plan --execute's document for -o json|yaml: the plan,
// each step's result, and where it stopped.
type planExecution struct {
	*migrate.Plan
	Completed bool `json:"completed"`
	// StoppedAt is the step (1-based) whose gate failed or that failed.
	StoppedAt int `json:"stoppedAt,omitempty"`
	// NothingChanged: a gate failed before the first step ran.
	NothingChanged bool   `json:"nothingChanged,omitempty"`
	Error          string `json:"error,omitempty"`
}

// writeStopped says where and why an execution stopped: each failing gate
// with its reasons.
func writeStopped(w io.Writer, se *migrate.StepError) {
	if se.Err != nil {
		fmt.Fprintf(w, "stopped: %v\n", se)
		return
	}
	if se.BeforeStart {
		fmt.Fprintf(w, "not started, nothing changed: a gate of step %d (%s) fails:\n", se.Step, se.Name)
	} else {
		fmt.Fprintf(w, "stopped at step %d (%s), whose gate does not pass:\n", se.Step, se.Name)
	}
	for _, g := range se.Gates {
		fmt.Fprintf(w, "   [%s] %s: %s\n", g.State, g.Name, g.Detail)
		for _, r := range g.Reasons {
			fmt.Fprintf(w, "       - %s\n", r)
		}
	}
}

// runCheck is hubspoke check --crd crdFile --rules rulesFile (static
// checks, with the file's line numbers), plus the round-trip laws on
// served: the CRD the upgrade serves while it migrates, which also has the
// versions crdFile drops, where objects are still stored. An error is a
// *migrate.GateError listing the errors found.
func runCheck(ctx context.Context, crdFile string, served *apiextensionsv1.CustomResourceDefinition, rulesFile string) error {
	if crdFile == "" {
		return errors.New("no target crd file to check")
	}
	rs, err := rules.ParseFile(rulesFile)
	if err != nil {
		return err
	}
	conv, err := rs.Converter()
	if err != nil {
		return err
	}
	crd, err := schema.LoadFile(crdFile)
	if err != nil {
		return err
	}
	lawsOn := crd
	if served != nil {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(served)
		if err != nil {
			return err
		}
		m["apiVersion"], m["kind"] = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if lawsOn, err = schema.Load(crdFile+" with the live versions it drops", data); err != nil {
			return err
		}
	}
	// The API server's judgement of the CRD is the plan's dry-run gate's:
	// it ratchets against the live CRD, as the update will.
	report := check.Static(crd, rs)
	report.Merge(check.Laws(ctx, lawsOn, conv, check.Options{Objects: 50}))
	if report.Errors() == 0 {
		return nil
	}
	var reasons []string
	for _, f := range report.Findings {
		if f.Severity != check.SeverityError {
			continue
		}
		pair := f.From
		if f.To != "" {
			pair += " -> " + f.To
		}
		if pair == "" {
			pair = "crd"
		}
		reasons = append(reasons, pair+": "+f.Line())
	}
	return &migrate.GateError{Summary: fmt.Sprintf("hubspoke check --crd %s --rules %s: %s", crdFile, rulesFile, report.Summary()), Reasons: reasons}
}
