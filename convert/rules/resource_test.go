package rules_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/convert/rules"
)

const resourceHead = `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - rename: {from: spec.replicas, to: spec.size}
`

func TestRolloutAndStorage(t *testing.T) {
	tests := []struct {
		name    string
		extra   string
		rollout *rules.Rollout
		storage *rules.Storage
		err     string // substring, with file:line:col
	}{
		{name: "neither"},
		{
			name:    "acknowledgement",
			extra:   "  rollout:\n    acknowledgeDifferences: {fromGeneration: 3, reason: \"mode values renamed\"}\n",
			rollout: &rules.Rollout{AcknowledgeDifferences: &rules.Acknowledgement{FromGeneration: 3, Reason: "mode values renamed"}},
		},
		{name: "empty rollout", extra: "  rollout: {}\n", rollout: &rules.Rollout{}},
		{
			name:    "storage",
			extra:   "  storage: {migrate: true, pruneStoredVersions: true, backup: true}\n",
			storage: &rules.Storage{Migrate: true, PruneStoredVersions: true, Backup: true},
		},
		{
			name:  "generation missing",
			extra: "  rollout:\n    acknowledgeDifferences: {reason: x}\n",
			err:   "f.yaml:13:29: spec.rollout.acknowledgeDifferences.fromGeneration: missing",
		},
		{
			name:  "generation a string",
			extra: "  rollout:\n    acknowledgeDifferences: {fromGeneration: \"3\", reason: x}\n",
			err:   `f.yaml:13:46: spec.rollout.acknowledgeDifferences.fromGeneration: want a positive integer, got "3"`,
		},
		{
			name:  "generation zero",
			extra: "  rollout:\n    acknowledgeDifferences: {fromGeneration: 0, reason: x}\n",
			err:   `spec.rollout.acknowledgeDifferences.fromGeneration: want a positive integer, got "0"`,
		},
		{
			name:  "no reason",
			extra: "  rollout:\n    acknowledgeDifferences: {fromGeneration: 2}\n",
			err:   "f.yaml:13:29: spec.rollout.acknowledgeDifferences.reason: want a sentence",
		},
		{
			name:  "blank reason",
			extra: "  rollout:\n    acknowledgeDifferences: {fromGeneration: 2, reason: \" \"}\n",
			err:   "f.yaml:13:57: spec.rollout.acknowledgeDifferences.reason: want a sentence",
		},
		{
			name:  "unknown rollout field",
			extra: "  rollout: {acknowledge: yes}\n",
			err:   "f.yaml:12:13: spec.rollout.acknowledge: unknown field (allowed: acknowledgeDifferences)",
		},
		{
			name:  "storage not a bool",
			extra: "  storage: {migrate: \"true\"}\n",
			err:   `f.yaml:12:22: spec.storage.migrate: want true or false, got "true"`,
		},
		{
			name:  "prune without migrate",
			extra: "  storage: {pruneStoredVersions: true}\n",
			err:   "f.yaml:12:34: spec.storage.pruneStoredVersions: needs migrate: true",
		},
		{
			name:  "backup without migrate",
			extra: "  storage: {migrate: false, backup: true}\n",
			err:   "spec.storage.backup: needs migrate: true",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := rules.Parse("f.yaml", []byte(resourceHead+tt.extra))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.rollout, f.Rollout); diff != "" {
				t.Errorf("Rollout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.storage, f.Storage); diff != "" {
				t.Errorf("Storage (-want +got):\n%s", diff)
			}
			if _, err := f.Converter(); err != nil {
				t.Errorf("the operator's fields must not change the conversion: %v", err)
			}
		})
	}
}

// TestGrammar holds Grammar to the loader: every kind it lists loads with
// every parameter it lists (a parameter the loader refused would make the
// Conversion schema accept what the loader does not), and a parameter it
// does not list is refused.
func TestGrammar(t *testing.T) {
	g := rules.Grammar()
	if len(g) < 16 {
		t.Fatalf("Grammar lists %d kinds, want every kind of the loader", len(g))
	}
	for i, k := range g {
		if i > 0 && g[i-1].Name >= k.Name {
			t.Errorf("Grammar is not sorted: %s after %s", k.Name, g[i-1].Name)
		}
		for _, p := range k.Params {
			doc := resourceHead + "    - " + k.Name + ": {" + p + ": x, notAParam: x}\n"
			_, err := rules.Parse("f.yaml", []byte(doc))
			if err == nil || !strings.Contains(err.Error(), k.Name+".notAParam: unknown field") {
				t.Errorf("%s.%s: want the unknown parameter refused, got %v", k.Name, p, err)
			}
			if err != nil && strings.Contains(err.Error(), k.Name+"."+p+": unknown field") {
				t.Errorf("%s: Grammar lists %s, the loader refuses it", k.Name, p)
			}
		}
	}
}
