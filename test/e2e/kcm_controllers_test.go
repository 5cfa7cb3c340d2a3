package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/internal/cli"
)

// ownedWidget is a Widget of group at version in namespace, with ownerRefs.
func ownedWidget(group, version, namespace, name string, owners ...map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"size": int64(1)}
	if version == "v1alpha1" {
		spec = map[string]any{"replicas": int64(1)}
	}
	md := map[string]any{"name": name, "namespace": namespace}
	if len(owners) > 0 {
		refs := make([]any, len(owners))
		for i, o := range owners {
			refs[i] = o
		}
		md["ownerReferences"] = refs
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + version, "kind": "Widget", "metadata": md, "spec": spec}}
}

func ownerRef(apiVersion, kind string, owner *unstructured.Unstructured) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": owner.GetName(), "uid": string(owner.GetUID())}
}

// TestGarbageCollectionAcrossVersions: the garbage collector deletes custom
// resources whose owner is gone, whichever version they are stored in and
// whichever version their ownerReferences and their owner's name: it reads
// them through the preferred version, the webhook converting those stored
// in another.
func TestGarbageCollectionAcrossVersions(t *testing.T) {
	s, d := kcmSerialTest(t)
	faults := faultsOf(t, "gc")
	ctx := context.Background()
	group := migGroup("gc")
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: v, Resource: "widgets"}
	}
	w := func(v string) interface {
		Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
		Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
		Delete(context.Context, string, metav1.DeleteOptions, ...string) error
	} {
		return d.Resource(gvr(v)).Namespace(migNamespace)
	}
	cms := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(migNamespace)
	t.Cleanup(func() {
		if err := s.DeleteCRD(context.Background(), "widgets."+group); err != nil {
			t.Error(err)
		}
	})
	mustCreate := func(c interface {
		Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	}, obj *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		out, err := c.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// Stored in v1alpha1 (the storage version then): a parent Widget and
	// a Widget owned by a ConfigMap.
	parent := mustCreate(w("v1alpha1"), ownedWidget(group, "v1alpha1", migNamespace, "parent"))
	cm := mustCreate(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "owner"}}})
	mustCreate(w("v1alpha1"), ownedWidget(group, "v1alpha1", migNamespace, "old-of-cm", ownerRef("v1", "ConfigMap", cm)))
	if _, err := s.InstallCRD(ctx, migCRD(t, "gc", "v1")); err != nil {
		t.Fatal(err)
	}
	// Stored in v1: children of the parent, naming it at either version,
	// a ConfigMap owned by it, and another Widget of the ConfigMap.
	mustCreate(w("v1alpha1"), ownedWidget(group, "v1alpha1", migNamespace, "child-a", ownerRef(group+"/v1alpha1", "Widget", parent)))
	mustCreate(w("v1"), ownedWidget(group, "v1", migNamespace, "child-b", ownerRef(group+"/v1", "Widget", parent)))
	mustCreate(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "child-cm", "ownerReferences": []any{ownerRef(group+"/v1alpha1", "Widget", parent)}}}})
	mustCreate(w("v1"), ownedWidget(group, "v1", migNamespace, "new-of-cm", ownerRef("v1", "ConfigMap", cm)))
	waitGarbageCollector(t, d, gvr("v1"), migNamespace)

	gone := func(what string, get func() error) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			err := get()
			if apierrors.IsNotFound(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s still there a minute after its owner was deleted (%v)", what, err)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	getW := func(name string) func() error {
		return func() error { _, err := w("v1").Get(ctx, name, metav1.GetOptions{}); return err }
	}
	// The ConfigMap goes: its Widgets of both storage versions follow.
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("old-of-cm (stored in v1alpha1)", getW("old-of-cm"))
	gone("new-of-cm (stored in v1)", getW("new-of-cm"))
	// The parent goes in the foreground: its children first, whatever
	// version their reference names, then the parent itself.
	fg := metav1.DeletePropagationForeground
	if err := w("v1").Delete(ctx, "parent", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	gone("child-a (its owner named at v1alpha1)", getW("child-a"))
	gone("child-b (its owner named at v1)", getW("child-b"))
	gone("child-cm (a ConfigMap owned by a Widget)", func() error { _, err := cms.Get(ctx, "child-cm", metav1.GetOptions{}); return err })
	gone("parent (deleted in the foreground)", getW("parent"))

	// With the webhook down, the garbage collector still lists the
	// Widgets (the API server's watch cache converted them as they came
	// in), but it cannot delete one stored in another version than the
	// one it reads them at: the deletion decodes the object from etcd,
	// through the webhook. The one stored in v1 goes, the other waits for
	// the webhook.
	if _, err := s.InstallCRD(ctx, migCRD(t, "gc", "v1alpha1")); err != nil {
		t.Fatal(err)
	}
	cm = mustCreate(cms, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "owner2"}}})
	mustCreate(w("v1alpha1"), ownedWidget(group, "v1alpha1", migNamespace, "stored-v1alpha1", ownerRef("v1", "ConfigMap", cm)))
	if _, err := s.InstallCRD(ctx, migCRD(t, "gc", "v1")); err != nil {
		t.Fatal(err)
	}
	mustCreate(w("v1"), ownedWidget(group, "v1", migNamespace, "stored-v1", ownerRef("v1", "ConfigMap", cm)))
	time.Sleep(2 * time.Second) // the garbage collector's graph has them
	faults.set(nil, group+"/v1")
	defer faults.set(nil, "")
	if err := cms.Delete(ctx, "owner2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("stored-v1 (no conversion needed)", getW2(w("v1alpha1"), ctx, "stored-v1"))
	time.Sleep(5 * time.Second)
	if _, err := w("v1alpha1").Get(ctx, "stored-v1alpha1", metav1.GetOptions{}); err != nil {
		t.Errorf("stored-v1alpha1 with the webhook down: %v, want it still there (its deletion needs the webhook)", err)
	}
	faults.set(nil, "")
	gone("stored-v1alpha1 once the webhook is back", getW2(w("v1alpha1"), ctx, "stored-v1alpha1"))
}

func getW2(c interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}, ctx context.Context, name string) func() error {
	return func() error { _, err := c.Get(ctx, name, metav1.GetOptions{}); return err }
}

// TestNamespaceDeletionWebhookDown: a namespace holding custom resources
// whose conversion webhook fails cannot be emptied: it stays Terminating,
// and its conditions say why; hubspoke doctor names the CRD, its cause,
// and the namespace among what breaks while it is down; with the webhook
// back the namespace goes.
func TestNamespaceDeletionWebhookDown(t *testing.T) {
	s, d := kcmSerialTest(t)
	faults := faultsOf(t, "nsdel")
	ctx := context.Background()
	const doomed = "doomed"
	group := migGroup("nsdel")
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: v, Resource: "widgets"}
	}
	t.Cleanup(func() {
		faults.set(nil, "")
		if err := s.DeleteCRD(context.Background(), "widgets."+group); err != nil {
			t.Error(err)
		}
	})
	// Stored in v1alpha1; the storage and preferred version is then v1.
	for i := range 3 {
		if _, err := d.Resource(gvr("v1alpha1")).Namespace(doomed).Create(ctx, ownedWidget(group, "v1alpha1", doomed, fmt.Sprintf("w-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.InstallCRD(ctx, migCRD(t, "nsdel", "v1")); err != nil {
		t.Fatal(err)
	}

	// Two more in another namespace, counted by a quota.
	for i := range 2 {
		if _, err := d.Resource(gvr("v1")).Namespace(migNamespace).Create(ctx, ownedWidget(group, "v1", migNamespace, fmt.Sprintf("q-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The webhook fails every conversion of the group.
	faults.set(nil, group+"/v1")
	defer faults.set(nil, "")

	// A quota created now is counted all the same: its controller lists
	// the Widgets, which the watch cache converted as they came in.
	count := corev1.ResourceName("count/widgets." + group)
	quotas := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}).Namespace(migNamespace)
	if _, err := quotas.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"name": "widgets-nsdel"}, "spec": map[string]any{"hard": map[string]any{string(count): "10"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = quotas.Delete(context.Background(), "widgets-nsdel", metav1.DeleteOptions{}) })
	var quota corev1.ResourceQuota
	for deadline := time.Now().Add(time.Minute); ; {
		u, err := quotas.Get(ctx, "widgets-nsdel", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &quota); err != nil {
			t.Fatal(err)
		}
		if _, ok := quota.Status.Used[count]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("quota with the webhook down: no usage after a minute: %+v", quota.Status)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if used := quota.Status.Used[count]; used.Value() != 2 {
		t.Errorf("quota usage %v with the webhook down, want 2 (%+v)", used.String(), quota.Status)
	}
	ns := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	out, err := exec.Command("kubectl", "--kubeconfig", s.KubeconfigPath(), "delete", "namespace", doomed, "--timeout=10s").CombinedOutput()
	t.Logf("kubectl delete namespace %s: %v\n%s", doomed, err, out)
	var terminating corev1.Namespace
	deadline := time.Now().Add(2 * time.Minute)
	for {
		u, err := ns.Get(ctx, doomed, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace %s: %v, want it Terminating", doomed, err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &terminating); err != nil {
			t.Fatal(err)
		}
		if namespaceReports(&terminating, group) != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s: %+v, want a condition naming %s", doomed, terminating.Status, group)
		}
		time.Sleep(500 * time.Millisecond)
	}
	c := namespaceReports(&terminating, group)
	t.Logf("namespace %s is %s: %s=%s (%s): %s", doomed, terminating.Status.Phase, c.Type, c.Status, c.Reason, c.Message)
	if terminating.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("namespace %s: phase %s, want Terminating", doomed, terminating.Status.Phase)
	}
	kubectl, _ := exec.Command("kubectl", "--kubeconfig", s.KubeconfigPath(), "get", "namespace", doomed).CombinedOutput()
	t.Logf("kubectl get namespace %s:\n%s", doomed, kubectl)

	// hubspoke doctor --all: the CRD broken, and the namespace among what
	// breaks while it is down, observed.
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, []string{"doctor", "--all", "--kubeconfig", s.KubeconfigPath(), "--dial-timeout", "1s", "--timeout", "20s",
		"--pod-network-proxy", s.PodNetworkProxy(), "-o", "json"}, strings.NewReader(""), &stdout, &stderr)
	var all doctor.AllReport
	if err := json.Unmarshal(stdout.Bytes(), &all); err != nil {
		t.Fatalf("doctor: exit %d, %v\n%s%s", code, err, stdout.String(), stderr.String())
	}
	var sum *doctor.Summary
	for i := range all.CRDs {
		if all.CRDs[i].CRD == "widgets."+group {
			sum = &all.CRDs[i]
		}
	}
	if code != 1 || sum == nil || sum.Healthy || sum.Cause == nil {
		t.Fatalf("doctor --all: exit %d, %+v; want the CRD broken\n%s", code, sum, stderr.String())
	}
	impact := strings.Join(sum.Impact, "\n")
	t.Logf("cause: %s: %s\nwhile it is down:\n%s", sum.Cause.Check, sum.Cause.Message, impact)
	for _, want := range []string{
		"namespace " + doomed + " is Terminating and its deletion reports " + string(c.Type) + ": " + c.Message + " (observed)",
		"namespaces holding widgets stay Terminating",
	} {
		if !strings.Contains(impact, want) {
			t.Errorf("doctor's impact lacks %q", want)
		}
	}

	// The webhook back, the namespace goes.
	faults.set(nil, "")
	deadline = time.Now().Add(2 * time.Minute)
	for {
		_, err := ns.Get(ctx, doomed, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s still there 2 minutes after the webhook came back (%v)", doomed, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// namespaceReports returns the namespace's True condition whose message
// names group, or nil.
func namespaceReports(ns *corev1.Namespace, group string) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		c := &ns.Status.Conditions[i]
		if c.Status == corev1.ConditionTrue && strings.Contains(c.Message, group) {
			return c
		}
	}
	return nil
}
