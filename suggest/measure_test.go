package suggest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/suggest"
)

// measured is what TestMeasureOnExamples finds for one example: the
// differences of its hand-written rule file (one rule each), how many the
// suggestion finds (a rule on the same field or inside it, or a TODO
// naming it) and gets right (the same
// kind of rule, paths and parameters; for cel, the same field turned by
// cel), the rules it adds that no hand-written rule has, its TODOs, and
// how the suggestion fares, unedited, on the example's own fixtures and
// under check (errors), beside the hand-written file.
type measured struct {
	name                     string
	hand, found, right, more int
	todos                    int
	fixtures, fixturesOK     int
	checkErrs, handCheckErrs int
}

// key params of each kind: what must agree for a rule to be right.
var keyParams = map[string][]string{
	"enum": {"values", "hubValues"}, "duration": {"unit", "spoke"}, "scale": {"multiply", "divide"},
	"listToMap": {"key"}, "mapToList": {"key"}, "split": {"pattern"}, "join": {"pattern"},
	"hubOnly": {"default"}, "spokeOnly": {"default"},
}

// The examples whose rule files are measured: the real CRDs, and
// hubspoke's own (gofuncs is Go funcs, not rules: left out).
var measuredExamples = []string{
	"kubebuilder-cronjob", "cert-manager-certificate", "cluster-api-ipaddressclaim",
	"knative-pingsource", "cluster-api-machinehealthcheck", "kueue-cohort",
	"widget", "evolving-widget", "fleet",
}

func measure(t *testing.T, name string) measured {
	t.Helper()
	dir := filepath.Join("..", "examples", name)
	crd, err := schema.LoadFile(filepath.Join(dir, "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hand, err := rules.ParseFile(filepath.Join(dir, "conversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := suggest.Suggest(crd, suggest.Options{Hub: hand.Hub})
	if err != nil {
		t.Fatal(err)
	}
	out := res.YAML(suggest.Header{Source: name})
	sugg, err := rules.Parse("suggested.yaml", out)
	if err != nil {
		t.Fatalf("suggestion does not load: %v", err)
	}
	m := measured{name: name, todos: res.TODOs()}
	for _, hs := range hand.Spokes {
		var ss []rules.RuleSpec
		for _, x := range sugg.Spokes {
			if x.Version == hs.Version {
				ss = x.Rules
			}
		}
		var notes []string
		for _, x := range res.Spokes {
			if x.Version == hs.Version {
				notes = x.Notes
			}
		}
		matched := make([]bool, len(ss))
		for _, h := range hs.Rules {
			m.hand++
			found, right := -1, -1
			for i, s := range ss {
				if !sameField(h, s) {
					continue
				}
				found = i
				if s.Type == h.Type && s.From.String() == h.From.String() && s.To.String() == h.To.String() && sameParams(h, s) {
					right = i
					break
				}
			}
			noted := slices.ContainsFunc(notes, func(n string) bool {
				return strings.HasPrefix(n, "TODO:") && (strings.Contains(n, " "+h.From.String()+" ") || strings.Contains(n, " "+h.From.String()+"."))
			})
			if found >= 0 || noted {
				m.found++
			}
			if found >= 0 {
				matched[found] = true
			}
			if right >= 0 {
				m.right++
				matched[right] = true
			}
			if testing.Verbose() && right < 0 {
				t.Logf("%s %s: %s %s -> %s: found %v, not right", name, hs.Version, h.Type, h.From, h.To, found >= 0)
			}
		}
		for i, ok := range matched {
			if !ok {
				m.more++
				if testing.Verbose() {
					t.Logf("%s %s: more: %s %s -> %s", name, hs.Version, ss[i].Type, ss[i].From, ss[i].To)
				}
			}
		}
	}
	conv, err := sugg.Converter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fixtures")); err == nil {
		fr, err := check.Fixtures(context.Background(), filepath.Join(dir, "fixtures"), conv, crd)
		if err != nil {
			t.Fatal(err)
		}
		m.fixtures, m.fixturesOK = fr.Fixtures, fr.Fixtures-failedFixtures(fr)
	}
	opts := check.Options{Objects: 50, Seed: 1, ShrinkTime: 1}
	r := check.Static(crd, sugg)
	r.Merge(check.Laws(context.Background(), crd, conv, opts))
	m.checkErrs = r.Errors()
	handConv, err := hand.Converter()
	if err != nil {
		t.Fatal(err)
	}
	r = check.Static(crd, hand)
	r.Merge(check.Laws(context.Background(), crd, handConv, opts))
	m.handCheckErrs = r.Errors()
	return m
}

// sameField: the two rules act on the same field, or s on a field inside
// h's (the spoke path or the hub path).
func sameField(h, s rules.RuleSpec) bool {
	under := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(a, b+"[") }
	return under(s.From.String(), h.From.String()) || under(s.To.String(), h.To.String())
}

func sameParams(h, s rules.RuleSpec) bool {
	for _, k := range keyParams[h.Type] {
		if fmt.Sprint(norm(h.Params[k])) != fmt.Sprint(norm(s.Params[k])) {
			return false
		}
	}
	return true
}

// norm makes YAML-decoded parameters comparable (ints of any width).
func norm(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = norm(e)
		}
		return out
	}
	if v != nil && reflect.TypeOf(v).Kind() == reflect.Int64 {
		return v
	}
	return v
}

func failedFixtures(r *check.Report) int {
	failed := map[string]bool{}
	for _, f := range r.Findings {
		if f.Check == check.CheckFixture && f.Severity == check.SeverityError {
			failed[f.Pos] = true
		}
	}
	return len(failed)
}

// TestMeasureOnExamples measures init on the examples against their
// hand-written rule files (the table in docs/check.md, printed with -v),
// and holds the numbers: a change that makes init find or get right
// fewer differences fails here.
func TestMeasureOnExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs check's laws on every example")
	}
	min := map[string]measured{ // found, right, fixtures passing at least
		"kubebuilder-cronjob":            {found: 1, right: 0},
		"cert-manager-certificate":       {found: 14, right: 14},
		"cluster-api-ipaddressclaim":     {found: 10, right: 7}, // its spec.clusterName became a label (rules v3): no schema shows that
		"knative-pingsource":             {found: 1, right: 0},
		"cluster-api-machinehealthcheck": {found: 1, right: 1},
		"kueue-cohort":                   {found: 1, right: 1},
		"widget":                         {found: 1, right: 1},
		"evolving-widget":                {found: 15, right: 15},
		"fleet":                          {found: 14, right: 11},
	}
	var b strings.Builder
	b.WriteString("| example | differences (hand-written rules) | found | right | more rules | TODOs | fixtures passing, unedited | check errors (hand-written) |\n|---|---|---|---|---|---|---|---|\n")
	var total measured
	for _, name := range measuredExamples {
		if _, err := os.Stat(filepath.Join("..", "examples", name)); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		m := measure(t, name)
		fx := "-"
		if m.fixtures > 0 {
			fx = fmt.Sprintf("%d/%d", m.fixturesOK, m.fixtures)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s | %d (%d) |\n", name, m.hand, m.found, m.right, m.more, m.todos, fx, m.checkErrs, m.handCheckErrs)
		total.hand += m.hand
		total.found += m.found
		total.right += m.right
		if w := min[name]; m.found < w.found || m.right < w.right {
			t.Errorf("%s: found %d, right %d; it found %d and got %d right before", name, m.found, m.right, w.found, w.right)
		}
	}
	fmt.Fprintf(&b, "| **all** | **%d** | **%d** | **%d** | | | | |\n", total.hand, total.found, total.right)
	t.Logf("\n%s", b.String())
}
