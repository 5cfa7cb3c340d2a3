package crwidget_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hubspoke/hubspoke/bench/widgetgen"
	"github.com/hubspoke/hubspoke/internal/crwidget"
	widgetv1 "github.com/hubspoke/hubspoke/internal/crwidget/v1"
	"github.com/hubspoke/hubspoke/internal/crwidget/v1alpha1"
)

func newConverter(t *testing.T) *crwidget.Converter {
	t.Helper()
	s, err := crwidget.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return crwidget.NewConverter(s)
}

// expected returns obj decoded generically with apiVersion set to
// toAPIVersion and spec key from renamed to to.
func expected(t *testing.T, obj []byte, toAPIVersion, from, to string) map[string]any {
	t.Helper()
	m := decode(t, obj)
	m["apiVersion"] = toAPIVersion
	spec := m["spec"].(map[string]any)
	spec[to] = spec[from]
	delete(spec, from)
	return m
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %.80s: %v", b, err)
	}
	return m
}

func TestConvertGenerated(t *testing.T) {
	c := newConverter(t)
	tests := []struct {
		name      string
		version   string
		to        string
		from, key string
	}{
		{name: "v1alpha1 to v1", version: "v1alpha1", to: "example.com/v1", from: "replicas", key: "size"},
		{name: "v1 to v1alpha1", version: "v1", to: "example.com/v1alpha1", from: "size", key: "replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := widgetgen.Generate(50, widgetgen.Options{Seed: 11, Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range objs {
				got, err := c.Convert(nil, o, tt.to)
				if err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				want := expected(t, o, tt.to, tt.from, tt.key)
				if diff := cmp.Diff(want, decode(t, got)); diff != "" {
					t.Errorf("object %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestConvertRoundTrip(t *testing.T) {
	c := newConverter(t)
	objs, err := widgetgen.Generate(20, widgetgen.Options{Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range objs {
		hub, err := c.Convert(nil, o, "example.com/v1")
		if err != nil {
			t.Fatalf("object %d to hub: %v", i, err)
		}
		back, err := c.Convert(nil, hub, "example.com/v1alpha1")
		if err != nil {
			t.Fatalf("object %d from hub: %v", i, err)
		}
		if diff := cmp.Diff(decode(t, o), decode(t, back)); diff != "" {
			t.Errorf("object %d: spoke -> hub -> spoke changed it (-in +out):\n%s", i, diff)
		}
	}
}

func TestConvertSameVersion(t *testing.T) {
	c := newConverter(t)
	objs, err := widgetgen.Generate(1, widgetgen.Options{Seed: 13})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Convert([]byte("prefix"), objs[0], "example.com/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("prefix"+string(objs[0]), string(got)); diff != "" {
		t.Errorf("same-version conversion changed the bytes (-want +got):\n%s", diff)
	}
}

func TestConvertErrors(t *testing.T) {
	c := newConverter(t)
	tests := []struct {
		name, obj, to, wantErr string
	}{
		{name: "invalid json", obj: `{"apiVersion":`, to: "example.com/v1", wantErr: "decode widget"},
		{name: "unknown source version", obj: `{"apiVersion":"example.com/v9","kind":"Widget"}`, to: "example.com/v1", wantErr: "decode widget"},
		{name: "unknown target version", obj: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`, to: "example.com/v9", wantErr: "allocate example.com/v9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Convert(nil, []byte(tt.obj), tt.to)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Convert() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDeepCopy(t *testing.T) {
	objs, err := widgetgen.Generate(1, widgetgen.Options{Seed: 14, Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	var w widgetv1.Widget
	if err := json.Unmarshal(objs[0], &w); err != nil {
		t.Fatal(err)
	}
	cp := w.DeepCopyObject().(*widgetv1.Widget)
	if diff := cmp.Diff(&w, cp); diff != "" {
		t.Fatalf("DeepCopy differs (-orig +copy):\n%s", diff)
	}
	*cp.Spec.Size = 99
	cp.Labels["team"] = "changed"
	cp.Spec.Template.Spec.Containers[0].Env[0].Value = "changed"
	cp.Spec.Template.Spec.Containers[0].Resources.Limits["cpu"] = "changed"
	cp.Spec.Selector.MatchLabels["x"] = "changed"
	cp.Status.Conditions[0].Reason = "Changed"
	if *w.Spec.Size == 99 || w.Labels["team"] == "changed" || w.Spec.Template.Spec.Containers[0].Env[0].Value == "changed" ||
		w.Spec.Template.Spec.Containers[0].Resources.Limits["cpu"] == "changed" || w.Spec.Selector.MatchLabels["x"] == "changed" ||
		w.Status.Conditions[0].Reason == "Changed" {
		t.Error("changing the copy changed the original")
	}

	var a v1alpha1.Widget
	if err := json.Unmarshal([]byte(strings.Replace(string(objs[0]), `"size"`, `"replicas"`, 1)), &a); err != nil {
		t.Fatal(err)
	}
	acp := a.DeepCopyObject().(*v1alpha1.Widget)
	if diff := cmp.Diff(&a, acp); diff != "" {
		t.Fatalf("v1alpha1 DeepCopy differs (-orig +copy):\n%s", diff)
	}
	*acp.Spec.Replicas = 99
	if *a.Spec.Replicas == 99 {
		t.Error("changing the v1alpha1 copy changed the original")
	}
}
