package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/check/webhook"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

type checkOptions struct {
	crd      string
	rules    string
	fixtures string
	output   string
	objects  int
	seed     uint64
	shrink   time.Duration
	webhook  string
	caFile   string
	review   string
	previous string
}

func newCheckCmd() *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check --crd CRD.yaml (--rules RULES.yaml | --webhook URL) [--fixtures DIR] [-o text|json]",
		Short: "Prove a conversion before it ships: static checks, round-trip laws, fixtures",
		Long: `Check runs, for a CRD and its rule file:

  - static checks: one storage version, structural schemas, the conversion
    stanza, rule paths that exist, domain containment of every mapped field
    (type, format, bounds, enum, pattern, lengths, required, nullable, list
    type), lossy fields and differing defaults;
  - laws on objects generated from each version's schema (--objects per law
    and version pair; 0 skips them): spoke->hub->spoke and hub->spoke->hub
    identity, agreement of every conversion path, determinism, and validity
    of every output against the target schema, each failure with a minimal
    counterexample and the JSON pointer of the first difference;
  - with --fixtures DIR, golden cases (see docs/check.md for the layout);
  - with --webhook URL, the laws run against that running conversion
    webhook (whoever wrote it) instead of the rules, plus protocol
    conformance: uid echo, batch order and count, same-version identity,
    unsupported target, malformed reviews, v1beta1 reviews and the API
    server's rules for converted objects;
  - with --previous OLD.yaml, breaking changes from that revision of the
    CRD: versions removed or unserved, storage moved, fields removed,
    types changed, enums narrowed, bounds tightened, new required fields.

Exit status: 0 clean, 1 violations found, 2 usage error (including an
unreadable or invalid CRD or rule file).`,
		Example: `  hubspoke check --crd examples/evolving-widget/crd.yaml \
      --rules examples/evolving-widget/conversion.yaml
  hubspoke check --rules conversion.yaml --fixtures fixtures/ -o json
  hubspoke check --crd crd.yaml --webhook https://127.0.0.1:8443/convert --ca-file ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.crd, "crd", "", "CustomResourceDefinition file (YAML or JSON)")
	f.StringVar(&o.rules, "rules", "", "rule file (hubspoke.dev/v1alpha1 Conversion)")
	f.StringVar(&o.fixtures, "fixtures", "", "directory of golden fixture cases to run")
	f.StringVarP(&o.output, "output", "o", "text", "report format: text or json")
	f.IntVar(&o.objects, "objects", 1000, "generated objects per law and version pair (0 skips the laws)")
	f.Uint64Var(&o.seed, "seed", 0, "random seed for the generated objects (0: random)")
	f.DurationVar(&o.shrink, "shrink-time", 5*time.Second, "time limit to minimise each counterexample")
	f.StringVar(&o.webhook, "webhook", "", "check this running conversion webhook (https URL) instead of the rules")
	f.StringVar(&o.caFile, "ca-file", "", "PEM CA bundle to trust for --webhook (default: system roots)")
	f.StringVar(&o.previous, "previous", "", "previous revision of the CRD: report breaking changes from it to --crd")
	f.StringVar(&o.review, "review-version", "v1", "ConversionReview version the laws send to --webhook: v1 or v1beta1")
	return cmd
}

func (o *checkOptions) run(cmd *cobra.Command) error {
	if o.output != "text" && o.output != "json" {
		return usagef("unknown output format %q (want text or json)", o.output)
	}
	if o.webhook != "" {
		return o.runWebhook(cmd)
	}
	if o.rules == "" {
		return usagef("no rules: give --rules FILE (or --webhook URL)")
	}
	if o.crd == "" && o.fixtures == "" {
		return usagef("nothing to check: give --crd FILE, --fixtures DIR or both")
	}
	if o.objects < 0 {
		return usagef("--objects must not be negative")
	}
	conv, err := rules.LoadFile(o.rules)
	if err != nil {
		return usageError{fmt.Errorf("load rules: %w", err)}
	}
	var crd *schema.CRD
	report := &check.Report{}
	if o.crd != "" {
		if crd, err = schema.LoadFile(o.crd); err != nil {
			return usageError{fmt.Errorf("load crd: %w", err)}
		}
		rs, err := check.LoadRulesFile(o.rules)
		if err != nil {
			return usageError{fmt.Errorf("load rules: %w", err)}
		}
		report.Merge(check.Static(crd, rs))
		if err := o.evolution(report, crd, rs); err != nil {
			return err
		}
		if o.objects > 0 {
			report.Merge(check.Laws(cmd.Context(), crd, conv, o.lawOptions()))
		}
	} else if o.previous != "" {
		return usagef("--previous needs --crd FILE")
	}
	if o.fixtures != "" {
		fr, err := check.Fixtures(cmd.Context(), o.fixtures, conv, crd)
		if err != nil {
			return usageError{err}
		}
		report.Merge(fr)
	}
	return o.finish(cmd, report)
}

func (o *checkOptions) lawOptions() check.Options {
	return check.Options{Objects: o.objects, Seed: o.seed, ShrinkTime: o.shrink}
}

// runWebhook checks a running webhook: static checks of the CRD (and of the
// rules when given), the laws through the webhook, protocol conformance and
// fixtures.
func (o *checkOptions) runWebhook(cmd *cobra.Command) error {
	if o.crd == "" {
		return usagef("--webhook needs --crd FILE")
	}
	if o.objects < 0 {
		return usagef("--objects must not be negative")
	}
	crd, err := schema.LoadFile(o.crd)
	if err != nil {
		return usageError{fmt.Errorf("load crd: %w", err)}
	}
	var rs *check.Rules
	if o.rules != "" {
		if rs, err = check.LoadRulesFile(o.rules); err != nil {
			return usageError{fmt.Errorf("load rules: %w", err)}
		}
	}
	client, err := webhook.New(webhook.FromCRD(crd, webhook.Options{URL: o.webhook, CAFile: o.caFile, ReviewVersion: o.review}))
	if err != nil {
		return usageError{err}
	}
	report := check.Static(crd, rs)
	if err := o.evolution(report, crd, rs); err != nil {
		return err
	}
	report.Merge(webhook.Conformance(cmd.Context(), client, crd))
	if o.objects > 0 {
		report.Merge(check.Laws(cmd.Context(), crd, client, o.lawOptions()))
	}
	if o.fixtures != "" {
		fr, err := check.Fixtures(cmd.Context(), o.fixtures, client, crd)
		if err != nil {
			return usageError{err}
		}
		report.Merge(fr)
	}
	return o.finish(cmd, report)
}

// evolution adds the breaking changes from --previous, when given.
func (o *checkOptions) evolution(report *check.Report, crd *schema.CRD, rs *check.Rules) error {
	if o.previous == "" {
		return nil
	}
	prev, err := schema.LoadFile(o.previous)
	if err != nil {
		return usageError{fmt.Errorf("load previous crd: %w", err)}
	}
	report.Merge(check.Evolution(prev, crd, rs))
	return nil
}

func (o *checkOptions) finish(cmd *cobra.Command, report *check.Report) error {
	var err error
	out := cmd.OutOrStdout()
	if o.output == "json" {
		err = report.WriteJSON(out)
	} else {
		err = report.WriteText(out)
	}
	if err != nil {
		return err
	}
	if report.Errors() > 0 {
		return exitError{exitFail}
	}
	return nil
}
