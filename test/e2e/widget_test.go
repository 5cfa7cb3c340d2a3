package e2e

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func widget(apiVersion, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": "default"},
		"spec":       spec,
	}}
}

// TestStrategyNone: with conversion strategy None the API server only
// changes apiVersion, then prunes what the version's schema does not know:
// spec.size is lost when read through v1alpha1. This is what a webhook is
// for.
func TestStrategyNone(t *testing.T) {
	ctx := context.Background()
	w := widget("plain.example.com/v1", "none", map[string]any{"size": int64(2)})
	if _, err := dyn.Resource(plainWidgets.gvr("v1")).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through v1: %v", err)
	}
	tests := []struct {
		version  string
		wantSpec map[string]any
	}{
		{"v1", map[string]any{"size": int64(2)}},
		{"v1alpha1", map[string]any{}},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			got, err := dyn.Resource(plainWidgets.gvr(tc.version)).Namespace("default").Get(ctx, "none", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if av := got.GetAPIVersion(); av != "plain.example.com/"+tc.version {
				t.Errorf("apiVersion %q, want plain.example.com/%s", av, tc.version)
			}
			if diff := cmp.Diff(tc.wantSpec, got.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWebhookConversion: the API server calls the webhook registered
// through the service resolver, over TLS with the injected caBundle, in
// both directions.
func TestWebhookConversion(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name          string
		createVersion string
		createSpec    map[string]any
		readVersion   string
		wantReadSpec  map[string]any
	}{
		{"v1alpha1 to v1", "v1alpha1", map[string]any{"replicas": int64(3)}, "v1", map[string]any{"size": int64(3)}},
		{"v1 to v1alpha1", "v1", map[string]any{"size": int64(5)}, "v1alpha1", map[string]any{"replicas": int64(5)}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "hook-" + string(rune('a'+i))
			// v1 is the storage version: creating through v1alpha1 or
			// reading through v1alpha1 calls the webhook.
			before := hook.objects.Load()
			client := dyn.Resource(widgets.gvr(tc.createVersion)).Namespace("default")
			created, err := client.Create(ctx, widget("example.com/"+tc.createVersion, name, tc.createSpec), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create through %s: %v", tc.createVersion, err)
			}
			if diff := cmp.Diff(tc.createSpec, created.Object["spec"]); diff != "" {
				t.Errorf("create through %s answered spec (-want +got):\n%s", tc.createVersion, diff)
			}
			got, err := dyn.Resource(widgets.gvr(tc.readVersion)).Namespace("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get through %s: %v", tc.readVersion, err)
			}
			if diff := cmp.Diff(tc.wantReadSpec, got.Object["spec"]); diff != "" {
				t.Errorf("get through %s: spec (-want +got):\n%s", tc.readVersion, diff)
			}
			if av := got.GetAPIVersion(); av != "example.com/"+tc.readVersion {
				t.Errorf("get through %s: apiVersion %q", tc.readVersion, av)
			}
			if hook.objects.Load() == before {
				t.Errorf("create through %s and get through %s did not call the webhook", tc.createVersion, tc.readVersion)
			}
			list, err := dyn.Resource(widgets.gvr(tc.readVersion)).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list through %s: %v", tc.readVersion, err)
			}
			for _, item := range list.Items {
				if av := item.GetAPIVersion(); av != "example.com/"+tc.readVersion {
					t.Errorf("list through %s: %s has apiVersion %q", tc.readVersion, item.GetName(), av)
				}
			}
		})
	}
}
