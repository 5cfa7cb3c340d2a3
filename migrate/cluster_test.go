package migrate

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// clusterOptions are Options for the fake's cluster engine, with short
// waits.
func clusterOptions(f *fakeAPI, engine Engine) Options {
	return Options{CRD: "widgets.example.com", Client: f.client(), Prune: true, Engine: engine, PageSize: 10,
		ClusterStart: 200 * time.Millisecond, ClusterStuck: 200 * time.Millisecond, poll: 5 * time.Millisecond}
}

// TestEngines: which engine runs, and what each leaves: every object at
// the storage version, storedVersions pruned (by the cluster's migrator
// for the cluster engine), and notes that say why auto chose the client
// engine.
func TestEngines(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(f *fakeAPI, o *Options)
		engine   Engine
		want     Engine
		note     string // in Result.Notes
		byWriter string // the writeLog prefix of the object writes
		err      string
	}{
		{name: "client by default", setup: func(f *fakeAPI, o *Options) { o.Engine = "" }, want: EngineClient, byWriter: "update "},
		{name: "auto: the cluster's migrator runs", setup: func(f *fakeAPI, o *Options) { f.migrator = f.fakeMigrator("") }, engine: EngineAuto, want: EngineCluster, byWriter: "migrator "},
		{name: "cluster: the cluster's migrator runs", setup: func(f *fakeAPI, o *Options) { f.migrator = f.fakeMigrator("") }, engine: EngineCluster, want: EngineCluster, byWriter: "migrator "},
		{name: "auto: nothing takes the migration up", engine: EngineAuto, want: EngineClient, byWriter: "update ",
			note: "did not take up StorageVersionMigration hubspoke-widgets-1 within 200ms"},
		{name: "cluster: nothing takes the migration up", engine: EngineCluster, err: "did not take up StorageVersionMigration hubspoke-widgets-1"},
		{name: "auto: storagemigration.k8s.io not served", setup: func(f *fakeAPI, o *Options) { f.noSVMAPI = true }, engine: EngineAuto, want: EngineClient, byWriter: "update ",
			note: "does not serve storagemigration.k8s.io/v1"},
		{name: "auto: a dry run is the client's", setup: func(f *fakeAPI, o *Options) { f.migrator = f.fakeMigrator(""); o.DryRun = true }, engine: EngineAuto, want: EngineClient,
			note: "client engine: the cluster's migrator cannot be used, it has no dry run"},
		{name: "auto: a namespace is the client's", setup: func(f *fakeAPI, o *Options) { f.migrator = f.fakeMigrator(""); o.Namespace = "default" }, engine: EngineAuto, want: EngineClient,
			byWriter: "update ", note: "it cannot be limited to a namespace"},
		{name: "auto: no prune is the client's", setup: func(f *fakeAPI, o *Options) { f.migrator = f.fakeMigrator(""); o.Prune = false }, engine: EngineAuto, want: EngineClient,
			byWriter: "update ", note: "it always prunes"},
		{name: "cluster: a selector cannot be", setup: func(f *fakeAPI, o *Options) { f.migrator = f.fakeMigrator(""); o.LabelSelector = "a=b" }, engine: EngineCluster,
			err: "the cluster engine cannot do this run: it cannot be limited by a label selector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
			f.add("default", 25, "v1alpha1")
			o := clusterOptions(f, tt.engine)
			if tt.setup != nil {
				tt.setup(f, &o)
			}
			var last Progress
			o.Progress = func(p Progress) { last = p }
			res, err := Migrate(context.Background(), o)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Migrate: %v, want an error containing %q", err, tt.err)
				}
				if got := f.crd.Status.StoredVersions; len(got) != 2 {
					t.Errorf("storedVersions %v after a failed run, want both", got)
				}
				if n := len(f.svms); n != 0 {
					t.Errorf("%d StorageVersionMigrations left, want none", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if res.Engine != tt.want {
				t.Errorf("engine %s, want %s (notes %q)", res.Engine, tt.want, res.Notes)
			}
			if tt.note != "" && !strings.Contains(strings.Join(res.Notes, "\n"), tt.note) {
				t.Errorf("notes %q, want one containing %q", res.Notes, tt.note)
			}
			if tt.byWriter == "" { // a dry run
				if len(f.writeLog) != 0 {
					t.Errorf("writes %v in a dry run", f.writeLog)
				}
				return
			}
			others := 0
			for _, w := range f.writeLog {
				if !strings.HasPrefix(w, tt.byWriter) {
					others++
				}
			}
			// The cluster engine may rewrite one object itself, to get
			// the migrator going (prime).
			if allowed := map[Engine]int{EngineCluster: 1}[tt.want]; others > allowed {
				t.Errorf("writes %q, want every object written by %q", f.writeLog, tt.byWriter)
			}
			if diff := cmp.Diff(allStoredIn(f, "v1"), f.storedIn()); diff != "" {
				t.Errorf("stored versions (-want +got):\n%s", diff)
			}
			if o.Prune && o.Namespace == "" && (!res.Pruned || !slices.Equal(f.crd.Status.StoredVersions, []string{"v1"})) {
				t.Errorf("pruned %v (%s), storedVersions %v; want [v1]", res.Pruned, res.PruneMessage, f.crd.Status.StoredVersions)
			}
			if o.Namespace == "" && (res.Done != 25 || res.Rewritten != 25 || last.Done != 25) {
				t.Errorf("done %d rewritten %d (last progress %+v), want 25 and 25", res.Done, res.Rewritten, last)
			}
			if tt.want == EngineCluster {
				if res.Migration == "" || f.svm(res.Migration) == nil || !meta.IsStatusConditionTrue(f.svm(res.Migration).Status.Conditions, "Succeeded") {
					t.Errorf("migration %q: want it there, succeeded", res.Migration)
				}
			} else if n := len(f.svms); n != 0 {
				t.Errorf("%d StorageVersionMigrations left by the client engine, want none (the one not taken up deleted)", n)
			}
		})
	}
}

// TestClusterPrime: Kubernetes' migrator starts once its cache of the
// resource reaches the migration's resourceVersion, which on a resource
// nobody writes waits for a bookmark of its watch; the cluster engine
// rewrites one object (the first whose write re-encodes it) to get it
// going at once, and that write counts as the migration's.
func TestClusterPrime(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 25, "v1alpha1")
	for _, k := range []string{"default/w-000", "default/w-001", "default/w-002"} {
		f.stored[k] = "v1" // a write of these changes nothing
	}
	f.cacheLag = 10 * time.Second
	f.migrator = f.fakeMigrator("")
	o := clusterOptions(f, EngineCluster)
	o.ClusterStuck = 30 * time.Second
	res, err := Migrate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if f.bookmarked {
		t.Error("the migrator waited for a bookmark: nothing primed it")
	}
	var updates []string
	for _, w := range f.writeLog {
		if !strings.HasPrefix(w, "migrator ") {
			updates = append(updates, w)
		}
	}
	if diff := cmp.Diff([]string{"update default/w-003"}, updates); diff != "" {
		t.Errorf("writes by hubspoke (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(allStoredIn(f, "v1"), f.storedIn()); diff != "" {
		t.Errorf("stored versions (-want +got):\n%s", diff)
	}
	if res.Engine != EngineCluster || res.Rewritten != 22 || res.Unchanged != 3 || !res.Pruned {
		t.Errorf("engine %s, rewritten %d, unchanged %d, pruned %v; want cluster, 22, 3, true", res.Engine, res.Rewritten, res.Unchanged, res.Pruned)
	}
}

// TestClusterStuck: a cluster migration that retries a transient error
// (the webhook fails for one object) stops after ClusterStuck with a
// *StuckError naming the object and the API server's error, the migration
// is marked Failed, and nothing is pruned.
func TestClusterStuck(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 25, "v1alpha1")
	f.migrator = f.fakeMigrator("w-017")
	f.beforeGet = func(key string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if key == "default/w-017" && f.stored[key] != f.storage() {
			return apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1alpha1, Kind=Widget failed: injected for w-017"))
		}
		return nil
	}
	res, err := Migrate(context.Background(), clusterOptions(f, EngineCluster))
	var se *StuckError
	if !errors.As(err, &se) {
		t.Fatalf("Migrate: %v, want a *StuckError", err)
	}
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Namespace != "default" || oe.Name != "w-017" || !strings.Contains(oe.Error(), "injected for w-017") {
		t.Errorf("error %v: want the object default/w-017 named with the webhook's error", err)
	}
	if !strings.Contains(err.Error(), "nothing lost") || !strings.Contains(err.Error(), "transient error") {
		t.Errorf("error %q: want it to say the controller's error and that nothing is lost", err)
	}
	if se.Remaining != 8 {
		t.Errorf("remaining %d, want the 8 objects from w-017 on", se.Remaining)
	}
	svm := f.svm(res.Migration)
	if c := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed)); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "StoppedByHubspoke" || !strings.Contains(c.Message, "default/w-017") {
		t.Errorf("migration %s conditions %+v: want Failed by hubspoke, naming the object", res.Migration, svm.Status.Conditions)
	}
	// The migrator pruned storedVersions as the migration ended, failed
	// (Kubernetes 1.37 does): hubspoke put them back, and says so.
	if diff := cmp.Diff([]string{"v1alpha1", "v1"}, f.crd.Status.StoredVersions); diff != "" {
		t.Errorf("storedVersions (-want +got):\n%s", diff)
	}
	if se.Restored == nil || !strings.Contains(err.Error(), "pruned status.storedVersions to [v1] although the migration failed: hubspoke restored [v1alpha1 v1]") {
		t.Errorf("error %q: want it to say storedVersions were restored", err)
	}
	if c := migratingCondition(f.crd); c != nil {
		t.Errorf("StorageMigrating still True: %+v", c)
	}
}

// TestGuards: nothing is written while another migration is under way,
// or when the webhook fails on a sample; a stale StorageMigrating
// condition is a note.
func TestGuards(t *testing.T) {
	running := func(f *fakeAPI, name string) {
		f.svms = map[string]*unstructured.Unstructured{name: {Object: map[string]any{
			"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
			"metadata": map[string]any{"name": name, "resourceVersion": "1"},
			"spec":     map[string]any{"resource": map[string]any{"group": testGroup, "resource": "widgets"}},
			"status":   map[string]any{"conditions": []any{map[string]any{"type": "Running", "status": "True", "reason": "MigrationRunning", "message": "m", "lastTransitionTime": "2026-12-04T10:00:00Z"}}},
		}}}
	}
	migrating := func(f *fakeAPI, name string) {
		setCRDCondition(f.crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionTrue, Reason: "MigrationRunning", Message: "Migration " + name + " is running"})
	}
	tests := []struct {
		name  string
		setup func(f *fakeAPI)
		err   string
		note  string
	}{
		{name: "a migration of the resource runs", setup: func(f *fakeAPI) { running(f, "theirs"); migrating(f, "theirs") },
			err: "a storage migration of crd widgets.example.com is under way (StorageVersionMigration theirs; the crd's condition StorageMigrating=True"},
		{name: "a migration waits for its turn", setup: func(f *fakeAPI) {
			running(f, "queued")
			f.svms["queued"].Object["status"] = map[string]any{}
		}, err: "is under way (StorageVersionMigration queued)"},
		{name: "the condition says running, migrations cannot be listed", setup: func(f *fakeAPI) { migrating(f, "theirs"); f.noSVMAPI = true },
			err: "is under way (StorageVersionMigration theirs; the crd's condition"},
		{name: "stale condition: its migration was deleted", setup: func(f *fakeAPI) { migrating(f, "gone") },
			note: "names migration gone, which no longer exists (deleted while it ran): the condition is stale"},
		{name: "the webhook fails on the sample", setup: func(f *fakeAPI) {
			f.beforeGet = func(key string) error {
				return apierrors.NewInternalError(errors.New("conversion webhook for example.com/v1, Kind=Widget failed: connection refused"))
			}
		}, err: "the conversion webhook of crd widgets.example.com is not healthy: reading default/w-000 at v1alpha1 through the API server: Internal error occurred: conversion webhook"},
		{name: "the webhook fails every list", setup: func(f *fakeAPI) {
			f.beforeList = func(version, cont string) error {
				return apierrors.NewInternalError(errors.New("conversion webhook failed"))
			}
		}, err: "is not healthy: listing its objects at v1 through the API server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, engine := range []Engine{EngineClient, EngineAuto} {
				f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
				f.add("default", 5, "v1alpha1")
				tt.setup(f)
				var backup bytes.Buffer
				o := clusterOptions(f, engine)
				o.Backup = &backup
				res, err := Migrate(context.Background(), o)
				if tt.err != "" {
					if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "nothing written") {
						t.Errorf("%s engine: %v, want an error containing %q and saying nothing was written", engine, err, tt.err)
					}
					if len(f.writeLog) > 0 || backup.Len() > 0 {
						t.Errorf("%s engine: writes %v, backup of %d bytes; want none", engine, f.writeLog, backup.Len())
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s engine: %v", engine, err)
				}
				if !strings.Contains(strings.Join(res.Notes, "\n"), tt.note) {
					t.Errorf("%s engine: notes %q, want %q", engine, res.Notes, tt.note)
				}
			}
		})
	}
}

// TestMigrateBackupFirst: Options.Backup receives every object before the
// first write.
func TestMigrateBackupFirst(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 12, "v1alpha1")
	var backup bytes.Buffer
	f.beforeUpdate = func(key string, n int) error {
		if n == 1 && backup.Len() == 0 {
			t.Error("an object written before the backup")
		}
		return nil
	}
	o := clusterOptions(f, EngineClient)
	o.Backup = &backup
	res, err := Migrate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadBackup(&backup)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Objects) != 12 || res.Backup == nil || res.Backup.Count != 12 || res.Backup.SHA256 != b.SHA256 {
		t.Errorf("backup of %d objects, result %+v; want 12 and the same checksum", len(b.Objects), res.Backup)
	}
}

// TestClusterCleansManagedFields: after a cluster migration, entries of a
// version no longer served are removed from the objects that have them
// (the cluster's migrator leaves them), and only those are written.
func TestClusterCleansManagedFields(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1")
	f.add("default", 10, "v1alpha1")
	for _, k := range []string{"default/w-003", "default/w-007"} {
		unstructured.SetNestedSlice(f.objs[k], []any{
			map[string]any{"manager": "old-client", "operation": "Update", "apiVersion": testGroup + "/v1alpha1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}},
			map[string]any{"manager": "new-client", "operation": "Update", "apiVersion": testGroup + "/v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}},
		}, "metadata", "managedFields")
	}
	f.migrator = f.fakeMigrator("")
	res, err := Migrate(context.Background(), clusterOptions(f, EngineCluster))
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != EngineCluster || res.ManagedFieldsCleaned != 2 {
		t.Errorf("engine %s, managedFields cleaned on %d objects; want cluster and 2", res.Engine, res.ManagedFieldsCleaned)
	}
	var updates []string
	for _, w := range f.writeLog {
		if strings.HasPrefix(w, "update ") {
			updates = append(updates, w)
		}
	}
	slices.Sort(updates)
	if diff := cmp.Diff([]string{"update default/w-003", "update default/w-007"}, updates); diff != "" {
		t.Errorf("updates after the migration (-want +got):\n%s", diff)
	}
	for _, k := range []string{"default/w-003", "default/w-007"} {
		u := &unstructured.Unstructured{Object: f.objs[k]}
		if mf := u.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "new-client" {
			t.Errorf("%s managedFields %+v, want new-client's alone", k, mf)
		}
	}
}

// TestClusterFailed: a migration the cluster's migrator fails is a
// *ClusterError with its message, and the storedVersions the migrator
// pruned on its way out are put back.
func TestClusterFailed(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 5, "v1alpha1")
	f.migrator = func(name string) {
		f.fakeMigrator("w-000")(name) // takes it up, stops at the first object
		msg := `5/5 not yet migrated. migration encountered unhandled error: Widget.example.com "w-000" is invalid: spec.size: Invalid value`
		f.setSVMStatus(name, func(st *svmv1.StorageVersionMigrationStatus) {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(svmv1.MigrationFailed), Status: metav1.ConditionTrue, Reason: "StorageVersionMigrationFailed", Message: msg})
		})
		f.mu.Lock()
		f.endMigration(name, false)
		f.mu.Unlock()
	}
	_, err := Migrate(context.Background(), clusterOptions(f, EngineCluster))
	var ce *ClusterError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `failed (StorageVersionMigrationFailed): 5/5 not yet migrated`) || ce.Restored == nil {
		t.Fatalf("Migrate: %v; want a *ClusterError with the migrator's message, storedVersions restored", err)
	}
	if diff := cmp.Diff([]string{"v1alpha1", "v1"}, f.crd.Status.StoredVersions); diff != "" {
		t.Errorf("storedVersions (-want +got):\n%s", diff)
	}
}
