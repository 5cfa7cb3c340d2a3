package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert"
	_ "github.com/hubspoke/hubspoke/convert/celenv" // rules with when
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
)

// conversionVersion returns the Conversion CRD's version as the API
// server's validators see it.
func conversionVersion(t *testing.T) *schema.Version {
	t.Helper()
	crd := deploy.ConversionCRD()
	if errs := crdvalidation.Object(crd); len(errs) > 0 {
		t.Fatalf("the API server would refuse the Conversion CRD: %v", errs)
	}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	c, err := schema.Load("conversion-crd.json", data)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Version(v1alpha1.Version)
	if v == nil || v.Structural == nil {
		t.Fatalf("no structural schema for %s: %v", v1alpha1.Version, v.StructuralErr)
	}
	return v
}

// validate returns the API server's objections to a Conversion, as YAML.
func validate(t *testing.T, v *schema.Version, doc string) []string {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	obj, err := schema.DecodeObject(js)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range v.Validate(obj) {
		out = append(out, p.String())
	}
	return out
}

// TestConversionCRDAcceptsRuleFiles: every rule file of the examples is a
// Conversion the API server accepts as it is, without pruning a field.
func TestConversionCRDAcceptsRuleFiles(t *testing.T) {
	v := conversionVersion(t)
	files, err := filepath.Glob("../examples/*/conversion.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if probs := validate(t, v, string(data)); len(probs) > 0 {
			t.Errorf("%s: %v", f, probs)
		}
	}
}

const crdHead = `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: widgets.example.com}
spec:
  group: example.com
  kind: Widget
  hub: v1
`

// TestEveryRuleParameterHasASchema: the Conversion CRD's schema knows
// every parameter and modifier of every rule kind the loader reads, so
// the API server prunes none of a rule file applied as an object.
func TestEveryRuleParameterHasASchema(t *testing.T) {
	v := conversionVersion(t)
	rule := v.Structural.Properties["spec"].Properties["spokes"].Items.Properties["rules"].Items
	for _, k := range rules.Grammar() {
		got := rule.Properties[k.Name].Properties
		for _, p := range append(k.Params, k.Modifiers...) {
			if _, ok := got[p]; !ok {
				t.Errorf("rule kind %s: no schema for %s", k.Name, p)
			}
		}
		if len(got) != len(k.Params)+len(k.Modifiers) {
			t.Errorf("rule kind %s: the schema has %d parameters, the loader reads %d", k.Name, len(got), len(k.Params)+len(k.Modifiers))
		}
	}
}

// TestConversionCRDSchema holds the schema to the loader on the values
// whose types OpenAPI can say: what both accept, and what both refuse.
func TestConversionCRDSchema(t *testing.T) {
	v := conversionVersion(t)
	tests := []struct {
		name string
		spec string
		want string // "" accepted, else a substring of the API server's objection
	}{
		{"scale as a string", "  spokes:\n  - version: v1alpha1\n    rules:\n    - scale: {from: spec.a, to: spec.b, multiply: \"1000\"}\n", ""},
		{"funcs owning a list of paths", "  spokes:\n  - version: v1alpha1\n    rules:\n    - funcs: {name: f, from: [spec.a, spec.b], to: spec.c}\n", ""},
		{"hubOnly with an object default", "  spokes:\n  - version: v1alpha1\n    rules:\n    - hubOnly: {path: spec.a, default: {x: [1, true]}}\n", ""},
		{"operator fields", "  rollout:\n    acknowledgeDifferences: {fromGeneration: 2, reason: renamed}\n  storage: {migrate: true, pruneStoredVersions: true, backup: true}\n", ""},
		{"unknown rule parameter", "  spokes:\n  - version: v1alpha1\n    rules:\n    - rename: {from: spec.a, too: spec.b}\n", "spec.spokes[0].rules[0].rename.too: unknown field"},
		{"unknown rule kind", "  spokes:\n  - version: v1alpha1\n    rules:\n    - frobnicate: {from: spec.a}\n", "spec.spokes[0].rules[0].frobnicate: unknown field"},
		{"two kinds in a rule", "  spokes:\n  - version: v1alpha1\n    rules:\n    - {rename: {from: spec.a, to: spec.b}, enum: {from: spec.c}}\n", "spec.spokes[0].rules[0]: Too many: 2: must have at most 1 item"},
		{"unknown spec field", "  extra: 1\n", "spec.extra: unknown field"},
		{"enum of numbers and booleans", "  spokes:\n  - version: v1alpha1\n    rules:\n    - enum: {from: spec.a, values: {Low: 0, High: 2.5, On: true}, hubValues: {Medium: Low}}\n", ""},
		{"every modifier", "  spokes:\n  - version: v1alpha1\n    rules:\n    - rename: {from: spec.a, to: spec.b, when: has(self.x), restore: kept, dropIfEmpty: true}\n", ""},
		{"constant, drop and missing", "  spokes:\n  - version: v1alpha1\n    rules:\n    - constant: {path: spec.a, value: {x: 1}, in: hub}\n    - drop: {path: spec.b, in: spoke, acknowledgeLoss: unused}\n    - missing: {path: spec.c, hub: [1], spoke: false}\n", ""},
		{"dropIfEmpty not a bool", "  spokes:\n  - version: v1alpha1\n    rules:\n    - rename: {from: spec.a, to: spec.b, dropIfEmpty: \"yes\"}\n", "spec.spokes[0].rules[0].rename.dropIfEmpty: Invalid value"},
		{"storage not a bool", "  storage: {migrate: \"yes\"}\n", "spec.storage.migrate: Invalid value"},
		{"acknowledgement without reason", "  rollout:\n    acknowledgeDifferences: {fromGeneration: 2}\n", "spec.rollout.acknowledgeDifferences.reason: Required value"},
		{"spoke without version", "  spokes:\n  - rules: []\n", "spec.spokes[0].version: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := crdHead + tt.spec
			probs := validate(t, v, doc)
			_, loadErr := rules.Parse("f.yaml", []byte(doc), rules.Options{Funcs: map[string]convert.Rule{"f": nil}})
			if tt.want == "" {
				if len(probs) > 0 {
					t.Errorf("refused: %v", probs)
				}
				if loadErr != nil {
					t.Errorf("the loader refuses what the schema accepts: %v", loadErr)
				}
				return
			}
			if !strings.Contains(strings.Join(probs, "\n"), tt.want) {
				t.Errorf("problems %q, want one containing %q", probs, tt.want)
			}
			if loadErr == nil {
				t.Errorf("the loader accepts what the schema refuses")
			}
		})
	}
}
