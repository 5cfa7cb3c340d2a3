package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const crdYAML = `# leading comment
apiVersion: v1
kind: ConfigMap
metadata: {name: not-this-one}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
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
              replicas: {type: integer, minimum: 0, default: 1}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              labels: {type: object, additionalProperties: {type: string}}
              "a/b": {type: string}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {x: {}}}
`

func TestLoad(t *testing.T) {
	crd, err := Load("crd.yaml", []byte(crdYAML))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"v1alpha1", "v1"}, crd.VersionNames()); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	if crd.Group() != "example.com" || crd.Kind() != "Widget" {
		t.Errorf("group/kind = %s/%s", crd.Group(), crd.Kind())
	}
	alpha := crd.Version("v1alpha1")
	if alpha.Structural == nil {
		t.Fatalf("v1alpha1 not structural: %v", alpha.StructuralErr)
	}
	v1 := crd.Version("v1")
	if v1.Structural != nil || v1.StructuralErr == nil || !strings.Contains(v1.StructuralErr.Error(), "not structural") {
		t.Errorf("v1: structural=%v err=%v, want a not-structural error", v1.Structural != nil, v1.StructuralErr)
	}
	if got := crd.Pos(crd.SchemaPointer(alpha, []string{"spec", "replicas"})); got != "crd.yaml:25" {
		t.Errorf("position of spec.replicas = %s, want crd.yaml:25", got)
	}
	if got := crd.Pos("/spec/versions/1/name"); got != "crd.yaml:38" {
		t.Errorf("position of versions[1] = %s, want crd.yaml:38", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{name: "yaml syntax", data: "apiVersion: [\n", want: "crd.yaml:1:13: document 1: not valid YAML: "},
		{name: "invalid utf-8", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: \"\xff\"\n", want: "crd.yaml:4:11: invalid UTF-8 (byte 0xff)"},
		{name: "no crd", data: "kind: ConfigMap\n", want: "no CustomResourceDefinition found"},
		{name: "v1beta1 crd", data: "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n", want: "crd.yaml:1: apiVersion"},
		{name: "unknown field", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {grop: x}\n", want: `crd.yaml:3:8: unknown field spec.grop`},
		{name: "keys match exactly", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nSpec: {group: x}\n", want: `crd.yaml:3:1: unknown field Spec`},
		{name: "duplicate field in JSON", data: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",` + "\n" + `"spec":{"group":"a","group":"b"}}`, want: `crd.yaml:2:17: duplicate field spec.group`},
		{name: "wrong type", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: x\n  versions: many\n", want: `crd.yaml:5:3: spec.versions is a string, want an array`},
		{name: "wrong type in a list", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  versions:\n  - name: v1\n    served: maybe\n", want: `crd.yaml:6:5: spec.versions[0].served is a string, want a boolean`},
		{name: "no versions", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  group: x\n", want: "crd.yaml:3: spec.versions is empty"},
		{name: "duplicate version", data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec:\n  versions:\n  - name: v1\n  - name: v1\n", want: "crd.yaml:6: spec.versions[1]: duplicate version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("crd.yaml", []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	crd, err := Load("crd.yaml", []byte(crdYAML))
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Version("v1alpha1")
	tests := []struct {
		path, wantType string
		wantErr        string
	}{
		{path: "spec.replicas", wantType: "integer"},
		{path: "/spec/replicas", wantType: "integer"},
		{path: "spec.ports", wantType: "array"},
		{path: "spec.ports[*].port", wantType: "integer"},
		{path: "spec.ports[name=*].port", wantType: "integer"},
		{path: "spec.labels.*", wantType: "string"},
		{path: "/spec/ports/0/name", wantType: "string"},
		{path: "spec.labels.anything", wantType: "string"},
		{path: "/spec/a~1b", wantType: "string"},
		{path: "spec.nope", wantErr: "/spec/nope: no such field"},
		{path: "spec..x", wantErr: "empty segment"},
		{path: "/spec/a~2", wantErr: `invalid ~ escape in "a~2"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n, err := v.Lookup(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "no such field") && !errors.Is(err, ErrNotFound) {
					t.Errorf("error does not wrap ErrNotFound: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.Type != tt.wantType {
				t.Errorf("type = %q, want %q", n.Type, tt.wantType)
			}
		})
	}
	ports, _ := v.Lookup("spec.ports")
	lt, keys := ListType(ports)
	if lt != "map" || !cmp.Equal(keys, []string{"name"}) {
		t.Errorf("ListType = %s %v, want map [name]", lt, keys)
	}
	replicas, _ := v.Lookup("spec.replicas")
	if d, ok := Default(replicas); !ok || d != int64(1) {
		t.Errorf("Default = %v (%T), %v; want 1", d, d, ok)
	}
	if got := Fields(v.Structural); !cmp.Equal(got, []string{"/spec", "/spec/a~1b", "/spec/labels", "/spec/labels/{}", "/spec/ports", "/spec/ports/*", "/spec/ports/*/name", "/spec/ports/*/port", "/spec/replicas"}) {
		t.Errorf("Fields = %v", got)
	}
}

func TestValidate(t *testing.T) {
	crd, err := Load("crd.yaml", []byte(crdYAML))
	if err != nil {
		t.Fatal(err)
	}
	v := crd.Version("v1alpha1")
	tests := []struct {
		name, obj string
		want      []string
	}{
		{name: "valid", obj: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":0,"ports":[{"name":"a"}]}}`},
		{name: "below minimum", obj: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":-1}}`, want: []string{"spec.replicas"}},
		{name: "duplicate map key", obj: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"spec":{"ports":[{"name":"a"},{"name":"a"}]}}`, want: []string{"spec.ports[1]"}},
		{name: "unknown field pruned", obj: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},"spec":{"nope":1}}`, want: []string{"spec.nope"}},
		{name: "no type meta", obj: `{"metadata":{"name":"a"},"spec":{}}`, want: []string{"apiVersion", "kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := DecodeObject([]byte(tt.obj))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range v.Validate(obj) {
				got = append(got, p.Path)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problem paths (-want +got):\n%s\n%v", diff, v.Validate(obj))
			}
		})
	}
	obj, _ := DecodeObject([]byte(`{"metadata":{"name":"a"},"spec":{"nope":1}}`))
	v.ApplyDefaults(obj)
	v.Prune(obj)
	if diff := cmp.Diff(map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"replicas": int64(1)}}, obj); diff != "" {
		t.Errorf("after defaulting and pruning (-want +got):\n%s", diff)
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(crdYAML))
	f.Add([]byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {versions: [{name: v1}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		crd, err := Load("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, v := range crd.Versions() {
			if v.Structural != nil {
				_ = Fields(v.Structural)
				_ = v.Validate(map[string]any{"metadata": map[string]any{"name": "a"}})
			}
		}
	})
}
