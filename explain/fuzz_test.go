package explain_test

import (
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/explain"
)

// FuzzExplain: any input is explained without panicking, each kind is
// reported once, and each match is part of the input when the input needs
// no unescaping or joining of lines.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{
		`conversion webhook for example.com/v1, Kind=Widget failed: Post "https://w.d.svc:443/convert?timeout=30s": dial tcp 10.0.0.1:443: connect: connection refused`,
		`conversion webhook for a/b, Kind=C returned invalid converted object at index 3: must have the same name: x != y`,
		`status.storedVersions[0]: Invalid value: "v1alpha1": missing from spec.versions; v1alpha1 was previously a storage version`,
		`x509: certificate is valid for a, b, not c`,
		`{"error":"Post \"https://w.d.svc/convert\": EOF"}`,
		"x509: certificate has expired or is not\nyet valid",
		``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		seen := map[string]bool{}
		for _, x := range explain.Explain(msg) {
			if !strings.Contains(msg, `\"`) && !strings.Contains(msg, "\n") && !strings.Contains(msg, "\r") && !strings.Contains(msg, x.Match) {
				t.Fatalf("match %q is not in the input", x.Match)
			}
			if seen[x.ID] {
				t.Fatalf("%s reported twice", x.ID)
			}
			seen[x.ID] = true
		}
	})
}
