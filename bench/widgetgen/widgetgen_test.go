package widgetgen_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
)

func TestGenerate(t *testing.T) {
	tests := []struct {
		name       string
		opts       widgetgen.Options
		minSize    int
		maxSize    int
		sizeKey    string
		extraCount int
	}{
		{name: "v1alpha1 default", opts: widgetgen.Options{Seed: 1}, minSize: 2500, maxSize: 3500, sizeKey: "replicas"},
		{name: "v1", opts: widgetgen.Options{Seed: 2, Version: "v1"}, minSize: 2500, maxSize: 3500, sizeKey: "size"},
		{name: "ten extra fields", opts: widgetgen.Options{Seed: 3, ExtraSpecFields: 10}, minSize: 2500, maxSize: 4000, sizeKey: "replicas", extraCount: 10},
		{name: "thousand extra fields", opts: widgetgen.Options{Seed: 4, ExtraSpecFields: 1000}, minSize: 10000, maxSize: 40000, sizeKey: "replicas", extraCount: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := widgetgen.Generate(50, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for i, o := range objs {
				if len(o) < tt.minSize || len(o) > tt.maxSize {
					t.Errorf("object %d is %d bytes, want %d..%d", i, len(o), tt.minSize, tt.maxSize)
				}
				var w struct {
					APIVersion string `json:"apiVersion"`
					Metadata   struct {
						Name string `json:"name"`
					} `json:"metadata"`
					Spec map[string]any `json:"spec"`
				}
				if err := json.Unmarshal(o, &w); err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				if want := "example.com/" + defaultVersion(tt.opts.Version); w.APIVersion != want {
					t.Errorf("object %d: apiVersion %q, want %q", i, w.APIVersion, want)
				}
				if names[w.Metadata.Name] {
					t.Errorf("object %d: duplicate name %q", i, w.Metadata.Name)
				}
				names[w.Metadata.Name] = true
				if _, ok := w.Spec[tt.sizeKey]; !ok {
					t.Errorf("object %d: spec has no %q", i, tt.sizeKey)
				}
				if got := len(w.Spec) - 5; got != tt.extraCount {
					t.Errorf("object %d: %d extra spec fields, want %d", i, got, tt.extraCount)
				}
			}
		})
	}
}

func defaultVersion(v string) string {
	if v == "" {
		return "v1alpha1"
	}
	return v
}

func TestGenerateDeterministic(t *testing.T) {
	a, err := widgetgen.Generate(50, widgetgen.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b, err := widgetgen.Generate(50, widgetgen.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("same seed, different object %d (-first +second):\n%s", i, cmp.Diff(string(a[i]), string(b[i])))
		}
	}
	c, err := widgetgen.Generate(50, widgetgen.Options{Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a[0], c[0]) {
		t.Error("different seeds gave the same first object")
	}
}

func TestNewGeneratorErrors(t *testing.T) {
	tests := []struct {
		name string
		opts widgetgen.Options
	}{
		{name: "unknown version", opts: widgetgen.Options{Version: "v2"}},
		{name: "negative extra fields", opts: widgetgen.Options{ExtraSpecFields: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := widgetgen.NewGenerator(tt.opts); err == nil {
				t.Errorf("NewGenerator(%+v) succeeded, want an error", tt.opts)
			}
		})
	}
}

func Example() {
	objs, err := widgetgen.Generate(3, widgetgen.Options{Seed: 42})
	if err != nil {
		panic(err)
	}
	for _, o := range objs {
		var w struct {
			Metadata struct{ Name string }
			Spec     struct{ Replicas int }
		}
		if err := json.Unmarshal(o, &w); err != nil {
			panic(err)
		}
		fmt.Println(w.Metadata.Name, w.Spec.Replicas, len(o) > 2500 && len(o) < 3500)
	}
	// Output:
	// raven-alpha-1-ef27d 4 true
	// bravo-fjord-2-afef4 10 true
	// raven-harbor-3-338e6 8 true
}
