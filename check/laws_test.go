package check

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/schema"
)

func loadCRD(t testing.TB, path string) *schema.CRD {
	t.Helper()
	crd, err := schema.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func lawOpts(laws ...string) Options {
	return Options{Objects: 100, Seed: 42, ShrinkTime: 2 * time.Second, Laws: laws}
}

func TestLawsCleanConverter(t *testing.T) {
	crd := loadCRD(t, "testdata/crd.yaml")
	r := Laws(context.Background(), crd, &fakeConverter{}, lawOpts())
	if len(r.Findings) > 0 {
		t.Fatalf("a correct converter has findings:\n%s", textOf(r))
	}
	if r.Laws != 16 {
		t.Errorf("law runs = %d, want 16 (2 spokes x 2 round trips + 6 pairs x (path agreement + determinism))", r.Laws)
	}
}

// TestLawsCatchBrokenConverters holds the "must catch" list: each broken
// variant must be reported by the named law, between the named versions,
// with a counterexample and the pointer of the difference.
func TestLawsCatchBrokenConverters(t *testing.T) {
	tests := []struct {
		name     string
		conv     *fakeConverter
		crdEdits []string
		laws     []string
		// check, from, to, path: the finding whose counterexample must be
		// minimal; want: every finding, as findingKeys renders them.
		check, from, to, path string
		want                  []string
	}{
		{
			name:  "one-way conversion only (FromHub is identity)",
			conv:  &fakeConverter{oneWay: true},
			laws:  []string{LawSpokeRoundTrip},
			check: LawValidOutput, from: "v1", to: "v1alpha1", path: "/spec/mode",
			want: []string{
				"error spoke-hub-spoke v1alpha1->v1 /metadata/annotations",
				"error spoke-hub-spoke v1alpha1->v1 /metadata/annotations/hubspoke.dev~1preserved",
				"error spoke-hub-spoke v1alpha1->v1 /spec/endpoints",
				"error spoke-hub-spoke v1alpha1->v1 /spec/legacy",
				"error spoke-hub-spoke v1alpha1->v1 /spec/mode",
				"error spoke-hub-spoke v1alpha1->v1 /spec/replicas",
				"error valid-output v1->v1alpha1 /spec/endpoints",
				"error valid-output v1->v1alpha1 /spec/mode",
				"warning api-server-coerced v1->v1alpha1 /spec/endpoints/",
				"warning api-server-coerced v1->v1alpha1 /spec/size",
			},
		},
		{
			name:  "hub-only field dropped",
			conv:  &fakeConverter{dropHubOnly: true},
			laws:  []string{LawHubRoundTrip},
			check: LawHubRoundTrip, from: "v1", to: "v1alpha1", path: "/spec/paused",
			want: []string{
				"error hub-spoke-hub v1->v1alpha1 /spec/paused",
			},
		},
		{
			name:     "list to map overwriting duplicate keys",
			conv:     &fakeConverter{overwriteDups: true},
			crdEdits: []string{"                type: array\n                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys: [name]\n", "                type: array\n"},
			laws:     []string{LawSpokeRoundTrip},
			check:    LawSpokeRoundTrip, from: "v1alpha1", to: "v1", path: "/spec/endpoints/1",
			want: []string{
				"error spoke-hub-spoke v1alpha1->v1 /spec/endpoints/0/port",
				"error spoke-hub-spoke v1alpha1->v1 /spec/endpoints/1",
				"error spoke-hub-spoke v1alpha1->v1 /spec/endpoints/1/name",
			},
		},
		{
			name:     "v1alpha1 minimum 0 against v1 minimum 1",
			conv:     &fakeConverter{},
			crdEdits: []string{"size: {type: integer, format: int32, minimum: 0, maximum: 100}", "size: {type: integer, format: int32, minimum: 1, maximum: 100}"},
			laws:     []string{LawSpokeRoundTrip},
			check:    LawValidOutput, from: "v1alpha1", to: "v1", path: "/spec/size",
			want: []string{
				"error valid-output v1alpha1->v1 /spec/size",
				"error valid-output v1beta1->v1 /spec/size",
			},
		},
		{
			name:  "nondeterministic output",
			conv:  &fakeConverter{nondeterministic: true},
			laws:  []string{LawDeterminism},
			check: LawDeterminism, from: "v1", to: "v1alpha1", path: "/metadata/annotations",
			want: []string{
				"error determinism v1->v1alpha1 /metadata/annotations",
				"error determinism v1->v1alpha1 /metadata/annotations/example.com~1call",
				"error determinism v1->v1beta1 /metadata/annotations",
				"error determinism v1->v1beta1 /metadata/annotations/example.com~1call",
				"error determinism v1alpha1->v1 /metadata/annotations",
				"error determinism v1alpha1->v1 /metadata/annotations/example.com~1call",
				"error determinism v1alpha1->v1beta1 /metadata/annotations",
				"error determinism v1alpha1->v1beta1 /metadata/annotations/example.com~1call",
				"error determinism v1beta1->v1 /metadata/annotations",
				"error determinism v1beta1->v1 /metadata/annotations/example.com~1call",
				"error determinism v1beta1->v1alpha1 /metadata/annotations",
				"error determinism v1beta1->v1alpha1 /metadata/annotations/example.com~1call",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd, _ := variant(t, tt.crdEdits, nil)
			r := Laws(context.Background(), crd, tt.conv, lawOpts(tt.laws...))
			got := findingKeys(r)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("findings (-want +got):\n%s\n%s", diff, textOf(r))
			}
			var first *Finding
			for i, f := range r.Findings {
				if f.Check == tt.check && f.From == tt.from && f.To == tt.to && f.Path == tt.path {
					first = &r.Findings[i]
				}
			}
			if first == nil {
				t.Fatalf("no %s %s -> %s %s finding", tt.check, tt.from, tt.to, tt.path)
			}
			got1 := first
			in, ok := got1.Input.(map[string]any)
			if !ok {
				t.Fatalf("no counterexample: %+v", got1)
			}
			// Minimal: the shrunk spec holds only what the failure needs.
			if spec, _ := in["spec"].(map[string]any); len(spec) > 1 {
				t.Errorf("counterexample not minimal, spec has %d fields: %v", len(spec), spec)
			}
			if md, _ := in["metadata"].(map[string]any); len(md) > 2 {
				t.Errorf("counterexample not minimal, metadata has %d fields: %v", len(md), md)
			}
		})
	}
}

// findingKeys renders the findings as "severity check from->to path", in
// order, for exact comparisons.
func findingKeys(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %s->%s %s", f.Severity, f.Check, f.From, f.To, f.Path))
	}
	sort.Strings(out)
	return out
}

func TestLawsRuleRefusalIsAWarning(t *testing.T) {
	// With list-type atomic, v1alpha1 accepts duplicate names, which the
	// correct converter refuses: a warning, not a violation.
	crd, _ := variant(t, []string{"                type: array\n                x-kubernetes-list-type: map\n                x-kubernetes-list-map-keys: [name]\n", "                type: array\n"}, nil)
	r := Laws(context.Background(), crd, &fakeConverter{}, lawOpts(LawSpokeRoundTrip))
	if r.Errors() != 0 {
		t.Fatalf("errors for a refusing converter:\n%s", textOf(r))
	}
	want := []string{"warning refused v1alpha1->v1 /spec/endpoints/1/name"}
	if diff := cmp.Diff(want, findingKeys(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s\n%s", diff, textOf(r))
	}
	if f := r.Findings[0]; !strings.Contains(f.Message, "duplicate name") || f.Count == 0 {
		t.Errorf("the refusal does not say why or how often: %+v", f)
	}
}

func TestLawsPanickingConverter(t *testing.T) {
	crd := loadCRD(t, "testdata/crd.yaml")
	r := Laws(context.Background(), crd, panicky{&fakeConverter{}}, lawOpts(LawDeterminism))
	var want []string
	for _, pair := range []string{"v1->v1alpha1", "v1->v1beta1", "v1alpha1->v1", "v1alpha1->v1beta1", "v1beta1->v1", "v1beta1->v1alpha1"} {
		want = append(want, "error determinism "+pair+" ")
	}
	if diff := cmp.Diff(want, findingKeys(r)); diff != "" {
		t.Fatalf("findings (-want +got):\n%s\n%s", diff, textOf(r))
	}
	for _, f := range r.Findings {
		if !strings.Contains(f.Message, "the conversion panicked: boom") {
			t.Errorf("message does not say the conversion panicked: %s", f.Message)
		}
	}
}

type panicky struct{ *fakeConverter }

func (p panicky) Convert(dst, obj []byte, to string) ([]byte, error) { panic("boom") }

func TestLawsCanceled(t *testing.T) {
	crd := loadCRD(t, "testdata/crd.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Laws(ctx, crd, &fakeConverter{}, lawOpts())
	if r.Laws != 0 || r.Warnings() == 0 {
		t.Fatalf("canceled run: laws=%d, findings:\n%s", r.Laws, textOf(r))
	}
}

func TestGeneratorEdgeCases(t *testing.T) {
	crd, err := schema.Load("crd.yaml", []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
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
              "n": {type: integer, format: int64} # quoted: kubectl reads a plain n as false
              s: {type: string, maxLength: 400}
              opt: {type: string, nullable: true}
              list: {type: array, items: {type: string}}
              free: {type: object, x-kubernetes-preserve-unknown-fields: true}
              embedded: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, properties: {ok: {type: boolean}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Version("v1")
	g, err := NewGenerator(crd, v)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	gen := g.Object()
	for i := 0; i < 400; i++ {
		obj := gen.Example(i)
		if probs := v.Validate(obj); len(probs) > 0 {
			t.Fatalf("generated object %d is invalid: %v\n%v", i, probs, obj)
		}
		spec, _ := obj["spec"].(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		mark := func(name string, ok bool) {
			if ok {
				seen[name] = true
			}
		}
		_, hasN := spec["n"]
		mark("missing", !hasN)
		mark("max int64", spec["n"] == int64(9223372036854775807))
		mark("min int64", spec["n"] == int64(-9223372036854775808))
		mark("zero", spec["n"] == int64(0))
		o, hasOpt := spec["opt"]
		mark("null", hasOpt && o == nil)
		s, _ := spec["s"].(string)
		mark("empty string", hasKey(spec, "s") && s == "")
		mark("long string", len([]rune(s)) == 400)
		mark("unicode", len(s) != len([]rune(s)))
		l, ok := spec["list"].([]any)
		mark("empty list", ok && len(l) == 0)
		free, _ := spec["free"].(map[string]any)
		mark("unknown fields", len(free) > 0)
		mark("status", hasKey(obj, "status"))
		mark("full metadata", hasKey(md, "ownerReferences") && hasKey(md, "managedFields"))
	}
	for _, want := range []string{"missing", "max int64", "min int64", "zero", "null", "empty string", "long string", "unicode", "empty list", "unknown fields", "status", "full metadata"} {
		if !seen[want] {
			t.Errorf("400 generated objects never had: %s", want)
		}
	}
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// TestDifferencesInListItems (issue 27, bug 4): a difference under a list
// index is described by its values, and an empty object added inside an
// item (a typed webhook's resources: {}) is the warning it is outside
// lists, not "null becomes null".
func TestDifferencesInListItems(t *testing.T) {
	a := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1"}}}}
	b := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:2", "resources": map[string]any{}}}}}
	var got []string
	for _, f := range (&lawEnv{}).differences(a, b, nil) {
		got = append(got, fmt.Sprintf("%s %s: %s [%s]", f.Severity, f.Path, f.Message, f.group))
	}
	want := []string{
		`error /spec/containers/0/image: "nginx:1" becomes "nginx:2" [/spec/containers/*/image]`,
		`warning /spec/containers/0/resources: an empty {} is added (harmless) [/spec/containers/*/resources]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
}
