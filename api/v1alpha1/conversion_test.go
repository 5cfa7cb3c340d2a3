package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert"
	_ "github.com/hubspoke/hubspoke/convert/celenv" // cel rules in the examples
	"github.com/hubspoke/hubspoke/convert/rules"
)

// object reads a rule file as kubectl sends it and the API server hands
// it back: YAML to JSON, decoded into maps (keys sorted from then on),
// with the metadata and status a stored object has.
func object(t *testing.T, data []byte) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	u.SetUID("0b7c6f5e-1b1a-4c1e-9d55-4a1c0e2f3a44")
	u.SetGeneration(3)
	u.SetResourceVersion("812")
	u.SetLabels(map[string]string{"team": "a"})
	u.Object["status"] = map[string]any{"servedGeneration": int64(2)}
	return u
}

// TestParseAsTheFile: every example's rule file, read as a Conversion
// object, is the same rule file to the loader.
func TestParseAsTheFile(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/conversion.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples: %v %v", files, err)
	}
	// The gofuncs example names a Go func; any rule stands in for it.
	from, _ := convert.ParsePath("spec.a")
	to, _ := convert.ParsePath("spec.b")
	stand, err := convert.Rename(from, to)
	if err != nil {
		t.Fatal(err)
	}
	funcs := rules.Options{Funcs: map[string]convert.Rule{"args-to-options": stand}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := rules.Parse(f, data, funcs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v1alpha1.Parse(object(t, data), funcs)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		opts := []cmp.Option{
			cmpopts.IgnoreFields(rules.File{}, "Name"),
			cmpopts.IgnoreFields(rules.SpokeSpec{}, "Line"),
			cmpopts.IgnoreFields(rules.RuleSpec{}, "Line", "Rule"),
			cmp.Comparer(func(a, b convert.Path) bool { return a.String() == b.String() }),
		}
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Errorf("%s: as an object (-file +object):\n%s", f, diff)
		}
		if got.Name != "conversion "+want.MetadataName {
			t.Errorf("Name = %q", got.Name)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"loader error, no position", "  spokes:\n  - version: v1alpha1\n    rules:\n    - enum: {from: spec.a, values: {A: X}, hubValues: {X: A}}\n",
			`conversion widgets.example.com: spec.spokes[0].rules[0].enum.hubValues.X: hub value "X" is not hub-only: spoke value "A" maps to it`},
		{"missing hub", "", "conversion widgets.example.com: spec.hub: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "apiVersion: hubspoke.dev/v1alpha1\nkind: Conversion\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  kind: Widget\n"
			if tt.spec != "" {
				doc += "  hub: v1\n" + tt.spec
			}
			_, err := v1alpha1.Parse(object(t, []byte(doc)))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestStatusRoundTrip(t *testing.T) {
	u := object(t, []byte("apiVersion: hubspoke.dev/v1alpha1\nkind: Conversion\nmetadata: {name: w}\nspec: {group: g, kind: K, hub: v1}\n"))
	want := v1alpha1.Status{
		ObservedGeneration: 3, ServedGeneration: 2, CRD: "widgets.example.com",
		Replicas:   []v1alpha1.Replica{{Name: "p-1", Address: "10.0.0.1:8443", Ready: true, ServedGeneration: 2}},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionServing, Status: metav1.ConditionFalse, Reason: "Rolling", Message: "1 of 2"}},
	}
	if err := v1alpha1.SetStatus(u, want); err != nil {
		t.Fatal(err)
	}
	got, err := v1alpha1.GetStatus(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func ExampleParse() {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hubspoke.dev/v1alpha1",
		"kind":       "Conversion",
		"metadata":   map[string]any{"name": "widgets.example.com", "generation": int64(4)},
		"spec": map[string]any{
			"group": "example.com", "kind": "Widget", "hub": "v1",
			"spokes": []any{map[string]any{
				"version": "v1alpha1",
				"rules":   []any{map[string]any{"rename": map[string]any{"from": "spec.replicas", "to": "spec.size"}}},
			}},
		},
	}}
	f, err := v1alpha1.Parse(obj)
	if err != nil {
		panic(err)
	}
	c, err := f.Converter()
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Name, c.Versions())
	// Output: conversion widgets.example.com [v1 v1alpha1]
}
