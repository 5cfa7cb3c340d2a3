package check

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert/rules"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// A JUnit consumer's model of the XML, written from JUnit's schema (the
// one Jenkins, GitLab and the GitHub Actions reporters read), not from
// WriteJUnit's types.
type consumerSuites struct {
	XMLName  xml.Name        `xml:"testsuites"`
	Name     string          `xml:"name,attr"`
	Tests    string          `xml:"tests,attr"`
	Failures string          `xml:"failures,attr"`
	Errors   string          `xml:"errors,attr"`
	Skipped  string          `xml:"skipped,attr"`
	Suites   []consumerSuite `xml:"testsuite"`
}

type consumerSuite struct {
	Name     string         `xml:"name,attr"`
	Tests    string         `xml:"tests,attr"`
	Failures string         `xml:"failures,attr"`
	Errors   string         `xml:"errors,attr"`
	Skipped  string         `xml:"skipped,attr"`
	Props    []consumerProp `xml:"properties>property"`
	Cases    []consumerCase `xml:"testcase"`
}

type consumerProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type consumerCase struct {
	Name      string `xml:"name,attr"`
	ClassName string `xml:"classname,attr"`
	Failures  []struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Errors    []struct{} `xml:"error"`
	Skipped   []struct{} `xml:"skipped"`
	SystemOut string     `xml:"system-out"`
}

// readJUnit parses the XML as a consumer does and checks what every
// consumer relies on: a testsuites root; every count an integer that
// agrees with the elements below it (tests with testcases, failures with
// failed testcases, both at every level); every testcase named, with a
// classname, once in its suite; every failure with a message and a type.
func readJUnit(t *testing.T, data []byte) consumerSuites {
	t.Helper()
	var doc consumerSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("not XML a JUnit consumer reads: %v\n%s", err, data)
	}
	if !bytes.HasPrefix(data, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Errorf("no XML declaration")
	}
	atoi := func(what, s string) int {
		var n int
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil || fmt.Sprint(n) != s {
			t.Errorf("%s = %q, not an integer", what, s)
		}
		return n
	}
	var tests, failures int
	for _, s := range doc.Suites {
		if s.Name == "" {
			t.Error("a testsuite without a name")
		}
		seen := map[string]bool{}
		fails := 0
		for _, c := range s.Cases {
			if c.Name == "" || c.ClassName == "" {
				t.Errorf("suite %s: a testcase without name or classname: %+v", s.Name, c)
			}
			if seen[c.Name] {
				t.Errorf("suite %s: testcase %q twice", s.Name, c.Name)
			}
			seen[c.Name] = true
			if len(c.Failures) > 1 {
				t.Errorf("suite %s: testcase %q has %d failures", s.Name, c.Name, len(c.Failures))
			}
			if len(c.Errors)+len(c.Skipped) > 0 {
				t.Errorf("suite %s: testcase %q has error or skipped elements", s.Name, c.Name)
			}
			for _, f := range c.Failures {
				if f.Message == "" || f.Type == "" {
					t.Errorf("suite %s: testcase %q: failure without message or type", s.Name, c.Name)
				}
			}
			if len(c.Failures) > 0 {
				fails++
			}
		}
		if n := atoi("testsuite tests", s.Tests); n != len(s.Cases) {
			t.Errorf("suite %s: tests=%d, %d testcases", s.Name, n, len(s.Cases))
		}
		if n := atoi("testsuite failures", s.Failures); n != fails {
			t.Errorf("suite %s: failures=%d, %d failed testcases", s.Name, n, fails)
		}
		if atoi("testsuite errors", s.Errors) != 0 || atoi("testsuite skipped", s.Skipped) != 0 {
			t.Errorf("suite %s: errors or skipped not 0", s.Name)
		}
		tests += len(s.Cases)
		failures += fails
	}
	if n := atoi("testsuites tests", doc.Tests); n != tests {
		t.Errorf("testsuites tests=%d, %d testcases in all", n, tests)
	}
	if n := atoi("testsuites failures", doc.Failures); n != failures {
		t.Errorf("testsuites failures=%d, %d failed testcases in all", n, failures)
	}
	return doc
}

// TestJUnitOfARun writes the JUnit report of a whole run (static checks,
// laws, fixtures, live objects and a finding no case claims) and reads it
// as a consumer: counts agree, every failing unit is a failed testcase
// whose message names the check and the JSON pointer, the passing units
// are there too, and every error finding is in some failure.
func TestJUnitOfARun(t *testing.T) {
	ctx := context.Background()
	crd := loadCRD(t, "testdata/crd.yaml")
	rf, err := rules.ParseFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conv := &fakeConverter{dropHubOnly: true} // loses spec.paused going to v1alpha1
	r := Static(crd, rf)
	r.Cases = append(r.Cases, StaticCases(true, false)...)
	r.Merge(Laws(ctx, crd, conv, Options{Objects: 30, Seed: 3, ShrinkTime: 1}))
	r.Cases = append(r.Cases, LawCases(crd, conv)...)
	fx, err := LoadFixtures("testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	r.Merge(RunFixtures(ctx, fx, conv, crd))
	r.Cases = append(r.Cases, FixtureCases(fx)...)
	l := newLiveWidget(t, "")
	l.Check(liveObject(t, "fine", nil))
	l.Check(liveObject(t, "rounded", func(s map[string]any) { s["timeout"] = "1.5s" }))
	r.Merge(l.Report())
	r.Add(Finding{Check: "protocol-uid", Message: "response.uid does not echo request.uid"})

	var b bytes.Buffer
	if err := r.WriteJUnit(&b, "gadgets.example.com"); err != nil {
		t.Fatal(err)
	}
	doc := readJUnit(t, b.Bytes())
	if doc.Name != "gadgets.example.com" {
		t.Errorf("testsuites name %q", doc.Name)
	}
	cases := map[string]consumerCase{}
	var suites []string
	for _, s := range doc.Suites {
		suites = append(suites, s.Name)
		for _, c := range s.Cases {
			cases[s.Name+"/"+c.Name] = c
		}
	}
	if diff := cmp.Diff([]string{"static", "laws", "fixtures", "live", "other"}, suites); diff != "" {
		t.Errorf("suites (-want +got):\n%s", diff)
	}
	failed := func(key string) string {
		c, ok := cases[key]
		if !ok {
			t.Errorf("no testcase %s", key)
			return ""
		}
		if len(c.Failures) == 0 {
			t.Errorf("testcase %s passed, want it failed", key)
			return ""
		}
		return c.Failures[0].Type + ": " + c.Failures[0].Message
	}
	passed := func(key string) {
		if c, ok := cases[key]; !ok || len(c.Failures) > 0 {
			t.Errorf("testcase %s: present %v, failures %+v; want it passed", key, ok, c.Failures)
		}
	}
	for key, want := range map[string]string{
		"laws/v1 -> v1alpha1":    "hub-spoke-hub: error   hub-spoke-hub /spec/paused",
		"fixtures/bad-target":    "fixture: error   fixture /spec/size: fixture bad-target: output differs",
		"live/default/rounded":   "refused: error   refused /spec/timeout: the object as v1 is refused converting to v1alpha1",
		"other/protocol-uid":     "protocol-uid: error   protocol-uid: response.uid does not echo request.uid",
		"static/storage-version": "",
	} {
		if want == "" {
			passed(key)
			continue
		}
		if got := failed(key); !strings.HasPrefix(got, want) {
			t.Errorf("testcase %s failure %q, want it to start with %q", key, got, want)
		}
	}
	for _, key := range []string{"fixtures/flat", "live/default/fine", "static/domain"} {
		passed(key)
	}
	// Every error finding is in a failure's text.
	var all strings.Builder
	for _, c := range cases {
		for _, f := range c.Failures {
			all.WriteString(f.Text)
		}
	}
	for _, f := range r.Findings {
		if f.Severity == SeverityError && !strings.Contains(all.String(), f.Line()) {
			if len(f.Objects) == 0 || !strings.Contains(all.String(), strings.SplitN(f.Message, ": ", 2)[0]) {
				t.Errorf("error finding in no failure: %s", f.Line())
			}
		}
	}
}

// TestJUnitGolden pins the XML of a small report: escaping, properties,
// a warning in system-out, the counterexample in the failure's text.
func TestJUnitGolden(t *testing.T) {
	r := &Report{Seed: 7, Cases: append(StaticCases(false, false), Case{Suite: "laws", Name: "v1 -> v2", Checks: lawChecks, From: "v1", To: "v2"})}
	r.Add(Finding{Check: LawHubRoundTrip, From: "v1", To: "v2", Path: "/spec/a~1b", Message: `v1 -> v2 -> v1 is not the identity at /spec/a~1b: "<&>" is lost`,
		Input: map[string]any{"spec": map[string]any{"a/b": "<&>"}}, Count: 3})
	r.Add(Finding{Check: CheckCoerced, Severity: SeverityWarning, From: "v1", To: "v2", Path: "/spec/x", Message: "the API server changes the converted object here (drops the null)"})
	r.Add(Finding{Check: CheckStorage, Path: "/spec/versions", Message: "exactly one version must have storage: true, found 2 [v1 v2]", Pos: "crd.yaml:16"})
	r.Ignore("/status/seen", "set by the controller")
	var b bytes.Buffer
	if err := r.WriteJUnit(&b, "gizmos.example.com"); err != nil {
		t.Fatal(err)
	}
	readJUnit(t, b.Bytes())
	const golden = "testdata/junit.golden.xml"
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("junit (-want +got; -update rewrites it):\n%s", diff)
	}
}
