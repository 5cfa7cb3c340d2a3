package check

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hubspoke/hubspoke/schema"
)

// Case is one test case of a report for a CI system (WriteJUnit): a unit
// of what ran (a static check, the laws between two versions, a fixture, a
// live object) and the rule that says which findings are its own. A case
// with no error finding passed.
//
// A finding belongs to the first case of Report.Cases that matches it:
// its check is one of Checks (any check when Checks is empty), its
// versions equal From and To where both are set, and its Pos equals Pos
// when Pos is set. A finding no case matches gets a case of its own, named
// by its check, so that nothing found is missing from the JUnit report.
// Live objects are cases of their own, with their own findings (the
// report's findings of Live, which list objects, are not matched again).
type Case struct {
	// Suite groups cases (a JUnit testsuite): static, evolution, laws,
	// rollout, protocol, fixtures, live.
	Suite string
	// Name of the case, unique in its suite.
	Name string

	Checks   []string
	From, To string
	Pos      string

	// findings are the case's own findings, recorded as it ran (live
	// objects), instead of matched from the report.
	findings []Finding
}

// StaticCases are the cases of Static (one per check; the rule checks
// only when there are rules), and of the API server's validation of the
// CRD (crd-validation) when the caller ran it.
func StaticCases(withRules, withCRDValidation bool) []Case {
	names := []string{CheckStorage, CheckStructural, CheckStrategy}
	if withCRDValidation {
		names = append([]string{CheckCRDValidation}, names...)
	}
	if withRules {
		names = append(names, CheckVersions, CheckHubServed, CheckRulePath, CheckDomain, CheckLossy, CheckDefault)
	}
	var out []Case
	for _, n := range names {
		out = append(out, Case{Suite: "static", Name: n, Checks: []string{n}})
	}
	return out
}

// EvolutionCases are the cases of Evolution, one per check.
func EvolutionCases() []Case {
	var out []Case
	for _, n := range []string{CheckVersionRemoved, CheckVersionUnserved, CheckStorageMoved, CheckFieldRemoved, CheckFieldTightened, CheckNewRequiredField} {
		out = append(out, Case{Suite: "evolution", Name: n, Checks: []string{n}})
	}
	return out
}

// lawChecks are the checks a law run reports.
var lawChecks = []string{LawSpokeRoundTrip, LawHubRoundTrip, LawPathAgreement, LawDeterminism, LawValidOutput,
	LawConvertible, LawRefused, LawConvertBack, CheckCoerced, CheckGeneratorNote}

// LawCases are the cases of Laws: one per ordered pair of the versions of
// conv that have a structural schema in crd, holding every law between
// them (and the generator's notes of the first version).
func LawCases(crd *schema.CRD, conv Converter) []Case {
	var vs []string
	for _, v := range conv.Versions() {
		if ver := crd.Version(v); ver != nil && ver.Structural != nil {
			vs = append(vs, v)
		}
	}
	var out []Case
	for _, a := range vs {
		for _, b := range vs {
			if a != b {
				out = append(out, Case{Suite: "laws", Name: a + " -> " + b, Checks: lawChecks, From: a, To: b})
			}
		}
	}
	return out
}

// RolloutCases are the cases of Rollout between the versions of next:
// one per ordered pair.
func RolloutCases(next Converter) []Case {
	var out []Case
	vs := next.Versions()
	for _, a := range vs {
		for _, b := range vs {
			if a != b {
				out = append(out, Case{Suite: "rollout", Name: a + " -> " + b, Checks: []string{LawRollout}, From: a, To: b})
			}
		}
	}
	return out
}

// FixtureCases are the cases of RunFixtures: one per fixture.
func FixtureCases(fixtures []Fixture) []Case {
	out := make([]Case, len(fixtures))
	for i, f := range fixtures {
		out[i] = Case{Suite: "fixtures", Name: f.Name, Checks: []string{CheckFixture}, Pos: f.InputFile}
	}
	return out
}

func (c *Case) matches(f *Finding) bool {
	if c.findings != nil {
		return false
	}
	if len(c.Checks) > 0 && !slices.Contains(c.Checks, f.Check) {
		return false
	}
	if c.From != "" && f.From != "" && c.From != f.From {
		return false
	}
	if c.To != "" && f.To != "" && c.To != f.To {
		return false
	}
	return c.Pos == "" || c.Pos == f.Pos
}

// The JUnit XML model, as JUnit's own Ant task and most CI systems
// (Jenkins, GitLab, GitHub Actions reporters, Azure Pipelines) read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties *junitProps     `xml:"properties,omitempty"`
	Cases      []junitTestCase `xml:"testcase"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: a testsuite per part of the
// run (static, evolution, laws, rollout, protocol, fixtures, live) with a
// testcase per entry of Cases, and one per check for findings no case
// claims. A case with error findings has one failure: its message is the
// first error (check, JSON pointer, what is wrong, file:line), its text
// every error with its counterexample; warnings go to the case's
// system-out. name names the testsuites element (e.g. the CRD).
func (r *Report) WriteJUnit(w io.Writer, name string) error {
	cases := make([]Case, len(r.Cases))
	copy(cases, r.Cases)
	own := make([][]Finding, len(cases))
	for i, c := range cases {
		own[i] = c.findings
	}
	extra := map[string]int{} // check -> index of its case in cases
	for _, f := range r.Findings {
		if len(f.Objects) > 0 {
			continue // Live's: each object is a case with its own findings
		}
		i := slices.IndexFunc(cases, func(c Case) bool { return c.matches(&f) })
		if i < 0 {
			j, ok := extra[f.Check]
			if !ok {
				j = len(cases)
				cases = append(cases, Case{Suite: "other", Name: f.Check, findings: []Finding{}})
				own = append(own, nil)
				extra[f.Check] = j
			}
			i = j
		}
		own[i] = append(own[i], f)
	}
	doc := junitSuites{Name: name}
	suiteIndex := map[string]int{}
	for i, c := range cases {
		si, ok := suiteIndex[c.Suite]
		if !ok {
			si = len(doc.Suites)
			suiteIndex[c.Suite] = si
			doc.Suites = append(doc.Suites, junitSuite{Name: c.Suite, Properties: r.junitProps()})
		}
		tc := junitTestCase{Name: c.Name, ClassName: "hubspoke.check." + c.Suite}
		var errs, warns []string
		for _, f := range own[i] {
			if f.Severity == SeverityError {
				errs = append(errs, junitText(f))
				if tc.Failure == nil {
					tc.Failure = &junitFailure{Message: f.Line(), Type: f.Check}
				}
			} else {
				warns = append(warns, junitText(f))
			}
		}
		if tc.Failure != nil {
			tc.Failure.Text = strings.Join(errs, "\n")
		}
		tc.SystemOut = strings.Join(warns, "\n")
		s := &doc.Suites[si]
		s.Cases = append(s.Cases, tc)
		s.Tests++
		if tc.Failure != nil {
			s.Failures++
		}
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitProps are the run's seed and the ignored pointers, on every suite.
func (r *Report) junitProps() *junitProps {
	var ps []junitProp
	if r.Seed != 0 {
		ps = append(ps, junitProp{"seed", fmt.Sprint(r.Seed)})
	}
	for _, ig := range r.Ignored {
		ps = append(ps, junitProp{"ignored " + ig.Pointer, fmt.Sprintf("%s (%d findings)", ig.Reason, ig.Findings)})
	}
	if len(ps) == 0 {
		return nil
	}
	return &junitProps{ps}
}

// junitText is a finding as WriteText prints it: its line, its versions,
// and its counterexample.
func junitText(f Finding) string {
	var b strings.Builder
	if p := f.pair(); p != "crd" {
		b.WriteString(p + ": ")
	}
	b.WriteString(f.Line())
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
		fmt.Fprintf(&b, "\n    %-8s %s", x.name+":", js)
	}
	return b.String()
}
