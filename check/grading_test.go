package check

import (
	"context"
	"strings"
	"testing"
)

// TestEngineErrorWithoutARuleIsAnError: a conversion the engine cannot
// make, with no rule refusing it, is a failed conversion (an error), not
// a rule's deliberate refusal (a warning). Here the hub holds a field of
// 256 KiB that v1alpha1 has no place for: kept in the preserved
// annotation, it takes the annotations over the API server's limit.
func TestEngineErrorWithoutARuleIsAnError(t *testing.T) {
	crd, rules := variant(t,
		[]string{"              paused: {type: boolean}\n", "              paused: {type: boolean}\n              blob: {type: string, minLength: 262144, maxLength: 262144}\n"},
		[]string{"    - hubOnly: {path: spec.paused}\n", "    - hubOnly: {path: spec.paused}\n    - hubOnly: {path: spec.blob}\n"})
	conv, err := rules.Converter()
	if err != nil {
		t.Fatal(err)
	}
	opts := lawOpts(LawHubRoundTrip)
	opts.Objects = 3
	r := Laws(context.Background(), crd, conv, opts)
	var got *Finding
	for i, f := range r.Findings {
		if f.From == "v1" && f.To == "v1alpha1" {
			got = &r.Findings[i]
		}
	}
	if got == nil {
		t.Fatalf("no finding for v1 -> v1alpha1:\n%s", textOf(r))
	}
	if got.Check != LawConvertible || got.Severity != SeverityError {
		t.Errorf("graded %s %s, want %s %s:\n%s", got.Severity, got.Check, SeverityError, LawConvertible, textOf(r))
	}
	if !strings.Contains(got.Message, "over the API server's limit of 262144 bytes") || got.Path != "/metadata/annotations/hubspoke.dev~1preserved" {
		t.Errorf("finding at %q: %s", got.Path, got.Message)
	}
}
