package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

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
	insecure    bool
	execute     bool
	to          string
	backup      string
	output      string
	concurrency int
}

func newPlanCmd() *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan (upgrade --crd NEW.yaml | rollback CRD-NAME --to VERSION) [--execute]",
		Short: "Print (and with --execute run) the gated steps of a CRD upgrade or rollback",
		Long: `Plan compares the live CRD and its conversion webhook with the target and
prints the ordered steps, each with gates measured on the live cluster:

  upgrade:  webhook answers every served pair -> new versions served, not
            storage -> storage switched -> objects migrated ->
            storedVersions pruned -> old versions no longer served -> removed
  rollback: webhook answers every served pair -> VERSION served again ->
            storage switched to it -> objects migrated -> storedVersions
            pruned -> (with --backup) objects restored from the backup

Gates: the webhook answers every served pair (a live probe: straight to the
webhook with --webhook-url or a clientConfig.url, else through the API
server for the versions it serves), exactly one storage version, no version
removed while still in storedVersions, no version unserved while objects may
remain stored in it, and hubspoke check passing for the new CRD (--rules).

--execute runs the steps in order, skipping those already done, measuring
each step's gates again first and stopping at the first that fails, saying
why. Running it again continues where it stopped.

Exit status: 0 every gate passes (or every step ran), 1 a gate fails (or a
step failed), 2 usage error. See docs/migrate.md for the scenarios.`,
		Example: `  hubspoke plan upgrade --crd crd-v2.yaml --rules conversion.yaml --webhook-url https://127.0.0.1:9443/convert
  hubspoke plan upgrade --crd crd-v2.yaml --rules conversion.yaml --execute
  hubspoke plan rollback widgets.example.com --to v1 --backup widgets-backup.jsonl --execute`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.kube.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.crd, "crd", "", "upgrade: the target CRD file; rollback: a CRD file defining VERSION if the live CRD no longer does")
	f.StringVar(&o.rules, "rules", "", "conversion rules: run hubspoke check on the target (upgrade) and convert backed-up objects (rollback)")
	f.StringVar(&o.webhookURL, "webhook-url", "", "reach the conversion webhook at this URL for the live probe (e.g. a port-forward); the CRD's caBundle is trusted")
	f.BoolVar(&o.insecure, "webhook-insecure", false, "do not verify the webhook's certificate")
	f.BoolVar(&o.execute, "execute", false, "run the steps whose gates pass, stopping at the first that fails")
	f.StringVar(&o.to, "to", "", "rollback: the version to roll back to (required)")
	f.StringVar(&o.backup, "backup", "", "rollback: a backup file to restore after the storage switch")
	f.StringVarP(&o.output, "output", "o", "text", "plan format: text or json")
	f.IntVar(&o.concurrency, "concurrency", migrate.DefaultConcurrency, "objects written at once by the migration step")
	return cmd
}

func (o *planOptions) run(cmd *cobra.Command, args []string) error {
	if o.output != "text" && o.output != "json" {
		return usagef("-o %q: want text or json", o.output)
	}
	opts := migrate.PlanOptions{Migrate: migrate.Options{Concurrency: o.concurrency}}
	if o.webhookURL != "" {
		opts.Prober = &migrate.WebhookProber{URL: o.webhookURL, InsecureSkipVerify: o.insecure}
	}
	var target *apiextensionsv1.CustomResourceDefinition
	if o.crd != "" {
		var err error
		if target, err = readCRD(o.crd); err != nil {
			return usageError{err}
		}
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
	switch args[0] {
	case "upgrade":
		if len(args) != 1 || target == nil {
			return usagef("plan upgrade takes no argument and needs --crd NEW.yaml")
		}
		if opts.Client, err = o.kube.dynamic(); err != nil {
			return err
		}
		plan, err = migrate.PlanUpgrade(ctx, target, opts)
	case "rollback":
		name := ""
		if len(args) == 2 {
			name = args[1]
		} else if target != nil {
			name = target.Name
		}
		if name == "" || o.to == "" {
			return usagef("plan rollback needs CRD-NAME (or --crd) and --to VERSION")
		}
		if o.backup != "" {
			f, err := os.Open(o.backup)
			if err != nil {
				return fmt.Errorf("rollback: %w", err)
			}
			opts.Backup, err = migrate.ReadBackup(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", o.backup, err)
			}
		}
		opts.Definition = target
		if opts.Client, err = o.kube.dynamic(); err != nil {
			return err
		}
		plan, err = migrate.PlanRollback(ctx, name, o.to, opts)
	default:
		return usagef("plan %q: want upgrade or rollback", args[0])
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

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("%s: not a named CustomResourceDefinition", path)
	}
	return &crd, nil
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
	report := check.Static(crd, rs)
	report.Merge(check.Laws(ctx, crd, conv, check.Options{Objects: 50}))
	if report.Errors() > 0 {
		return fmt.Errorf("hubspoke check --crd %s --rules %s: %s", crdFile, rulesFile, report.Summary())
	}
	return nil
}
