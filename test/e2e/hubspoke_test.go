package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// The tests in this file run the real hubspoke ConversionReview handler,
// served by the sandbox over TLS as service hubspoke-system/hubspoke-e2e,
// behind two CRDs: examples/evolving-widget (three versions, every rule
// kind) and examples/widget copied into group real.example.com.

const (
	hsNamespace = "hubspoke-system"
	hsService   = "hubspoke-e2e"
	ns          = "e2e"
)

var (
	evolving    = crdVersions{group: "example.com", resource: "evolvingwidgets"}
	realWidgets = crdVersions{group: "real.example.com", resource: "widgets"}
	noneWidgets = crdVersions{group: "none.example.com", resource: "widgets"}

	hsOnce sync.Once
	hsErr  error
	hsConv map[string]*convert.Converter // by group
	hsHook *sandbox.Webhook
	hsH    *review.Handler
)

// hubspokeWebhook starts the real webhook and installs its CRDs, once.
func hubspokeWebhook(t testing.TB) {
	t.Helper()
	hsOnce.Do(func() { hsErr = setupHubspoke() })
	if hsErr != nil {
		t.Fatal(hsErr)
	}
}

func setupHubspoke() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	evolvingRules, err := rules.LoadFile("../../examples/evolving-widget/conversion.yaml")
	if err != nil {
		return err
	}
	widgetRules, err := os.ReadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		return err
	}
	realRules, err := rules.Load("real-widget.yaml", []byte(strings.Replace(string(widgetRules), "group: example.com", "group: "+realWidgets.group, 1)))
	if err != nil {
		return err
	}
	hsConv = map[string]*convert.Converter{evolving.group: evolvingRules, realWidgets.group: realRules}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{evolvingRules, realRules}})
	if err != nil {
		return err
	}
	hsH = h
	if hsHook, err = sb.ServeWebhook(hsNamespace, hsService, h); err != nil {
		return err
	}
	ev, err := sandbox.ReadCRDFile("../../examples/evolving-widget/crd.yaml")
	if err != nil {
		return err
	}
	ev.Spec.Conversion.Webhook.ClientConfig.Service.Name = hsService
	w, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		return err
	}
	real := rename(w, realWidgets.group)
	real.Spec.Conversion.Webhook.ClientConfig.Service.Name = hsService
	none := rename(w, noneWidgets.group)
	none.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{ev, real, none} {
		if _, err := sb.InstallCRD(ctx, crd); err != nil {
			return err
		}
	}
	return waitCABundles(ctx, ev.Name, real.Name)
}

func rename(crd *apiextensionsv1.CustomResourceDefinition, group string) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.Name = c.Spec.Names.Plural + "." + group
	c.Spec.Group = group
	return c
}

// waitCABundles waits for the sandbox's injector to set the webhook's CA.
func waitCABundles(ctx context.Context, names ...string) error {
	cs, err := apiextensionsclient.NewForConfig(sb.RESTConfig())
	if err != nil {
		return err
	}
	for _, name := range names {
		for {
			crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) > 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: caBundle not injected: %w", name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// fixture reads an example object as unstructured, in namespace ns.
func fixture(t *testing.T, version, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("../../examples/evolving-widget/objects/" + version + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// expectSpec converts obj with the engine to version and returns its spec:
// what the API server must return when it reads obj through version.
func expectSpec(t *testing.T, obj *unstructured.Unstructured, version string) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	out, err := hsConv[obj.GroupVersionKind().Group].Convert(nil, raw, obj.GroupVersionKind().Group+"/"+version)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	spec, _ := m["spec"].(map[string]any)
	// The API server applies the hub schema's default on read, as for any
	// object: evolving-widget's v1 defaults spec.priority to Normal.
	if obj.GroupVersionKind().Kind == "EvolvingWidget" && version == "v1" && spec != nil {
		if _, ok := spec["priority"]; !ok {
			spec["priority"] = "Normal"
		}
	}
	return normalize(spec)
}

// normalize round-trips v through JSON so numbers compare alike.
func normalize(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func specOf(u *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return normalize(spec)
}

// TestEveryVerbThroughEveryVersion: create through each served version, then
// get, update, patch, list and watch through every version, with the real
// API server calling the real hubspoke webhook, for both examples.
func TestEveryVerbThroughEveryVersion(t *testing.T) {
	hubspokeWebhook(t)
	t.Run("evolving-widget", func(t *testing.T) {
		everyVerb(t, evolving, []string{"v1alpha1", "v1beta1", "v1"}, fixture)
	})
	t.Run("widget", func(t *testing.T) {
		everyVerb(t, realWidgets, []string{"v1alpha1", "v1"}, func(t *testing.T, version, name string) *unstructured.Unstructured {
			spec := map[string]any{"replicas": int64(4)}
			if version == "v1" {
				spec = map[string]any{"size": int64(4)}
			}
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": realWidgets.group + "/" + version, "kind": "Widget",
				"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "demo"}},
				"spec":     spec,
			}}
		})
	})
}

func everyVerb(t *testing.T, crd crdVersions, versions []string, fixture func(t *testing.T, version, name string) *unstructured.Unstructured) {
	ctx := context.Background()
	evolving := crd // the resource under test
	ns := "verbs"   // apart from the objects other tests count
	withNS := fixture
	fixture = func(t *testing.T, version, name string) *unstructured.Unstructured {
		u := withNS(t, version, name)
		u.SetNamespace(ns)
		return u
	}
	for _, created := range versions {
		t.Run("created-through-"+created, func(t *testing.T) {
			name := "verbs-" + created
			obj := fixture(t, created, name)
			if _, err := dyn.Resource(evolving.gvr(created)).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create through %s: %v", created, err)
			}
			for _, v := range versions {
				got, err := dyn.Resource(evolving.gvr(v)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("get through %s: %v", v, err)
				}
				if got.GetAPIVersion() != evolving.group+"/"+v {
					t.Errorf("get through %s returned %s", v, got.GetAPIVersion())
				}
				// A fresh object read through its own version comes back as written.
				if v == created {
					if diff := cmp.Diff(specOf(obj), specOf(got)); diff != "" {
						t.Errorf("read back through %s (-created +got):\n%s", v, diff)
					}
				}
				// What the API server returns through v is what the engine gives.
				if diff := cmp.Diff(expectSpec(t, obj, v), specOf(got)); diff != "" {
					t.Errorf("get through %s (-engine +apiserver):\n%s", v, diff)
				}
			}
			// update through each version: a read-modify-write keeps everything.
			for _, v := range versions {
				got, err := dyn.Resource(evolving.gvr(v)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				labels := got.GetLabels()
				if labels == nil {
					labels = map[string]string{}
				}
				labels["updated-through"] = v
				got.SetLabels(labels)
				if _, err := dyn.Resource(evolving.gvr(v)).Namespace(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update through %s: %v", v, err)
				}
			}
			after, err := dyn.Resource(evolving.gvr(created)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(specOf(obj), specOf(after)); diff != "" {
				t.Errorf("spec changed by read-modify-write through every version (-created +now):\n%s", diff)
			}
			if after.GetLabels()["updated-through"] != "v1" {
				t.Errorf("labels after updates: %v", after.GetLabels())
			}
			// patch through each version.
			for i, v := range versions {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"patched-%d":%q}}}`, i, v)
				if _, err := dyn.Resource(evolving.gvr(v)).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatalf("merge patch through %s: %v", v, err)
				}
			}
			after, err = dyn.Resource(evolving.gvr(created)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(specOf(obj), specOf(after)); diff != "" {
				t.Errorf("spec changed by patches (-created +now):\n%s", diff)
			}
		})
	}
	// list and watch through every version.
	for _, v := range versions {
		list, err := dyn.Resource(evolving.gvr(v)).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list through %s: %v", v, err)
		}
		if len(list.Items) < len(versions) {
			t.Errorf("list through %s: %d items", v, len(list.Items))
		}
		for _, it := range list.Items {
			if it.GetAPIVersion() != evolving.group+"/"+v {
				t.Errorf("list through %s: %s is %s", v, it.GetName(), it.GetAPIVersion())
			}
		}
	}
	for _, v := range versions {
		t.Run("watch-through-"+v, func(t *testing.T) {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			w, err := dyn.Resource(evolving.gvr(v)).Namespace(ns).Watch(wctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			obj := fixture(t, versions[0], "watched-"+v)
			if _, err := dyn.Resource(evolving.gvr(versions[0])).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type != watch.Added || u.GetName() != "watched-"+v {
					continue
				}
				if u.GetAPIVersion() != evolving.group+"/"+v {
					t.Errorf("watch through %s delivered %s", v, u.GetAPIVersion())
				}
				if diff := cmp.Diff(expectSpec(t, obj, v), specOf(u)); diff != "" {
					t.Errorf("watched object (-engine +apiserver):\n%s", diff)
				}
				return
			}
			t.Fatal("watch ended without the ADDED event")
		})
	}
}

// TestHubOnlyFieldsSurviveReadModifyWrite: an object written through v1 with
// hub-only fields keeps them across a read-modify-write through v1alpha1.
func TestHubOnlyFieldsSurviveReadModifyWrite(t *testing.T) {
	hubspokeWebhook(t)
	ctx := context.Background()
	obj := fixture(t, "v1", "hub-only")
	if _, err := dyn.Resource(evolving.gvr("v1")).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, err := dyn.Resource(evolving.gvr("v1alpha1")).Namespace(ns).Get(ctx, "hub-only", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(old.Object, "spec", "paused"); found {
		t.Fatalf("v1alpha1 shows hub-only spec.paused: %v", old.Object["spec"])
	}
	if !strings.Contains(old.GetAnnotations()[convert.PreservedAnnotation], "/spec/paused") {
		t.Fatalf("v1alpha1 object lacks the preserved annotation: %v", old.GetAnnotations())
	}
	if err := unstructured.SetNestedField(old.Object, int64(7), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(evolving.gvr("v1alpha1")).Namespace(ns).Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update through v1alpha1: %v", err)
	}
	got, err := dyn.Resource(evolving.gvr("v1")).Namespace(ns).Get(ctx, "hub-only", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := specOf(obj)
	want["size"] = float64(7)
	if diff := cmp.Diff(want, specOf(got)); diff != "" {
		t.Errorf("hub-only fields lost through v1alpha1 (-want +got):\n%s", diff)
	}
	if _, ok := got.GetAnnotations()[convert.PreservedAnnotation]; ok {
		t.Errorf("preserved annotation left on the hub object: %v", got.GetAnnotations())
	}
}

// TestThousandObjectLists: 1,000 Widgets listed through both versions.
func TestThousandObjectLists(t *testing.T) {
	hubspokeWebhook(t)
	ctx := context.Background()
	createWidgets(t, realWidgets, 1000)
	for _, v := range []string{"v1alpha1", "v1"} {
		list, err := dyn.Resource(realWidgets.gvr(v)).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list through %s: %v", v, err)
		}
		if len(list.Items) != 1000 {
			t.Fatalf("list through %s: %d items, want 1000", v, len(list.Items))
		}
		field := map[string]string{"v1alpha1": "replicas", "v1": "size"}[v]
		for _, it := range list.Items {
			var i int64
			fmt.Sscanf(it.GetName(), "w-%d", &i)
			n, found, _ := unstructured.NestedInt64(it.Object, "spec", field)
			if !found || n != i%100 || it.GetAPIVersion() != realWidgets.group+"/"+v {
				t.Fatalf("list through %s: %s is %s with spec.%s=%d (found %v)", v, it.GetName(), it.GetAPIVersion(), field, n, found)
			}
		}
	}
}

var created sync.Map // crdVersions -> count already created

// createWidgets creates n Widgets w-0000... through v1alpha1, once per group.
func createWidgets(t testing.TB, c crdVersions, n int) {
	t.Helper()
	if _, done := created.Load(c); done {
		return
	}
	ctx := context.Background()
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			w := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": c.group + "/v1alpha1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprintf("w-%04d", i), "namespace": ns},
				"spec":     map[string]any{"replicas": int64(i % 100)},
			}}
			_, err := dyn.Resource(c.gvr("v1alpha1")).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	created.Store(c, n)
}

// TestFailuresCarryHubspokesMessage: the error a client receives when a
// conversion fails names the object, the field and the rule.
func TestFailuresCarryHubspokesMessage(t *testing.T) {
	hubspokeWebhook(t)
	ctx := context.Background()
	obj := fixture(t, "v1alpha1", "dup")
	if err := unstructured.SetNestedSlice(obj.Object, []any{
		map[string]any{"name": "web", "port": int64(80)},
		map[string]any{"name": "web", "port": int64(81)},
	}, "spec", "endpoints"); err != nil {
		t.Fatal(err)
	}
	_, err := dyn.Resource(evolving.gvr("v1alpha1")).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("created an object whose endpoints cannot become a map")
	}
	for _, want := range []string{`duplicate key name="web" (also at index 0)`, "/spec/endpoints/1", "e2e/dup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("client error %q does not carry %q", err, want)
		}
	}
}

// TestWebhookDownAndWrongCABundle: the failures users meet when the webhook
// is unreachable or its CA is wrong.
func TestWebhookDownAndWrongCABundle(t *testing.T) {
	hubspokeWebhook(t)
	t.Parallel() // its own groups and Service
	ctx := context.Background()
	base, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, group string
		setup       func(*apiextensionsv1.CustomResourceDefinition)
		want        []string
	}{
		{"webhook down", "down.example.com", func(crd *apiextensionsv1.CustomResourceDefinition) {
			// A hubspoke webhook that served once and is now down.
			down, err := sb.ServeWebhook(hsNamespace, "down", hsH)
			if err != nil {
				t.Fatal(err)
			}
			if err := down.Close(); err != nil {
				t.Fatal(err)
			}
			crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "down"
			crd.Spec.Conversion.Webhook.ClientConfig.CABundle = down.CABundle()
		}, []string{"conversion webhook", "down.hubspoke-system.svc"}},
		{"wrong caBundle", "wrongca.example.com", func(crd *apiextensionsv1.CustomResourceDefinition) {
			// By URL, so no injector corrects it: a CA that did not sign the
			// webhook's certificate.
			other, err := sandbox.NewServiceCert("x", "y")
			if err != nil {
				t.Fatal(err)
			}
			url := "https://" + hsHook.Addr() + "/convert"
			crd.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: other.CA}
		}, []string{"conversion webhook", "x509"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := rename(base, tt.group)
			tt.setup(crd)
			// Storage v1alpha1, so creating through v1alpha1 needs no webhook
			// and reading through v1 does.
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1alpha1"
			}
			if _, err := sb.InstallCRD(ctx, crd); err != nil {
				t.Fatal(err)
			}
			c := crdVersions{group: tt.group, resource: "widgets"}
			w := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": tt.group + "/v1alpha1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": ns},
				"spec":     map[string]any{"replicas": int64(1)},
			}}
			if _, err := dyn.Resource(c.gvr("v1alpha1")).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := dyn.Resource(c.gvr("v1")).Namespace(ns).Get(ctx, "w", metav1.GetOptions{})
			if err == nil {
				t.Fatal("read through v1 succeeded without a reachable, trusted webhook")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// BenchmarkList1000 measures a 1,000-object LIST through the hubspoke webhook
// (stored as v1, listed through v1alpha1) against the same LIST of an identical CRD with strategy None.
func BenchmarkList1000(b *testing.B) {
	hubspokeWebhook(b)
	createWidgets(b, realWidgets, 1000)
	createWidgets(b, noneWidgets, 1000)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		gvr  schema.GroupVersionResource
	}{
		{"strategy=None", noneWidgets.gvr("v1alpha1")},
		{"strategy=Webhook", realWidgets.gvr("v1alpha1")},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				list, err := dyn.Resource(c.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil || len(list.Items) != 1000 {
					b.Fatalf("list: %d items, %v", len(list.Items), err)
				}
			}
		})
	}
}
