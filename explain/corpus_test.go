package explain_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/explain"
)

// corpusEntry is one real message: copied from a public issue thread
// (testdata/corpus.yaml) or reproduced on the sandbox by test/e2e
// (testdata/corpus-sandbox.yaml).
type corpusEntry struct {
	// Source is the thread's URL, or the e2e test that reproduced it.
	Source string `json:"source"`
	// Want is the ID explain must give first ("a|b": either), or "none".
	Want string `json:"want"`
	// Class is where the failure happened.
	Class   string `json:"class"`
	Message string `json:"message"`
}

func loadCorpus(t *testing.T) []corpusEntry {
	t.Helper()
	var all []corpusEntry
	for _, file := range []string{"testdata/corpus.yaml", "testdata/corpus-sandbox.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var entries []corpusEntry
		if err := yaml.UnmarshalStrict(data, &entries); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		all = append(all, entries...)
	}
	return all
}

// TestCorpus holds explain to real messages in the forms users paste them:
// each is explained first as its entry says, in its class, with a clean
// cause and fixes; a message explain does not know is not explained at
// all (no cause is asserted for it).
func TestCorpus(t *testing.T) {
	entries := loadCorpus(t)
	if len(entries) < 100 {
		t.Errorf("%d messages in the corpus, want at least 100", len(entries))
	}
	known := explain.IDs()
	for _, e := range entries {
		name := e.Want + " " + e.Source
		t.Run(name, func(t *testing.T) {
			if e.Source == "" || e.Message == "" || e.Want == "" {
				t.Fatalf("incomplete entry %+v", e)
			}
			if !strings.HasPrefix(e.Source, "https://github.com/") && !strings.HasPrefix(e.Source, "test/e2e ") {
				t.Errorf("source %q is neither a public thread nor an e2e test", e.Source)
			}
			got := explain.Explain(e.Message)
			if e.Want == "none" {
				if len(got) > 0 {
					t.Fatalf("a message explain should not recognise is explained as %s: %q", ids(got), e.Message)
				}
				return
			}
			wants := strings.Split(e.Want, "|")
			for _, w := range wants {
				if !slices.Contains(known, w) {
					t.Fatalf("want %s: no such explanation", w)
				}
			}
			if len(got) == 0 {
				t.Fatalf("nothing recognised in %q", e.Message)
			}
			first := got[0]
			if !slices.Contains(wants, first.ID) {
				t.Fatalf("first explanation %s, want %s; message: %q", ids(got), e.Want, e.Message)
			}
			if string(first.Class) != e.Class {
				t.Errorf("class %s, want %s", first.Class, e.Class)
			}
			for _, x := range got {
				checkClean(t, x)
			}
		})
	}
}

// checkClean holds an explanation's texts to what users can copy: no
// template left, no punctuation or quote of the message's surroundings
// carried into a value.
func checkClean(t *testing.T, x explain.Explanation) {
	t.Helper()
	texts := append([]string{x.Cause}, x.Fixes...)
	for _, s := range texts {
		if strings.Contains(s, "${") {
			t.Errorf("%s: template not expanded: %q", x.ID, s)
		}
	}
	for k, v := range x.Fields {
		if v == "" {
			continue
		}
		for _, bad := range []string{`\"`, `"}`, `\n`} {
			if strings.Contains(v, bad) {
				t.Errorf("%s: field %s = %q holds %q", x.ID, k, v, bad)
			}
		}
		switch v[len(v)-1] {
		case ';', ',', '`', '\\', '*':
			t.Errorf("%s: field %s = %q ends in %q", x.ID, k, v, v[len(v)-1])
		case '"', '}', ']':
			open := map[byte]string{'"': `"`, '}': "{", ']': "["}[v[len(v)-1]]
			if (open == `"` && strings.Count(v, `"`)%2 == 1) || (open != `"` && strings.Count(v, open) < strings.Count(v, string(v[len(v)-1]))) {
				t.Errorf("%s: field %s = %q ends in an unbalanced %q", x.ID, k, v, v[len(v)-1])
			}
		}
	}
}
