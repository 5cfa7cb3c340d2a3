package check

import (
	"context"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/convert"
	_ "github.com/hubspoke/hubspoke/convert/celenv"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

const celCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobs.example.com}
spec:
  group: example.com
  names: {kind: Job, listKind: JobList, plural: jobs, singular: job}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig: {service: {name: hubspoke, namespace: hubspoke-system, path: /convert}}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ratio: {type: integer, minimum: 0, maximum: 100}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              weight: {type: string, pattern: 'WEIGHT'}
`

const celRules = `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: jobs.example.com}
spec:
  group: example.com
  kind: Job
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - cel:
        from: spec.ratio
        to: spec.weight
        toHub: string(self) + "%"
        fromHub: int(self.replace("%", ""))
`

// TestLawsCELPair: a cel rule whose expressions invert each other on every
// valid value passes; one that does not (the hub allows "007%", which comes
// back as "7%") is a violation with the value as counterexample, not a
// refusal.
func TestLawsCELPair(t *testing.T) {
	tests := []struct {
		name, pattern string
		wantErr       bool
	}{
		{"inverts", `^(0|[1-9][0-9]?|100)%$`, false},
		{"leading zeros", `^[0-9]{1,2}%$`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd, err := schema.Load("crd.yaml", []byte(strings.Replace(celCRD, "WEIGHT", tt.pattern, 1)))
			if err != nil {
				t.Fatal(err)
			}
			conv, err := rules.Load("rules.yaml", []byte(celRules))
			if err != nil {
				t.Fatal(err)
			}
			r := Laws(context.Background(), crd, conv, lawOpts(LawHubRoundTrip))
			if !tt.wantErr {
				if r.Errors() != 0 {
					t.Fatalf("findings for an inverting pair:\n%s", textOf(r))
				}
				return
			}
			var found *Finding
			for i, f := range r.Findings {
				if f.Severity != SeverityWarning && strings.Contains(f.Message, convert.ErrNotInverse.Error()) {
					found = &r.Findings[i]
				}
			}
			if found == nil {
				t.Fatalf("no violation for a pair that does not invert:\n%s", textOf(r))
			}
			if found.Path != "/spec/weight" || found.Input == nil {
				t.Errorf("finding without pointer or counterexample: %+v", *found)
			}
		})
	}
}
