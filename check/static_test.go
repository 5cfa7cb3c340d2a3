package check

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	convrules "github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

// variant loads testdata/crd.yaml and rules.yaml with textual edits applied
// (each edit: old, new; old must occur).
func variant(t testing.TB, crdEdits, ruleEdits []string) (*schema.CRD, *convrules.File) {
	t.Helper()
	edit := func(path string, edits []string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for i := 0; i+1 < len(edits); i += 2 {
			if !strings.Contains(s, edits[i]) {
				t.Fatalf("%s: edit %q does not apply", path, edits[i])
			}
			s = strings.Replace(s, edits[i], edits[i+1], 1)
		}
		return []byte(s)
	}
	crd, err := schema.Load("crd.yaml", edit("testdata/crd.yaml", crdEdits))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := convrules.Parse("rules.yaml", edit("testdata/rules.yaml", ruleEdits))
	if err != nil {
		t.Fatal(err)
	}
	return crd, rules
}

// key is what a static test asserts of a finding.
type key struct {
	Check, From, To, Path, ToPath, FromConstraint, ToConstraint string
	Severity                                                    Severity
}

func keysOf(r *Report) []key {
	var out []key
	for _, f := range r.Findings {
		out = append(out, key{f.Check, f.From, f.To, f.Path, f.ToPath, f.FromConstraint, f.ToConstraint, f.Severity})
	}
	return out
}

func TestStatic(t *testing.T) {
	const v1Size = "size: {type: integer, format: int32, minimum: 0, maximum: 100}"
	tests := []struct {
		name       string
		crd, rules []string
		want       []key // every finding, in order
	}{
		{name: "clean"},
		{
			name: "hub minimum 1 against spoke minimum 0",
			crd:  []string{v1Size, "size: {type: integer, format: int32, minimum: 1, maximum: 100}"},
			want: []key{
				{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/replicas", ToPath: "/spec/size", FromConstraint: "minimum 0", ToConstraint: "minimum 1", Severity: SeverityError},
				{Check: CheckDomain, From: "v1beta1", To: "v1", Path: "/spec/size", ToPath: "/spec/size", FromConstraint: "minimum 0", ToConstraint: "minimum 1", Severity: SeverityError},
			},
		},
		{
			name: "hub narrower format",
			crd:  []string{"replicas: {type: integer, format: int32, minimum: 0, maximum: 100}", "replicas: {type: integer, format: int64, minimum: 0}"},
			want: []key{{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/replicas", ToPath: "/spec/size", FromConstraint: "format int64", ToConstraint: "maximum 100", Severity: SeverityError}},
		},
		{
			name: "type changed",
			crd:  []string{v1Size, "size: {type: string}"},
			want: []key{
				{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/replicas", ToPath: "/spec/size", FromConstraint: "type integer", ToConstraint: "type string", Severity: SeverityError},
				{Check: CheckDomain, From: "v1", To: "v1alpha1", Path: "/spec/size", ToPath: "/spec/replicas", FromConstraint: "type string", ToConstraint: "type integer", Severity: SeverityError},
				{Check: CheckDomain, From: "v1beta1", To: "v1", Path: "/spec/size", ToPath: "/spec/size", FromConstraint: "type integer", ToConstraint: "type string", Severity: SeverityError},
				{Check: CheckDomain, From: "v1", To: "v1beta1", Path: "/spec/size", ToPath: "/spec/size", FromConstraint: "type string", ToConstraint: "type integer", Severity: SeverityError},
			},
		},
		{
			name: "hub nullable, spoke not",
			crd:  []string{"note: {type: string, nullable: true}\n          status", "note: {type: string}\n          status"},
			want: []key{{Check: CheckDomain, From: "v1", To: "v1alpha1", Path: "/spec/note", ToPath: "/spec/note", FromConstraint: "nullable", ToConstraint: "not nullable", Severity: SeverityError}},
		},
		{
			name: "enum value without mapping",
			crd:  []string{"mode: {type: string, enum: [Fast, Slow]}", "mode: {type: string, enum: [Fast, Slow, Turbo]}"},
			want: []key{{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/mode", ToPath: "/spec/mode", FromConstraint: `enum ["Fast","Slow","Turbo"]`, ToConstraint: `enum mapping of ["Fast","Slow"]`, Severity: SeverityError}},
		},
		{
			name: "spoke list-type set, hub atomic is fine; spoke atomic, hub set is not",
			crd:  []string{"tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}", "tags: {type: array, items: {type: string}}"},
			want: []key{{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/tags", ToPath: "/spec/tags", FromConstraint: "list-type atomic (duplicates accepted)", ToConstraint: "list-type set", Severity: SeverityError}},
		},
		{
			name: "hub requires a field the spoke does not",
			crd:  []string{"          spec:\n            type: object\n            properties:\n              size:", "          spec:\n            type: object\n            required: [size]\n            properties:\n              size:"},
			want: []key{
				{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/replicas", ToPath: "/spec/size", FromConstraint: "optional", ToConstraint: "required", Severity: SeverityError},
				{Check: CheckDomain, From: "v1beta1", To: "v1", Path: "/spec/size", ToPath: "/spec/size", FromConstraint: "optional", ToConstraint: "required", Severity: SeverityError},
			},
		},
		{
			name: "defaults differ",
			crd:  []string{"tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}\n              labels", "tags: {type: array, x-kubernetes-list-type: set, items: {type: string}, default: [a]}\n              labels"},
			want: []key{{Check: CheckDefault, From: "v1alpha1", To: "v1", Path: "/spec/tags", ToPath: "/spec/tags", FromConstraint: `default ["a"]`, ToConstraint: "no default", Severity: SeverityWarning}},
		},
		{
			name:  "spoke-only field without a rule is lossy",
			rules: []string{"    - spokeOnly: {path: spec.legacy}\n", ""},
			want:  []key{{Check: CheckLossy, From: "v1alpha1", To: "v1", Path: "/spec/legacy", ToPath: "/spec/legacy", Severity: SeverityError}},
		},
		{
			name:  "hub-only field without a rule is lossy",
			rules: []string{"    - hubOnly: {path: spec.paused}\n", ""},
			want:  []key{{Check: CheckLossy, From: "v1", To: "v1alpha1", Path: "/spec/paused", ToPath: "/spec/paused", Severity: SeverityError}},
		},
		{
			name: "status field of one version only is lossy",
			crd:  []string{"              ready: {type: boolean}\n  - name: v1\n", "              ready: {type: boolean}\n              phase: {type: string}\n  - name: v1\n"},
			want: []key{{Check: CheckLossy, From: "v1alpha1", To: "v1", Path: "/status/phase", ToPath: "/status/phase", Severity: SeverityError}},
		},
		{
			name:  "rule names a missing field",
			rules: []string{"from: spec.replicas", "from: spec.replicaz"},
			want: []key{
				{Check: CheckRulePath, From: "v1alpha1", Path: "/spec/replicaz", Severity: SeverityError},
				// With the rename pointing nowhere, replicas and size are
				// each a field of one version only.
				{Check: CheckLossy, From: "v1alpha1", To: "v1", Path: "/spec/replicas", ToPath: "/spec/replicas", Severity: SeverityError},
				{Check: CheckLossy, From: "v1", To: "v1alpha1", Path: "/spec/size", ToPath: "/spec/replicaz", Severity: SeverityError},
			},
		},
		{
			name: "list to map from an atomic list",
			crd:  []string{"                type: array\n                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys: [name]\n", "                type: array\n"},
			want: []key{{Check: CheckDomain, From: "v1alpha1", To: "v1", Path: "/spec/endpoints", ToPath: "/spec/endpoints", FromConstraint: "list-type atomic (duplicate name values accepted)", ToConstraint: "map keyed by name", Severity: SeverityWarning}},
		},
		{
			name: "two storage versions",
			crd:  []string{"  - name: v1beta1\n    served: true\n    storage: false", "  - name: v1beta1\n    served: true\n    storage: true"},
			want: []key{{Check: CheckStorage, Severity: SeverityError, Path: "/spec/versions"}},
		},
		{
			name: "no conversion webhook",
			crd:  []string{"strategy: Webhook", "strategy: None"},
			want: []key{{Check: CheckStrategy, Severity: SeverityError}},
		},
		{
			name: "review versions without v1",
			crd:  []string{`conversionReviewVersions: ["v1"]`, `conversionReviewVersions: ["v1beta1"]`},
			want: []key{{Check: CheckStrategy, Severity: SeverityError}},
		},
		{
			name: "hub not served",
			crd:  []string{"  - name: v1\n    served: true", "  - name: v1\n    served: false"},
			want: []key{{Check: CheckHubServed, From: "v1", Severity: SeverityError}},
		},
		{
			name: "version not in the rules",
			crd:  []string{"  - name: v1beta1\n", "  - name: v1beta2\n"},
			want: []key{
				{Check: CheckVersions, From: "v1beta1", Severity: SeverityWarning},
				{Check: CheckVersions, From: "v1beta2", Severity: SeverityError},
			},
		},
		{
			name: "schema not structural",
			crd:  []string{"ready: {type: boolean}\n  - name: v1beta1", "ready: {}\n  - name: v1beta1"},
			want: []key{{Check: CheckStructural, From: "v1", Severity: SeverityError, Path: "/spec/versions/1/schema"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd, rules := variant(t, tt.crd, tt.rules)
			r := Static(crd, rules)
			if diff := cmp.Diff(tt.want, keysOf(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%s", diff, textOf(r))
			}
		})
	}
}

func textOf(r *Report) string {
	var b strings.Builder
	_ = r.WriteText(&b)
	return b.String()
}

func TestStaticPositions(t *testing.T) {
	crd, rules := variant(t, []string{"size: {type: integer, format: int32, minimum: 0, maximum: 100}", "size: {type: integer, format: int32, minimum: 1, maximum: 100}"}, nil)
	r := Static(crd, rules)
	for _, f := range r.Findings {
		if f.Check == CheckDomain && f.Path == "/spec/replicas" {
			if f.Pos != "crd.yaml:28" {
				t.Errorf("position = %q, want crd.yaml:28 (the spoke field's schema)", f.Pos)
			}
			return
		}
	}
	t.Fatalf("no domain finding for /spec/replicas:\n%s", textOf(r))
}

// twoVersionCRD is a CRD whose versions v1 and v2 have the same schema,
// with the conversion stanza given.
func twoVersionCRD(t testing.TB, conversion string) *schema.CRD {
	t.Helper()
	version := func(name string, storage bool) string {
		return fmt.Sprintf(`  - name: %s
    served: true
    storage: %v
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              labels: {type: object, additionalProperties: {type: string}}
`, name, storage)
	}
	crd, err := schema.Load("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, listKind: ThingList, plural: things, singular: thing}
  scope: Namespaced
`+conversion+`  versions:
`+version("v1", true)+version("v2", false)))
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestStrategyNoneWithRules (issue 27, bug 7): identical schemas are right
// with strategy None, but not when the rules change objects (here they
// rename a map key): the API server never calls a webhook to run them.
func TestStrategyNoneWithRules(t *testing.T) {
	rules, err := convrules.Parse("rules.yaml", []byte(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: things.example.com}
spec:
  group: example.com
  kind: Thing
  hub: v1
  spokes:
  - version: v2
    rules:
    - rename: {from: 'spec.labels["old"]', to: 'spec.labels["new"]'}
`))
	if err != nil {
		t.Fatal(err)
	}
	none := twoVersionCRD(t, "  conversion: {strategy: None}\n")
	var got []key
	for _, f := range Static(none, rules).Findings {
		if f.Check == CheckStrategy {
			got = append(got, key{Check: f.Check, Severity: f.Severity})
			if !strings.Contains(f.Message, "rule rename /spec/labels/old -> /spec/labels/new at rules.yaml:11") {
				t.Errorf("message does not name the rule: %s", f.Message)
			}
		}
	}
	if diff := cmp.Diff([]key{{Check: CheckStrategy, Severity: SeverityError}}, got); diff != "" {
		t.Errorf("strategy findings (-want +got):\n%s", diff)
	}
	// Without rules, identical schemas and None are correct.
	if r := Static(none, nil); r.Errors() != 0 {
		t.Errorf("no rules, strategy None, identical schemas:\n%s", textOf(r))
	}
}

// crdOf builds a two-version CRD (v1alpha1, and v1 the hub) from the
// properties of each version's spec.
func crdOf(t testing.TB, spoke, hub string) *schema.CRD {
	t.Helper()
	version := func(name string, storage bool, props string) string {
		return fmt.Sprintf(`  - name: %s
    served: true
    storage: %v
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
%s`, name, storage, props)
	}
	crd, err := schema.Load("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, listKind: ThingList, plural: things, singular: thing}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: ["v1"]
      clientConfig: {service: {name: hubspoke, namespace: hubspoke-system, path: /convert}}
  versions:
`+version("v1alpha1", false, spoke)+version("v1", true, hub)))
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func rulesOfFile(t testing.TB, rules string) *convrules.File {
	t.Helper()
	f, err := convrules.Parse("rules.yaml", []byte(`apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: things.example.com}
spec:
  group: example.com
  kind: Thing
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
`+rules))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRulePathsBetweenRules (issue 27, bug 5): a rule names fields in the
// shape the object has when it runs, which may exist only between rules:
// parts gathered into one object before a join (the pattern rules.md
// recommends), a singleton list inside a singleton list unwrapped in two
// steps. None is a rule-path error; a typo still is.
func TestRulePathsBetweenRules(t *testing.T) {
	tests := []struct {
		name, spoke, hub, rules string
		want                    []key
	}{
		{
			name:  "parts gathered before a join",
			spoke: "              repository: {type: string}\n              tag: {type: string}\n",
			hub:   "              image: {type: string}\n",
			rules: `    - rename: {from: spec.repository, to: spec.image.repository}
    - rename: {from: spec.tag, to: spec.image.tag}
    - join: {from: spec.image, pattern: "{repository}:{tag}"}
`,
		},
		{
			name:  "a list in a list unwrapped in two steps",
			spoke: "              homes: {type: array, items: {type: array, items: {type: string}}}\n",
			hub:   "              home: {type: string}\n",
			rules: `    - listToItem: {from: spec.homes, to: spec.homeList}
    - listToItem: {from: spec.homeList, to: spec.home}
`,
		},
		{
			name:  "a typo is still an error",
			spoke: "              repository: {type: string}\n              tag: {type: string}\n",
			hub:   "              image: {type: string}\n",
			rules: `    - rename: {from: spec.repositroy, to: spec.image.repository}
    - rename: {from: spec.tag, to: spec.image.tag}
    - join: {from: spec.image, pattern: "{repository}:{tag}"}
`,
			want: []key{{Check: CheckRulePath, From: "v1alpha1", Path: "/spec/repositroy", Severity: SeverityError}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Static(crdOf(t, tt.spoke, tt.hub), rulesOfFile(t, tt.rules))
			var got []key
			for _, k := range keysOf(r) {
				if k.Check == CheckRulePath {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rule-path findings (-want +got):\n%s\n%s", diff, textOf(r))
			}
		})
	}
}
