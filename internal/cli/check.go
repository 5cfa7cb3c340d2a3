package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/check/webhook"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/yamljson"
	"github.com/hubspoke/hubspoke/schema"
)

type checkOptions struct {
	crd           string
	rules         string
	previousRules string
	fixtures      string
	output        string
	objects       int
	seed          uint64
	shrink        time.Duration
	webhooks      []string
	caFile        string
	review        string
	previous      string
	laws          []string
	ignores       []string
	limit         int
	// progress shows the laws' progress on a terminal (nil otherwise).
	progress func(check.LawProgress)
	junit    string
	live     liveFlags
}

// allLaws are the names --laws accepts.
var allLaws = []string{check.LawSpokeRoundTrip, check.LawHubRoundTrip, check.LawPathAgreement, check.LawDeterminism, check.LawRollout}

func newCheckCmd() *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check --crd CRD.yaml [--rules RULES.yaml | --webhook URL] [--previous OLD_CRD.yaml] [--fixtures DIR] [--live] [-o text|json|yaml] [--junit FILE]",
		Short: "Prove a conversion before it ships: static checks, round-trip laws, fixtures, the cluster's objects",
		Long: `Check runs, for a CRD and its rule file (or a running webhook):

  - static checks: one storage version, structural schemas, the conversion
    stanza, rule paths that exist, domain containment of every mapped field
    (type, format, bounds, enum, pattern, lengths, required, nullable, list
    type), lossy fields and differing defaults;
  - laws on objects generated from each version's schema (--objects per law
    and version pair; 0 skips them): spoke->hub->spoke and hub->spoke->hub
    identity, agreement of every conversion path, determinism; every step
    checked against the API server's rules and the target schema, after the
    API server's own coercion (pruning, non-nullable nulls, defaults). Every
    distinct failure is reported with a minimal counterexample, the JSON
    pointer and the number of objects that showed it;
  - with --fixtures DIR, golden cases (see docs/check.md for the layout);
  - with --webhook URL, the laws run against that running conversion
    webhook (whoever wrote it) instead of the rules, plus protocol
    conformance: uid echo, batch order and count, same-version identity,
    unsupported target, malformed reviews, v1beta1 reviews and the API
    server's rules for converted objects;
  - with --previous OLD.yaml, breaking changes from that revision of the
    CRD (no rules needed): versions removed or unserved, storage moved,
    fields removed, types changed, enums narrowed, bounds tightened, new
    required fields;
  - with --previous-rules OLD.yaml, or a second --webhook URL (the old
    one), rolling-update safety: old and new conversion serve the same
    versions and give the same answers;
  - with --live, every existing object of the CRD in the cluster
    (--kubeconfig, --context; -n, -A, -l as kubectl), read at its storage
    version page by page, converted through every pair of served versions
    and judged as the laws judge generated objects: the gate to run before
    a rollout. Without --crd, the cluster's CRD is the one checked; the
    rule file's metadata.name (or --crd's) names it. Read-only: get on the
    CRD, list on its resource.

--junit FILE also writes the report as JUnit XML for CI systems: a
testcase per static check, per pair of versions of the laws, per fixture
and per live object.

Exit status: 0 clean, 1 errors found, 2 usage error (including an
unreadable or invalid CRD or rule file).`,
		Example: `  hubspoke check --crd examples/evolving-widget/crd.yaml \
      --rules examples/evolving-widget/conversion.yaml
  hubspoke check --rules conversion.yaml --fixtures fixtures/ -o json
  hubspoke check --crd crd.yaml --webhook https://127.0.0.1:8443/convert --ca-file ca.pem
  hubspoke check --crd crd.yaml --rules new.yaml --previous-rules old.yaml --laws rollout-agreement
  hubspoke check --crd new-crd.yaml --previous old-crd.yaml
  hubspoke check --crd crd.yaml --rules rules.yaml --ignore /status/lastSeen="set by the controller"
  hubspoke check --rules conversion.yaml --live --objects 0 -n team-a --junit live.xml
  hubspoke check --crd new-crd.yaml --rules new.yaml --live --context prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.crd, "crd", "", "CustomResourceDefinition file (YAML or JSON)")
	f.StringVar(&o.rules, "rules", "", "rule file (hubspoke.dev/v1alpha1 Conversion)")
	f.StringVar(&o.previousRules, "previous-rules", "", "rule file deployed today: check that a rollout from it to --rules is safe")
	f.StringVar(&o.fixtures, "fixtures", "", "directory of golden fixture cases to run")
	f.StringVarP(&o.output, "output", "o", "text", "report format: text, json or yaml (the same fields as json)")
	f.IntVar(&o.objects, "objects", 1000, "generated objects per law and version pair (0 skips the laws)")
	f.Uint64Var(&o.seed, "seed", 0, "random seed for the generated objects (0: random)")
	f.DurationVar(&o.shrink, "shrink-time", 5*time.Second, "time to minimise the counterexamples of each law and version pair")
	f.StringArrayVar(&o.webhooks, "webhook", nil, "check this running conversion webhook (https URL) instead of the rules; a second --webhook is the one deployed today, for rollout safety")
	f.StringVar(&o.caFile, "ca-file", "", "PEM CA bundle to trust for --webhook (default: system roots)")
	f.StringVar(&o.previous, "previous", "", "previous revision of the CRD: report breaking changes from it to --crd")
	f.StringVar(&o.review, "review-version", "v1", "ConversionReview version the laws send to --webhook: v1 or v1beta1")
	f.StringSliceVar(&o.laws, "laws", nil, "run only these laws (comma-separated): "+strings.Join(allLaws, ", "))
	f.StringArrayVar(&o.ignores, "ignore", nil, "POINTER=REASON: silence findings at this JSON pointer (list indexes as *); listed in the report with the reason")
	f.IntVar(&o.limit, "max-findings", 10, "findings printed per check and version pair in text output (all are counted; -o json lists all)")
	f.StringVar(&o.junit, "junit", "", "also write the report as JUnit XML to this file, for CI systems")
	o.live.add(cmd)
	return cmd
}

func (o *checkOptions) validate() error {
	if o.output != "text" && o.output != "json" && o.output != "yaml" {
		return usagef("unknown output format %q (want text, json or yaml)", o.output)
	}
	if o.objects < 0 {
		return usagef("--objects must not be negative")
	}
	if o.shrink < 0 {
		return usagef("--shrink-time must not be negative")
	}
	if o.limit < 1 {
		return usagef("--max-findings %d: want 1 or more (-o json lists every finding)", o.limit)
	}
	for _, l := range o.laws {
		if !slices.Contains(allLaws, l) {
			return usagef("unknown law %q in --laws (want %s)", l, strings.Join(allLaws, ", "))
		}
	}
	for _, ig := range o.ignores {
		p, reason, ok := strings.Cut(ig, "=")
		if !ok || reason == "" || (p != "" && !strings.HasPrefix(p, "/")) {
			return usagef("--ignore %q: want POINTER=REASON, with a JSON pointer such as /status/lastSeen and a reason", ig)
		}
	}
	if len(o.webhooks) > 2 {
		return usagef("--webhook given %d times: give the webhook to check, and at most one more (the one deployed today)", len(o.webhooks))
	}
	if o.previousRules != "" && len(o.webhooks) == 2 {
		return usagef("--previous-rules and a second --webhook both name the deployed conversion: give one")
	}
	for _, w := range o.webhooks {
		if u, err := url.Parse(w); err != nil || u.Scheme != "https" || u.Host == "" {
			return usagef("--webhook %q: want an https URL such as https://127.0.0.1:8443/convert", w)
		}
	}
	return o.live.validate()
}

func (o *checkOptions) run(cmd *cobra.Command) error {
	if err := o.validate(); err != nil {
		return err
	}
	if isTerminal(cmd.ErrOrStderr()) {
		o.progress = lawProgress(cmd.ErrOrStderr())
	}
	if len(o.webhooks) > 0 {
		return o.runWebhook(cmd)
	}
	if o.rules == "" && o.previous == "" {
		return usagef("no rules: give --rules FILE (or --webhook URL, or --previous OLD_CRD to check the CRD's evolution alone)")
	}
	if o.crd == "" && o.fixtures == "" && !o.live.on {
		return usagef("nothing to check: give --crd FILE, --fixtures DIR, --live, or several")
	}
	if o.crd == "" && o.previous != "" {
		return usagef("--previous needs --crd FILE")
	}
	if o.live.on && o.rules == "" {
		return usagef("--live needs --rules FILE or --webhook URL: the conversion to check the objects with")
	}
	var rf *rules.File
	var conv check.Converter
	if o.rules != "" {
		var err error
		if rf, err = rules.ParseFile(o.rules); err != nil {
			return usageError{fmt.Errorf("load rules: %w", err)}
		}
		c, err := rf.Converter()
		if err != nil {
			return usageError{fmt.Errorf("load rules: %w", err)}
		}
		conv = c
	}
	crd, src, err := o.loadCRD(cmd, rf)
	if err != nil {
		return err
	}
	report := &check.Report{}
	if crd != nil {
		report.Merge(o.staticChecks(crd, rf))
		if err := o.evolution(report, crd, rf); err != nil {
			return err
		}
		if o.objects > 0 && conv != nil {
			report.Merge(check.Laws(cmd.Context(), crd, conv, o.lawOptions()))
			o.addCases(report, check.LawCases(crd, conv)...)
		}
		if o.previousRules != "" {
			if conv == nil {
				return usagef("--previous-rules needs --rules FILE (the new rules)")
			}
			old, err := rules.LoadFile(o.previousRules)
			if err != nil {
				return usageError{fmt.Errorf("load previous rules: %w", err)}
			}
			o.rollout(cmd, report, crd, conv, old)
		}
	}
	if o.fixtures != "" {
		if conv == nil {
			return usagef("--fixtures needs --rules FILE or --webhook URL")
		}
		if err := o.runFixtures(cmd, report, conv, crd); err != nil {
			return err
		}
	}
	if src != nil {
		lr, err := src.check(cmd.Context(), &o.live, crd, conv, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		report.Merge(lr)
	}
	return o.finish(cmd, report, crd)
}

// loadCRD returns the CRD to check: --crd's, or with --live and no
// --crd, the cluster's. With --live it also returns the cluster's CRD and
// client (src), named by --crd's metadata.name or the rule file's.
func (o *checkOptions) loadCRD(cmd *cobra.Command, rf *rules.File) (crd *schema.CRD, src *liveSource, err error) {
	if o.crd != "" {
		if crd, err = schema.LoadFile(o.crd); err != nil {
			return nil, nil, usageError{fmt.Errorf("load crd: %w", err)}
		}
	}
	if !o.live.on {
		return crd, nil, nil
	}
	name := ""
	switch {
	case crd != nil:
		name = crd.Object.Name
	case rf != nil:
		name = rf.MetadataName
	}
	if name == "" {
		return nil, nil, usagef("--live: which CustomResourceDefinition? give --crd FILE, or name it in the rule file's metadata.name")
	}
	if src, err = o.live.open(cmd.Context(), name); err != nil {
		return nil, nil, err
	}
	if crd == nil {
		crd = src.crd
	}
	if rf != nil && (rf.Group != src.group || rf.Kind != src.crd.Kind()) {
		return nil, nil, usagef("--live: the cluster's CustomResourceDefinition %s is %s %s, the rule file's %s %s", name, src.group, src.crd.Kind(), rf.Group, rf.Kind)
	}
	return crd, src, nil
}

// runFixtures runs --fixtures with conv, and their JUnit cases.
func (o *checkOptions) runFixtures(cmd *cobra.Command, report *check.Report, conv check.Converter, crd *schema.CRD) error {
	fr, err := check.Fixtures(cmd.Context(), o.fixtures, conv, crd)
	if err != nil {
		return usageError{err}
	}
	report.Merge(fr)
	if o.junit != "" {
		fx, err := check.LoadFixtures(o.fixtures)
		if err != nil {
			return usageError{err}
		}
		o.addCases(report, check.FixtureCases(fx)...)
	}
	return nil
}

// addCases records what ran, for --junit.
func (o *checkOptions) addCases(report *check.Report, cases ...check.Case) {
	if o.junit != "" {
		report.Cases = append(report.Cases, cases...)
	}
}

func (o *checkOptions) lawOptions() check.Options {
	var laws []string
	for _, l := range o.laws {
		if l != check.LawRollout {
			laws = append(laws, l)
		}
	}
	if len(o.laws) > 0 && len(laws) == 0 {
		laws = []string{"none"} // only rollout-agreement asked for
	}
	return check.Options{Objects: o.objects, Seed: o.seed, ShrinkTime: o.shrink, Laws: laws, Progress: o.progress}
}

func (o *checkOptions) wantsRollout() bool {
	return len(o.laws) == 0 || slices.Contains(o.laws, check.LawRollout)
}

func (o *checkOptions) rollout(cmd *cobra.Command, report *check.Report, crd *schema.CRD, next, prev check.Converter) {
	if o.objects == 0 || !o.wantsRollout() {
		return
	}
	opts := o.lawOptions()
	opts.Laws = nil
	report.Merge(check.Rollout(cmd.Context(), crd, next, prev, opts))
	o.addCases(report, check.RolloutCases(next)...)
}

// runWebhook checks a running webhook: static checks of the CRD (and of the
// rules when given), the laws through the webhook, protocol conformance,
// fixtures, and rollout safety against a second webhook or old rules.
func (o *checkOptions) runWebhook(cmd *cobra.Command) error {
	if o.crd == "" && !o.live.on {
		return usagef("--webhook needs --crd FILE (or --live, to check the cluster's CRD)")
	}
	var rf *rules.File
	var err error
	if o.rules != "" {
		if rf, err = rules.ParseFile(o.rules); err != nil {
			return usageError{fmt.Errorf("load rules: %w", err)}
		}
	}
	crd, src, err := o.loadCRD(cmd, rf)
	if err != nil {
		return err
	}
	client, err := webhook.New(webhook.FromCRD(crd, webhook.Options{URL: o.webhooks[0], CAFile: o.caFile, ReviewVersion: o.review}))
	if err != nil {
		return usageError{err}
	}
	var prev check.Converter
	switch {
	case len(o.webhooks) == 2:
		if prev, err = webhook.New(webhook.FromCRD(crd, webhook.Options{URL: o.webhooks[1], CAFile: o.caFile, ReviewVersion: o.review})); err != nil {
			return usageError{err}
		}
	case o.previousRules != "":
		if prev, err = rules.LoadFile(o.previousRules); err != nil {
			return usageError{fmt.Errorf("load previous rules: %w", err)}
		}
	}
	report := o.staticChecks(crd, rf)
	if err := o.evolution(report, crd, rf); err != nil {
		return err
	}
	report.Merge(webhook.Conformance(cmd.Context(), client, crd))
	for _, n := range []string{webhook.CheckReachable, webhook.CheckUID, webhook.CheckResponseKind, webhook.CheckBatch, webhook.CheckSameVersion,
		webhook.CheckUnsupportedTarget, webhook.CheckMalformed, webhook.CheckV1beta1, webhook.CheckObjectRules} {
		o.addCases(report, check.Case{Suite: "protocol", Name: n, Checks: []string{n}})
	}
	if o.objects > 0 {
		report.Merge(check.Laws(cmd.Context(), crd, client, o.lawOptions()))
		o.addCases(report, check.LawCases(crd, client)...)
	}
	if prev != nil {
		o.rollout(cmd, report, crd, client, prev)
	}
	if o.fixtures != "" {
		if err := o.runFixtures(cmd, report, client, crd); err != nil {
			return err
		}
	}
	if src != nil {
		lr, err := src.check(cmd.Context(), &o.live, crd, client, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		report.Merge(lr)
	}
	return o.finish(cmd, report, crd)
}

// staticChecks runs check's static checks, and the API server's own
// validation of the CRD (crd-validation: check itself does not link it),
// when the binary has it (APIValidation).
func (o *checkOptions) staticChecks(crd *schema.CRD, rf *rules.File) *check.Report {
	report := check.Static(crd, rf)
	o.addCases(report, check.StaticCases(rf != nil, APIValidation.Create != nil)...)
	if APIValidation.Create == nil {
		return report
	}
	var refusals []check.CRDRefusal
	for _, r := range APIValidation.Create(crd.Object) {
		refusals = append(refusals, check.CRDRefusal{Pointer: r.Pointer, Pos: crd.Pos(r.Pointer), Message: r.Message})
	}
	report.AddCRDRefusals(refusals)
	return report
}

// evolution adds the breaking changes from --previous, when given.
func (o *checkOptions) evolution(report *check.Report, crd *schema.CRD, rf *rules.File) error {
	if o.previous == "" {
		return nil
	}
	prev, err := schema.LoadFile(o.previous)
	if err != nil {
		return usageError{fmt.Errorf("load previous crd: %w", err)}
	}
	report.Merge(check.Evolution(prev, crd, rf))
	o.addCases(report, check.EvolutionCases()...)
	return nil
}

func (o *checkOptions) finish(cmd *cobra.Command, report *check.Report, crd *schema.CRD) error {
	for _, ig := range o.ignores {
		p, reason, _ := strings.Cut(ig, "=")
		report.Ignore(p, reason)
	}
	report.Limit = o.limit
	if o.junit != "" {
		name := "hubspoke check"
		if crd != nil {
			name = crd.Object.Name
		}
		if err := writeFileAtomic(o.junit, func(w io.Writer) error { return report.WriteJUnit(w, name) }); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	var err error
	out := cmd.OutOrStdout()
	switch o.output {
	case "json":
		err = report.WriteJSON(out)
	case "yaml":
		err = writeYAML(out, report.WriteJSON)
	default:
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

// writeYAML writes as YAML what writeJSON writes as JSON: the same fields,
// in the same order (kubectl's -o yaml of an -o json).
func writeYAML(w io.Writer, writeJSON func(io.Writer) error) error {
	var b bytes.Buffer
	if err := writeJSON(&b); err != nil {
		return err
	}
	y, err := yamljson.FromJSON(b.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lawProgress returns a progress line for a terminal: the law run under
// way, rewritten in place, cleared when all are done.
func lawProgress(w io.Writer) func(check.LawProgress) {
	start := time.Now()
	return func(p check.LawProgress) {
		if p.Done == p.Total {
			fmt.Fprint(w, "\r\x1b[K")
			return
		}
		fmt.Fprintf(w, "\r\x1b[Kchecking: law %d/%d, %s %s -> %s (%s)", p.Done+1, p.Total, p.Law, p.From, p.To, time.Since(start).Round(time.Second))
	}
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed over it once complete: a reader never sees half a file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
