package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

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
remain stored in it, and hubspoke check passing for the new CRD (--rules).

The direct probe trusts --ca-file when given, else the caBundle of the
target CRD (or of the live CRD when the target names none), and checks the
certificate against the name of the CRD's service (NAME.NAMESPACE.svc).

--execute runs the steps in order, skipping those already done, measuring
each step's gates again first and stopping at the first that fails, saying
why. Running it again continues where it stopped.

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
	f.StringVarP(&o.output, "output", "o", "text", "plan format: text or json")
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
--overwrite-changed.

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
	if o.output != "text" && o.output != "json" {
		return usagef("-o %q: want text or json", o.output)
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
		opts.Check = func(ctx context.Context, _ *apiextensionsv1.CustomResourceDefinition) error {
			return runCheck(ctx, crdFile, o.rules)
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
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(plan); err != nil {
			return err
		}
	} else if err := plan.WriteText(out); err != nil {
		return err
	}
	if !o.execute {
		if plan.Blocked() != nil {
			return exitError{exitFail}
		}
		return nil
	}
	fmt.Fprintln(out, "executing:")
	if err := plan.Execute(ctx, out); err != nil {
		var se *migrate.StepError
		if errors.As(err, &se) {
			fmt.Fprintf(out, "stopped: %v\n", err)
			return exitError{exitFail}
		}
		return err
	}
	fmt.Fprintln(out, "every step done")
	return nil
}

// runCheck is hubspoke check --crd crdFile --rules rulesFile: static checks
// and the round-trip laws; an error summarises the violations.
func runCheck(ctx context.Context, crdFile, rulesFile string) error {
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
	// The API server's judgement of the CRD is the plan's dry-run gate's:
	// it ratchets against the live CRD, as the update will.
	report := check.Static(crd, rs)
	report.Merge(check.Laws(ctx, crd, conv, check.Options{Objects: 50}))
	if report.Errors() > 0 {
		return fmt.Errorf("hubspoke check --crd %s --rules %s: %s", crdFile, rulesFile, report.Summary())
	}
	return nil
}
