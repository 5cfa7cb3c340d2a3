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
	// Generated says, per version, how many generated objects were valid
	// (schema and CEL rules, judged by the API server's validators).
	Generated []Generated `json:"generated,omitempty"`
	// Ignored lists the findings silenced by Ignore, by pointer.
	Ignored []Ignored `json:"ignored,omitempty"`
	// Accepted lists the fields drop rules give up on purpose, with the
	// reason each gives (acknowledgeLoss): accepted losses, not findings.
	Accepted []Accepted `json:"accepted,omitempty"`
	// LiveObjects counts the objects read from a cluster and checked
	// (Live).
	LiveObjects int `json:"liveObjects,omitempty"`
	// Cases are the units of the run for a CI system's view of it
	// (WriteJUnit).
	Cases []Case `json:"-"`
	// Limit caps the findings WriteText prints per check and version pair
	// (0: 10); the rest are counted. WriteJSON writes them all.
	Limit int `json:"-"`
}

// Generated counts the generated objects of one version.
type Generated struct {
	Version   string `json:"version"`
	Generated int    `json:"generated"`
	Valid     int    `json:"valid"`
	// Problems are the most common reasons generated objects were not
	// valid, with their counts.
	Problems string `json:"problems,omitempty"`
}

// Ignored is a known difference silenced by Ignore: the pointer, the
// reason given, and the findings it silenced.
type Ignored struct {
	Pointer  string `json:"pointer"`
	Reason   string `json:"reason"`
	Findings int    `json:"findings"`
}

// Accepted is a field a drop rule gives up on purpose: the version that
// has it, the one that cannot hold it, the field, and why the loss is
// acceptable.
type Accepted struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
	Pos     string `json:"pos,omitempty"`
}

// Ignore removes the findings at pointer (or below it; list indexes may be
// written as *) and records them under reason in Ignored, so that a
// silenced difference is listed, never dropped unseen.
func (r *Report) Ignore(pointer, reason string) {
	ig := Ignored{Pointer: pointer, Reason: reason}
	want := genericPointer(pointer)
	kept := r.Findings[:0]
	for _, f := range r.Findings {
		p := genericPointer(f.Path)
		if f.Path != "" && (p == want || strings.HasPrefix(p, want+"/")) {
			ig.Findings++
			continue
		}
		kept = append(kept, f)
	}
	r.Findings = kept
	r.Ignored = append(r.Ignored, ig)
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
	r.Generated = append(r.Generated, o.Generated...)
	r.Ignored = append(r.Ignored, o.Ignored...)
	r.Accepted = append(r.Accepted, o.Accepted...)
	r.LiveObjects += o.LiveObjects
	r.Cases = append(r.Cases, o.Cases...)
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
	if r.LiveObjects > 0 {
		parts = append(parts, fmt.Sprintf("%d live objects", r.LiveObjects))
	}
	for _, g := range r.Generated {
		parts = append(parts, fmt.Sprintf("%s objects valid %d/%d (%.1f%%)", g.Version, g.Valid, g.Generated, 100*float64(g.Valid)/float64(max(g.Generated, 1))))
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
// one line each (a message's further lines indented under it), counterexamples indented under law findings, then the
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
	limit := r.Limit
	if limit <= 0 {
		limit = 10
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:\n", k)
		shown := map[string]int{}
		hidden := map[string]int{}
		var hiddenOrder []string
		for _, f := range groups[k] {
			if shown[f.Check] >= limit {
				if hidden[f.Check] == 0 {
					hiddenOrder = append(hiddenOrder, f.Check)
				}
				hidden[f.Check]++
				continue
			}
			shown[f.Check]++
			// A message of several lines (a CEL compiler's caret
			// diagram) keeps them under the finding.
			fmt.Fprintf(&b, "  %s\n", strings.ReplaceAll(f.Line(), "\n", "\n      "))
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
		for _, c := range hiddenOrder {
			fmt.Fprintf(&b, "  ... and %d more %s findings (-o json lists them all)\n", hidden[c], c)
		}
	}
	for _, ig := range r.Ignored {
		fmt.Fprintf(&b, "ignored %s (%s): %d findings\n", ig.Pointer, ig.Reason, ig.Findings)
	}
	for _, a := range r.Accepted {
		pos := ""
		if a.Pos != "" {
			pos = " [" + a.Pos + "]"
		}
		fmt.Fprintf(&b, "accepted loss %s (%s -> %s): %s%s\n", a.Pointer, a.From, a.To, a.Reason, pos)
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
		OK        bool        `json:"ok"`
		Errors    int         `json:"errors"`
		Warnings  int         `json:"warnings"`
		Findings  []Finding   `json:"findings"`
		Checks    int         `json:"checks"`
		Laws      int         `json:"laws"`
		Objects   int         `json:"objects"`
		Fixtures  int         `json:"fixtures"`
		Seed      uint64      `json:"seed,omitempty"`
		Generated []Generated `json:"generated"`
		Ignored   []Ignored   `json:"ignored"`
		Accepted  []Accepted  `json:"accepted,omitempty"`
		Live      int         `json:"liveObjects,omitempty"`
	}{r.Errors() == 0, r.Errors(), r.Warnings(), r.Findings, r.Checks, r.Laws, r.Objects, r.Fixtures, r.Seed, r.Generated, r.Ignored, r.Accepted, r.LiveObjects}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	if out.Generated == nil {
		out.Generated = []Generated{}
	}
	if out.Ignored == nil {
		out.Ignored = []Ignored{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
