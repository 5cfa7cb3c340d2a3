package sandboxcmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/examples"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
	hschema "github.com/hubspoke/hubspoke/schema"
)

// NewDemoCmd returns `hubspoke demo`: the life of the Widget example on an
// local kube-apiserver (package sandbox) with the webhook in-process.
func NewDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Walk a multi-version CRD's life on a local kube-apiserver, checking every step",
		Long: `demo starts an API server and the hubspoke webhook in this process and walks
the lifecycle of the Widget example (examples/widget) in seven steps:

  [1/7] CRD widgets.example.com with v1alpha1 only (served, storage); objects created through v1alpha1
  [2/7] v1 added: served, not storage, conversion by the hubspoke webhook; every object read through both versions
  [3/7] storage switched to v1
  [4/7] final verification: writes and reads across versions, LIST through both
  [5/7] backup, then migrate every object to v1 and prune storedVersions
  [6/7] v1alpha1 no longer served
  [7/7] rollback: plan rollback --to v1alpha1, executed step by step, checked against the backup

Each step prints what it checked; the command exits non-zero if any check
fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), demoOptions{progress: cmd.ErrOrStderr()})
		},
	}
}

// demo holds the running parts and the tally of checks.
type demo struct {
	out    io.Writer
	sb     *sandbox.Sandbox
	crds   apiextensionsclient.Interface
	dyn    dynamic.Interface
	crd    *apiextensionsv1.CustomResourceDefinition // the example, as written
	checks int
	backup []byte // taken before the migration, checked after the rollback
	// webhookAddr is the loopback address of the in-process webhook.
	webhookAddr string
}

type apiextensionsCRD = apiextensionsv1.CustomResourceDefinition

const (
	demoNamespace = "demo"
	widgetCRD     = "widgets.example.com"
)

var (
	v1alpha1 = schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}
	v1       = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

type demoFailure struct{ msg string }

func (e demoFailure) Error() string { return e.msg }

// demoOptions are what a test changes in the demo.
type demoOptions struct {
	// progress receives the progress of a build of the sandbox's
	// binaries (sandbox.Options.Progress).
	progress io.Writer
	// startTimeout bounds the start of etcd and kube-apiserver, never
	// the build of their binaries; zero means two minutes.
	startTimeout time.Duration
}

func runDemo(ctx context.Context, out io.Writer, o demoOptions) (err error) {
	start := time.Now()
	fmt.Fprintln(out, "hubspoke demo: the life of a multi-version CRD, on a local kube-apiserver")
	d := &demo{out: out}
	crdYAML, err := examples.FS.ReadFile("widget/crd.yaml")
	if err != nil {
		return err
	}
	crd, err := hschema.Load("examples/widget/crd.yaml", crdYAML)
	if err != nil {
		return err
	}
	d.crd = crd.Object
	rulesYAML, err := examples.FS.ReadFile("widget/conversion.yaml")
	if err != nil {
		return err
	}
	conv, err := rules.Load("examples/widget/conversion.yaml", rulesYAML)
	if err != nil {
		return err
	}
	handler, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		return err
	}
	if o.startTimeout == 0 {
		o.startTimeout = 2 * time.Minute
	}
	// No deadline on ctx here: the first run builds the binaries, which
	// takes minutes; StartTimeout bounds the start alone.
	if d.sb, err = sandbox.New(ctx, sandbox.Options{Progress: o.progress, StartTimeout: o.startTimeout}); err != nil {
		return err
	}
	defer func() {
		if serr := d.sb.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	svc := d.crd.Spec.Conversion.Webhook.ClientConfig.Service
	wh, err := d.sb.ServeWebhook(svc.Namespace, svc.Name, handler)
	if err != nil {
		return err
	}
	d.webhookAddr = wh.Addr()
	fmt.Fprintf(out, "      kube-apiserver %s at %s; webhook behind Service %s/%s at pod %s (TLS, generated CA)\n",
		sandbox.KubernetesVersion, d.sb.URL(), svc.Namespace, svc.Name, wh.Endpoint().IP())
	nsCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	if err := d.sb.EnsureNamespace(nsCtx, demoNamespace); err != nil {
		return err
	}
	if d.crds, err = apiextensionsclient.NewForConfig(d.sb.RESTConfig()); err != nil {
		return err
	}
	if d.dyn, err = dynamic.NewForConfig(d.sb.RESTConfig()); err != nil {
		return err
	}
	steps := []struct {
		title string
		run   func(context.Context) error
	}{
		{"CRD " + widgetCRD + " with v1alpha1 only (served, storage); objects created through v1alpha1", d.stepV1alpha1Only},
		{"v1 added: served, not storage, conversion by the hubspoke webhook; every object read through both versions", d.stepAddV1},
		{"storage switched to v1", d.stepSwitchStorage},
		{"final verification: writes and reads across versions, LIST through both", d.stepVerify},
	}
	steps = append(steps, d.extraSteps()...)
	for i, s := range steps {
		fmt.Fprintf(out, "[%d/%d] %s\n", i+1, len(steps), s.title)
		stepCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
		err := s.run(stepCtx)
		cancel()
		if err != nil {
			fmt.Fprintf(out, "      ✗ %v\n", err)
			fmt.Fprintf(out, "demo FAILED at step %d after %d checks (%s)\n", i+1, d.checks, time.Since(start).Round(100*time.Millisecond))
			return exitCode1{}
		}
	}
	fmt.Fprintf(out, "demo passed: %d checks in %s\n", d.checks, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// exitCode1 makes the command exit 1 after the demo printed its own report.
type exitCode1 struct{}

func (exitCode1) Error() string { return "the demo failed (see above)" }

// ok prints a passed check.
func (d *demo) ok(format string, args ...any) {
	d.checks++
	fmt.Fprintf(d.out, "      ✓ "+format+"\n", args...)
}

func (d *demo) fail(format string, args ...any) error {
	return demoFailure{fmt.Sprintf(format, args...)}
}

func (d *demo) stepV1alpha1Only(ctx context.Context) error {
	crd := d.crd.DeepCopy()
	var v1alpha1Version apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" {
			v1alpha1Version = v
		}
	}
	v1alpha1Version.Served, v1alpha1Version.Storage = true, true
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v1alpha1Version}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	if _, err := d.sb.InstallCRD(ctx, crd); err != nil {
		return err
	}
	d.ok("CRD established, serving v1alpha1")
	for i, name := range []string{"alpha", "beta", "gamma"} {
		w := widget("v1alpha1", name, map[string]any{"replicas": int64(i + 1)})
		if _, err := d.dyn.Resource(v1alpha1).Namespace(demoNamespace).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s through v1alpha1: %w", name, err)
		}
	}
	d.ok("created alpha, beta, gamma through v1alpha1 (replicas 1, 2, 3)")
	return d.expectStoredVersions(ctx, "v1alpha1")
}

func (d *demo) stepAddV1(ctx context.Context) error {
	if err := d.updateCRD(ctx, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = versionsWithStorage(d.crd.Spec.Versions, "v1alpha1")
		crd.Spec.Conversion = d.crd.Spec.Conversion.DeepCopy()
	}); err != nil {
		return err
	}
	d.ok("CRD updated: versions v1alpha1 (storage) and v1, conversion strategy Webhook")
	if err := d.waitCABundle(ctx); err != nil {
		return err
	}
	d.ok("caBundle injected into the CRD's webhook clientConfig, as cert-manager's cainjector would")
	for i, name := range []string{"alpha", "beta", "gamma"} {
		if err := d.expectField(ctx, v1, name, "size", int64(i+1)); err != nil {
			return err
		}
		if err := d.expectField(ctx, v1alpha1, name, "replicas", int64(i+1)); err != nil {
			return err
		}
	}
	d.ok("alpha, beta, gamma read through v1 (spec.size 1, 2, 3) and v1alpha1 (spec.replicas 1, 2, 3)")
	return nil
}

func (d *demo) stepSwitchStorage(ctx context.Context) error {
	if err := d.updateCRD(ctx, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = versionsWithStorage(d.crd.Spec.Versions, "v1")
	}); err != nil {
		return err
	}
	d.ok("CRD updated: v1 is the storage version")
	// Switching storage rewrites nothing: both versions are now stored.
	return d.expectStoredVersions(ctx, "v1alpha1", "v1")
}

func (d *demo) stepVerify(ctx context.Context) error {
	w := widget("v1alpha1", "delta", map[string]any{"replicas": int64(3)})
	if _, err := d.dyn.Resource(v1alpha1).Namespace(demoNamespace).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create delta through v1alpha1: %w", err)
	}
	if err := d.expectField(ctx, v1, "delta", "size", 3); err != nil {
		return err
	}
	d.ok("created delta through v1alpha1 (replicas: 3), read through v1: size 3")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := d.dyn.Resource(v1).Namespace(demoNamespace).Get(ctx, "delta", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(got.Object, int64(5), "spec", "size"); err != nil {
			return err
		}
		_, err = d.dyn.Resource(v1).Namespace(demoNamespace).Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update delta through v1: %w", err)
	}
	if err := d.expectField(ctx, v1alpha1, "delta", "replicas", 5); err != nil {
		return err
	}
	d.ok("updated delta through v1 (size: 5), read through v1alpha1: replicas 5")
	want := map[string]int64{"alpha": 1, "beta": 2, "gamma": 3, "delta": 5}
	for _, l := range []struct {
		gvr   schema.GroupVersionResource
		field string
	}{{v1alpha1, "replicas"}, {v1, "size"}} {
		list, err := d.dyn.Resource(l.gvr).Namespace(demoNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list through %s: %w", l.gvr.Version, err)
		}
		got := map[string]int64{}
		for _, it := range list.Items {
			if it.GetAPIVersion() != "example.com/"+l.gvr.Version {
				return d.fail("list through %s returned %s as %s", l.gvr.Version, it.GetName(), it.GetAPIVersion())
			}
			n, _, _ := unstructured.NestedInt64(it.Object, "spec", l.field)
			got[it.GetName()] = n
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return d.fail("list through %s: spec.%s = %v, want %v", l.gvr.Version, l.field, got, want)
		}
		d.ok("LIST through %s: %d widgets, spec.%s %v", l.gvr.Version, len(list.Items), l.field, got)
	}
	return nil
}

// widget builds an unstructured Widget.
func widget(version, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/" + version,
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": demoNamespace},
		"spec":       spec,
	}}
}

// versionsWithStorage returns the example's versions, all served, with
// storage set on the named one.
func versionsWithStorage(versions []apiextensionsv1.CustomResourceDefinitionVersion, storage string) []apiextensionsv1.CustomResourceDefinitionVersion {
	out := make([]apiextensionsv1.CustomResourceDefinitionVersion, len(versions))
	for i, v := range versions {
		v = *v.DeepCopy()
		v.Served = true
		v.Storage = v.Name == storage
		out[i] = v
	}
	return out
}

func (d *demo) updateCRD(ctx context.Context, mutate func(*apiextensionsv1.CustomResourceDefinition)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := d.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, widgetCRD, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(crd)
		_, err = d.crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
		return err
	})
}

func (d *demo) waitCABundle(ctx context.Context) error {
	for {
		crd, err := d.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, widgetCRD, metav1.GetOptions{})
		if err == nil && crd.Spec.Conversion != nil && crd.Spec.Conversion.Webhook != nil &&
			crd.Spec.Conversion.Webhook.ClientConfig != nil && len(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("caBundle was not injected: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *demo) expectStoredVersions(ctx context.Context, want ...string) error {
	var got []string
	for {
		crd, err := d.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, widgetCRD, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = crd.Status.StoredVersions
		if slices.Equal(got, want) {
			d.ok("status.storedVersions = [%s]", strings.Join(got, ", "))
			return nil
		}
		select {
		case <-ctx.Done():
			return d.fail("status.storedVersions = %v, want %v", got, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// expectField reads name through gvr until spec.field == want: right after
// a CRD update the new version may take a moment to be served.
func (d *demo) expectField(ctx context.Context, gvr schema.GroupVersionResource, name, field string, want int64) error {
	var lastErr error
	for {
		got, err := d.dyn.Resource(gvr).Namespace(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			n, found, _ := unstructured.NestedInt64(got.Object, "spec", field)
			if got.GetAPIVersion() != "example.com/"+gvr.Version {
				return d.fail("%s read through %s came back as %s", name, gvr.Version, got.GetAPIVersion())
			}
			if found && n == want {
				return nil
			}
			return d.fail("%s read through %s: spec.%s = %v (found %v), want %d", name, gvr.Version, field, n, found, want)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("read %s through %s: %w", name, gvr.Version, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
