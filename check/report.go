package check

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Report collects findings and counts what was checked.
type Report struct {
	// Findings in the order they were found.
	Findings []Finding `json:"findings"`
	// Checks counts the static checks run, Laws the law runs (one per law
	// and version pair), Objects the generated objects tried, Fixtures the
	// fixture cases run.
	Checks   int `json:"checks"`
	Laws     int `json:"laws"`
	Objects  int `json:"objects"`
	Fixtures int `json:"fixtures"`
	// Seed of the generated objects (0 when no law ran): pass it back
	// (--seed) to reproduce the run.
	Seed uint64 `json:"seed,omitempty"`
}

// Add appends a finding.
func (r *Report) Add(f Finding) {
	if f.Severity == "" {
		f.Severity = SeverityError
	}
	r.Findings = append(r.Findings, f)
}

// Errors returns the number of error findings.
func (r *Report) Errors() int { return r.count(SeverityError) }

// Warnings returns the number of warning findings.
func (r *Report) Warnings() int { return r.count(SeverityWarning) }

func (r *Report) count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Merge appends the findings and counts of o.
func (r *Report) Merge(o *Report) {
	r.Findings = append(r.Findings, o.Findings...)
	r.Checks += o.Checks
	r.Laws += o.Laws
	r.Objects += o.Objects
	r.Fixtures += o.Fixtures
	if o.Seed != 0 {
		r.Seed = o.Seed
	}
}

// Summary is the one-line summary of the report.
func (r *Report) Summary() string {
	var parts []string
	if r.Checks > 0 {
		parts = append(parts, fmt.Sprintf("%d static checks", r.Checks))
	}
	if r.Laws > 0 {
		parts = append(parts, fmt.Sprintf("%d law runs on %d generated objects, seed %d", r.Laws, r.Objects, r.Seed))
	}
	if r.Fixtures > 0 {
		parts = append(parts, fmt.Sprintf("%d fixtures", r.Fixtures))
	}
	ran := strings.Join(parts, ", ")
	if ran == "" {
		ran = "nothing checked"
	}
	status := "ok"
	if r.Errors() > 0 {
		status = "FAIL"
	}
	return fmt.Sprintf("%s: %d errors, %d warnings (%s)", status, r.Errors(), r.Warnings(), ran)
}

// WriteText writes the report for people: findings grouped by version pair,
// one line each, counterexamples indented under law findings, then the
// summary line.
func (r *Report) WriteText(w io.Writer) error {
	groups := map[string][]Finding{}
	var keys []string
	for _, f := range r.Findings {
		k := f.pair()
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], f)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		// CRD-wide findings first, then pairs in first-seen order.
		return keys[i] == "crd" && keys[j] != "crd"
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:\n", k)
		for _, f := range groups[k] {
			fmt.Fprintf(&b, "  %s\n", f.Line())
			for _, x := range []struct {
				name string
				v    any
			}{{"input", f.Input}, {"output", f.Output}, {"expected", f.Expected}} {
				if x.v == nil {
					continue
				}
				js, err := json.Marshal(x.v)
				if err != nil {
					js = []byte(fmt.Sprint(x.v))
				}
				fmt.Fprintf(&b, "      %-8s %s\n", x.name+":", js)
			}
		}
	}
	b.WriteString(r.Summary())
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one indented JSON object with the
// findings, the counts, and errors, warnings and ok fields for CI.
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		OK       bool      `json:"ok"`
		Errors   int       `json:"errors"`
		Warnings int       `json:"warnings"`
		Findings []Finding `json:"findings"`
		Checks   int       `json:"checks"`
		Laws     int       `json:"laws"`
		Objects  int       `json:"objects"`
		Fixtures int       `json:"fixtures"`
		Seed     uint64    `json:"seed,omitempty"`
	}{r.Errors() == 0, r.Errors(), r.Warnings(), r.Findings, r.Checks, r.Laws, r.Objects, r.Fixtures, r.Seed}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
