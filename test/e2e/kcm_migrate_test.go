package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/migrate"
)

// TestMigrateClusterEngineCLI runs `hubspoke migrate` as a user would on a
// cluster whose kube-controller-manager runs the storage version migrator:
// auto picks the cluster engine, the backup is written first, the cluster
// rewrites every object and prunes storedVersions, and the managedFields
// entries of the version no longer served are removed, so that
// server-side apply works.
func TestMigrateClusterEngineCLI(t *testing.T) {
	s, d := kcmSerialTest(t)
	ctx := context.Background()
	const objects = 100
	e := migSetupOn(t, s, d, "cluster-cli", objects, "v1alpha1")
	waitGarbageCollector(t, d, e.gr("v1"), migNamespace)
	before := e.contents("v1")
	unserved := migCRD(t, "cluster-cli", "v1")
	unserved.Spec.Versions[0].Served = false
	if _, err := s.InstallCRD(ctx, unserved); err != nil {
		t.Fatal(err)
	}

	backup := filepath.Join(t.TempDir(), "before.jsonl")
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, []string{"migrate", e.name, "--kubeconfig", s.KubeconfigPath(), "--backup", backup, "--checkpoint", "-",
		"--progress", "lines", "-o", "json"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Engine    string           `json:"engine"`
		Migration string           `json:"storageVersionMigration"`
		Notes     []string         `json:"notes"`
		Objects   migrate.Progress `json:"objects"`
		Pruned    bool             `json:"pruned"`
		Stored    []string         `json:"storedVersions"`
		Backup    struct{ Objects int }
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	t.Logf("report: %s\nstderr: %s", stdout.String(), stderr.String())
	if rep.Engine != "cluster" || rep.Migration == "" || !rep.Pruned || !slices.Equal(rep.Stored, []string{"v1"}) {
		t.Errorf("engine %q migration %q pruned %v storedVersions %v; want the cluster's, pruned to [v1]", rep.Engine, rep.Migration, rep.Pruned, rep.Stored)
	}
	if rep.Objects.Done != objects || rep.Objects.Rewritten != objects || rep.Objects.ManagedFieldsCleaned != objects || rep.Backup.Objects != objects {
		t.Errorf("objects %+v, backup of %d; want %d rewritten, cleaned and backed up", rep.Objects, rep.Backup.Objects, objects)
	}
	if !strings.Contains(stderr.String(), `progress op="migrate `+e.name+`"`) {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	f, err := os.Open(backup)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := migrate.ReadBackup(f); err != nil || len(b.Objects) != objects || b.Header.Version != "v1" {
		t.Errorf("backup: %v, want %d objects at v1", err, objects)
	}
	svm := getSVM(t, d, rep.Migration)
	if !meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)) {
		t.Errorf("migration %s: %+v, want Succeeded", rep.Migration, svm.Status.Conditions)
	}
	crd, err := migrate.GetCRD(ctx, d, e.name)
	if err != nil {
		t.Fatal(err)
	}
	if c := crdCondition(crd, migrate.StorageMigrating); c == nil || c.Status != apiextensionsv1.ConditionFalse || c.Reason != "MigrationSucceeded" {
		t.Errorf("StorageMigrating %+v, want False, MigrationSucceeded", c)
	}

	// No entry of v1alpha1 is left, and server-side apply works.
	list, err := e.client("v1").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		for _, mf := range it.GetManagedFields() {
			if strings.HasSuffix(mf.APIVersion, "/v1alpha1") {
				t.Errorf("%s: managedFields entry of %s at %s left", it.GetName(), mf.Manager, mf.APIVersion)
			}
		}
	}
	apply := &unstructured.Unstructured{Object: map[string]any{"apiVersion": e.crd.Spec.Group + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w-00007", "namespace": migNamespace}, "spec": map[string]any{"size": int64(7)}}}
	if _, err := e.client("v1").Apply(ctx, "w-00007", apply, metav1.ApplyOptions{FieldManager: "e2e-apply", Force: true}); err != nil {
		t.Errorf("server-side apply after the migration: %v", err)
	}
	assertSameContents(t, before, e.contents("v1"))
	// Served again, every object reads at v1 with conversions to v1
	// failing: each is stored at v1.
	if _, err := s.InstallCRD(ctx, e.crd); err != nil {
		t.Fatal(err)
	}
	e.assertAllStoredAt("v1")
}

// TestMigrateClusterEngineWebhookBreaks: the webhook breaks in the middle
// of a cluster migration. The cluster's migrator retries for ever; hubspoke
// stops it after ClusterStuck with a *StuckError naming an object that
// fails and the webhook's error, the migration is marked Failed and the
// migrator sets the CRD's StorageMigrating to False, nothing is pruned,
// nothing is lost; with the webhook fixed, the same call completes.
func TestMigrateClusterEngineWebhookBreaks(t *testing.T) {
	s, d := kcmSerialTest(t)
	ctx := context.Background()
	e := migSetupOn(t, s, d, "cluster-stuck", 150, "v1alpha1")
	waitGarbageCollector(t, d, e.gr("v1"), migNamespace)
	before := e.contents("v1alpha1")

	// The webhook holds w-00075's conversion; once the migrator waits on
	// it, every conversion to v1 starts failing, w-00075's too.
	reached, release := e.faults.holdOn("w-00075")
	go func() {
		select {
		case <-reached:
			e.faults.set(nil, e.crd.Spec.Group+"/v1")
			release()
		case <-time.After(2 * time.Minute):
			release()
		}
	}()
	defer release()
	opts := e.options()
	opts.Engine, opts.ClusterStuck = migrate.EngineCluster, 5*time.Second
	start := time.Now()
	res, err := migrate.Migrate(ctx, opts)
	t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
	var se *migrate.StuckError
	var oe *migrate.ObjectError
	if !errors.As(err, &se) || !errors.As(err, &oe) || oe.Namespace != migNamespace || !strings.Contains(oe.Error(), "injected failure converting "+oe.Name+" to "+e.crd.Spec.Group+"/v1") {
		t.Fatalf("Migrate: %v; want a *StuckError naming an object and the webhook's error", err)
	}
	// Kubernetes 1.37's migrator prunes storedVersions at the end of a
	// migration that failed too: hubspoke puts the versions back.
	if se.Restored == nil || !slices.Equal(se.Restored.Restored, []string{"v1alpha1", "v1"}) {
		t.Errorf("restored %+v, want storedVersions put back to [v1alpha1 v1]", se.Restored)
	}
	svm := getSVM(t, d, res.Migration)
	if c := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed)); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "StoppedByHubspoke" {
		t.Errorf("migration %s: %+v, want Failed by hubspoke", res.Migration, svm.Status.Conditions)
	}
	// The migrator takes the Failed migration as ended.
	deadline := time.Now().Add(time.Minute)
	for {
		crd, err := migrate.GetCRD(ctx, d, e.name)
		if err != nil {
			t.Fatal(err)
		}
		c := crdCondition(crd, migrate.StorageMigrating)
		if c != nil && c.Status == apiextensionsv1.ConditionFalse {
			if c.Reason != "MigrationFailed" || len(crd.Status.StoredVersions) != 2 {
				t.Errorf("StorageMigrating %+v, storedVersions %v; want MigrationFailed and both versions", c, crd.Status.StoredVersions)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("StorageMigrating still %+v a minute after the migration was stopped", c)
		}
		time.Sleep(250 * time.Millisecond)
	}
	e.faults.set(nil, "")
	assertSameContents(t, before, e.contents("v1alpha1"))

	// Fixed, the same call completes, while a client keeps writing one
	// object (its labels). The migrator starts once its cache has caught
	// up with the migration's resourceVersion: a write to the resource
	// gets it there, where a quiet one waits for a bookmark of the watch
	// (about a minute).
	wctx, stop := context.WithCancel(ctx)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; wctx.Err() == nil; i++ {
			obj, err := e.client("v1").Get(wctx, "w-00003", metav1.GetOptions{})
			if err == nil {
				obj.SetLabels(map[string]string{"i": "3", "beat": strconv.Itoa(i)})
				_, _ = e.client("v1").Update(wctx, obj, metav1.UpdateOptions{})
			}
			time.Sleep(time.Second)
		}
	}()
	res, err = migrate.Migrate(ctx, opts)
	stop()
	<-writerDone
	if err != nil || res.Engine != migrate.EngineCluster || !res.Pruned {
		t.Fatalf("second run: %v, %+v", err, res)
	}
	e.assertAllStoredAt("v1")
	after := e.contents("v1alpha1")
	delete(after["w-00003"]["metadata"].(map[string]any), "labels")
	delete(before["w-00003"]["metadata"].(map[string]any), "labels")
	assertSameContents(t, before, after)
}

func getSVM(t testing.TB, d dynamic.Interface, name string) *svmv1.StorageVersionMigration {
	t.Helper()
	u, err := d.Resource(migrate.SVMResource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var svm svmv1.StorageVersionMigration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &svm); err != nil {
		t.Fatal(err)
	}
	return &svm
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == typ {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// TestPlanUpgradeStatusWriter executes an upgrade plan on the cluster
// with kube-controller-manager while another client keeps writing the
// CRD's status, as Kubernetes' migrator writes its StorageMigrating
// condition: every step must write the CRD as freshly read (steps that
// updated the copy their gates were measured on failed with "the object
// has been modified"). (The plan's migration step is the client engine's:
// the cluster's migrator always prunes, and the plan prunes as a step of
// its own.)
func TestPlanUpgradeStatusWriter(t *testing.T) {
	s, d := kcmSerialTest(t)
	ctx := context.Background()
	live := migCRD(t, "cluster-plan", "v1alpha1")
	e := &migEnv{t: t, crd: live, name: live.Name, sb: s, dyn: d, gr: func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: live.Spec.Group, Version: v, Resource: "widgets"}
	}}
	t.Cleanup(func() {
		if err := s.DeleteCRD(context.Background(), live.Name); err != nil {
			t.Error(err)
		}
	})
	e.create(120, "v1alpha1")
	before := e.contents("v1")

	// Another client writes the CRD's status every 20 ms until the plan
	// ends.
	writerCtx, stop := context.WithCancel(ctx)
	var writes atomic.Int64
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; writerCtx.Err() == nil; i++ {
			crd, err := migrate.GetCRD(writerCtx, d, live.Name)
			if err == nil {
				setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: "E2EStatusWriter", Status: apiextensionsv1.ConditionTrue,
					Reason: "Writing", Message: "write " + strconv.Itoa(i), LastTransitionTime: metav1.Now()})
				var u *unstructured.Unstructured
				if u, err = crdToUnstructured(crd); err == nil {
					_, err = d.Resource(migrate.CRDResource).UpdateStatus(writerCtx, u, metav1.UpdateOptions{})
				}
			}
			switch {
			case err == nil:
				writes.Add(1)
			case writerCtx.Err() != nil:
			case !apierrors.IsConflict(err):
				writerDone <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		writerDone <- nil
	}()

	target := migCRD(t, "cluster-plan", "v1")
	target.Spec.Versions = target.Spec.Versions[1:]
	opts := migrate.PlanOptions{
		Client: d,
		Prober: &migrate.WebhookProber{URL: "https://" + kcmHook.Addr() + "/convert"},
		Check:  func(context.Context, *apiextensionsv1.CustomResourceDefinition) error { return nil },
		Settle: 500 * time.Millisecond,
	}
	plan, err := migrate.PlanUpgrade(ctx, target, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = plan.Execute(ctx, &out)
	stop()
	if werr := <-writerDone; werr != nil {
		t.Fatalf("the status writer: %v", werr)
	}
	if err != nil {
		t.Fatalf("Execute with %d status writes meanwhile: %v\n%s", writes.Load(), err, out.String())
	}
	t.Logf("executed with %d status writes meanwhile:\n%s", writes.Load(), out.String())
	if writes.Load() < 10 {
		t.Errorf("only %d status writes during the plan: it did not run against a writer", writes.Load())
	}
	crd, err := migrate.GetCRD(ctx, d, live.Name)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
	}
	if !slices.Equal(versions, []string{"v1"}) || !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("versions %v, storedVersions %v; want [v1] and [v1]", versions, crd.Status.StoredVersions)
	}
	if crdCondition(crd, "E2EStatusWriter") == nil {
		t.Errorf("the other client's condition was overwritten: %+v", crd.Status.Conditions)
	}
	assertSameContents(t, before, e.contents("v1"))
}

// setCondition sets c in crd's status conditions, replacing one of its type.
func setCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == c.Type {
			crd.Status.Conditions[i] = c
			return
		}
	}
	crd.Status.Conditions = append(crd.Status.Conditions, c)
}

func crdToUnstructured(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	return u, nil
}
