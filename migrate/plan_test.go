package migrate

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fakeProber converts like renameConverter, or fails when told.
type fakeProber struct{ fail error }

func (p *fakeProber) Probe(_ context.Context, _ *apiextensionsv1.CustomResourceDefinition, obj []byte, to string) ([]byte, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	return renameConverter{}.Convert(nil, obj, to)
}

func stepNames(p *Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Name)
	}
	return out
}

func TestPlanUpgrade(t *testing.T) {
	f := newFakeAPI("v1alpha1", []string{"v1alpha1"}, "v1alpha1", "v1")
	f.crd.Spec.Versions[1].Served = false
	f.add("default", 12, "v1alpha1")
	target := f.crd.DeepCopy()
	target.Spec.Versions = target.Spec.Versions[1:]
	target.Spec.Versions[0].Served, target.Spec.Versions[0].Storage = true, true

	prober := &fakeProber{}
	opts := PlanOptions{Client: f.client(), Prober: prober, Settle: time.Millisecond}
	plan, err := PlanUpgrade(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"webhook answers every pair of served versions",
		"serve the target's versions [v1], storage stays v1alpha1",
		"switch the storage version to v1",
		"migrate every object to v1",
		"prune storedVersions to [v1]",
		"stop serving [v1alpha1]",
		"remove [v1alpha1]",
	}
	if diff := cmp.Diff(want, stepNames(plan)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	// Without a check, step 2 is blocked and says how to run it.
	if b := plan.Blocked(); b == nil || b != plan.Steps[1] {
		t.Fatalf("Blocked() = %v, want step 2", b)
	}
	var out bytes.Buffer
	err = plan.Execute(context.Background(), &out)
	var se *StepError
	if !errors.As(err, &se) || se.Step != 2 || !strings.Contains(err.Error(), "--rules") {
		t.Fatalf("Execute without a check: %v, want a StepError at step 2 mentioning --rules", err)
	}

	// A failing webhook stops at step 1, changing nothing.
	opts.Check = func(context.Context, *apiextensionsv1.CustomResourceDefinition) error { return nil }
	plan, err = PlanUpgrade(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	prober.fail = errors.New("connection refused")
	if err := plan.Execute(context.Background(), &out); !errors.As(err, &se) || se.Step != 1 || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Execute with a failing webhook: %v", err)
	}
	if f.crd.Generation != 1 {
		t.Errorf("the crd changed although the first gate failed")
	}

	prober.fail = nil
	out.Reset()
	if err := plan.Execute(context.Background(), &out); err != nil {
		t.Fatalf("Execute: %v\n%s", err, out.String())
	}
	if diff := cmp.Diff(target.Spec.Versions, f.crd.Spec.Versions); diff != "" {
		t.Errorf("versions after the upgrade (-want +got):\n%s", diff)
	}
	if !slices.Equal(f.crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions = %v, want [v1]", f.crd.Status.StoredVersions)
	}
	if diff := cmp.Diff(allStoredIn(f, "v1"), f.storedIn()); diff != "" {
		t.Errorf("stored versions (-want +got):\n%s", diff)
	}

	// Executing again finds every step done.
	out.Reset()
	if err := plan.Execute(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "already done"); n != 6 {
		t.Errorf("second execution:\n%s\nwant 6 steps already done", out.String())
	}
}

func TestPlanRollback(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.add("default", 5, "v1")
	var b bytes.Buffer
	if _, err := WriteBackup(context.Background(), &b, BackupOptions{CRD: "widgets.example.com", Client: f.client()}); err != nil {
		t.Fatal(err)
	}
	backup, err := ReadBackup(&b)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", PlanOptions{Client: f.client(), Prober: &fakeProber{}, Backup: backup, Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"webhook answers every pair of served versions",
		"serve v1alpha1 again",
		"switch the storage version to v1alpha1",
		"migrate every object to v1alpha1",
		"prune storedVersions to [v1alpha1]",
		"restore 5 objects from the backup of " + backup.Header.Created.Format("2006-01-02 15:04:05Z"),
	}
	if diff := cmp.Diff(want, stepNames(plan)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "note: if the webhook is down") {
		t.Errorf("plan text has no note about a webhook that is down:\n%s", text.String())
	}
	if err := plan.Execute(context.Background(), &text); err != nil {
		t.Fatalf("Execute: %v\n%s", err, text.String())
	}
	if s, _ := storageVersion(f.crd); s != "v1alpha1" || !slices.Equal(f.crd.Status.StoredVersions, []string{"v1alpha1"}) {
		t.Errorf("storage %s storedVersions %v, want v1alpha1 alone", s, f.crd.Status.StoredVersions)
	}
	if diff := cmp.Diff(allStoredIn(f, "v1alpha1"), f.storedIn()); diff != "" {
		t.Errorf("stored versions (-want +got):\n%s", diff)
	}
}

func TestPlanRollbackNeedsADefinition(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1")
	f.crd.Spec.Versions = f.crd.Spec.Versions[1:] // v1alpha1 removed
	for _, v := range []string{"v1alpha1", "v9"} {
		_, err := PlanRollback(context.Background(), "widgets.example.com", v, PlanOptions{Client: f.client(), Prober: &fakeProber{}})
		var ve *VersionError
		want := "plan rollback: " + v + " is not a version of crd widgets.example.com (versions: v1), nor of a given crd file or backup, and no object is stored in it (storedVersions: v1): nothing defines a " + v + " to roll back to"
		if !errors.As(err, &ve) || err.Error() != want {
			t.Errorf("rollback to %s: %v\nwant %s", v, err, want)
		}
	}
	// A version still in storedVersions but removed from spec: the plan
	// is made, and blocked for want of a definition.
	f.crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
	plan, err := PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", PlanOptions{Client: f.client(), Prober: &fakeProber{}})
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Blocked()
	if b == nil || b.Name != "serve v1alpha1 again" || !strings.Contains(b.Gates[0].Detail, "no longer defines v1alpha1") {
		t.Errorf("Blocked() = %+v, want the serve step blocked for want of a definition", b)
	}
}

// TestPlanRollbackOverwrite: objects changed since the backup are listed
// and block the rollback unless overwriting them is allowed.
func TestPlanRollbackOverwrite(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1"}, "v1alpha1", "v1")
	f.add("default", 5, "v1")
	var b bytes.Buffer
	if _, err := WriteBackup(context.Background(), &b, BackupOptions{CRD: "widgets.example.com", Client: f.client()}); err != nil {
		t.Fatal(err)
	}
	backup, err := ReadBackup(&b)
	if err != nil {
		t.Fatal(err)
	}
	f.put("default", "w-003", "v1", map[string]any{"spec": map[string]any{"size": int64(42)}})
	f.put("default", "w-001", "v1", map[string]any{"spec": map[string]any{"size": int64(43)}})
	f.put("default", "w-100", "v1", map[string]any{"spec": map[string]any{"size": int64(44)}}) // new: not overwritten
	opts := PlanOptions{Client: f.client(), Prober: &fakeProber{}, Backup: backup, Settle: time.Millisecond}
	plan, err := PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", opts)
	if err != nil {
		t.Fatal(err)
	}
	blocked := plan.Blocked()
	want := Gate{Name: "no object changed since the backup is overwritten", State: GateFail,
		Detail:  "2 changed since the backup would be overwritten: default/w-001, default/w-003; allow it explicitly to restore them",
		Reasons: []string{"default/w-001 (/spec/size)", "default/w-003 (/spec/size)"}}
	if blocked == nil || blocked != plan.Steps[0] || !slices.ContainsFunc(blocked.Gates, func(g Gate) bool { return cmp.Equal(g, want) }) {
		t.Fatalf("Blocked() = %+v, want the first step blocked by %+v", blocked, want)
	}
	var out bytes.Buffer
	var se *StepError
	if err := plan.Execute(context.Background(), &out); !errors.As(err, &se) || se.Step != 1 {
		t.Fatalf("Execute = %v, want step 1 to stop it", err)
	}
	if s, _ := storageVersion(f.crd); s != "v1" {
		t.Errorf("a blocked rollback changed the storage version to %s", s)
	}
	opts.OverwriteChanged = true
	plan, err = PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if b := plan.Blocked(); b != nil {
		t.Fatalf("allowed: still blocked at %+v", b)
	}
	if !strings.Contains(plan.Steps[0].Gates[1].Detail, "2 changed since the backup will be overwritten (allowed): default/w-001, default/w-003") {
		t.Errorf("gate = %+v", plan.Steps[0].Gates[1])
	}
	if err := plan.Execute(context.Background(), &out); err != nil {
		t.Fatalf("Execute: %v\n%s", err, out.String())
	}
}

// TestPlanUpgradeRefusedCRD: when the API server would refuse the CRD the
// second step writes (its server dry run fails), that step is blocked with
// the API server's words, and executing the plan changes nothing: the
// first step only probes, the second stops at its gate.
func TestPlanUpgradeRefusedCRD(t *testing.T) {
	f := newFakeAPI("v1alpha1", []string{"v1alpha1"}, "v1alpha1", "v1")
	f.crd.Spec.Versions[1].Served = false
	f.add("default", 3, "v1alpha1")
	target := f.crd.DeepCopy()
	target.Spec.Versions[1].Served, target.Spec.Versions[1].Storage = true, true
	target.Spec.Versions[0].Storage = false
	refusal := apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, target.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "versions").Index(1).Child("schema", "openAPIV3Schema", "properties").Key("spec").Child("default"), -1, "in body should be greater than or equal to 0")})
	f.refuseCRD = func(next *apiextensionsv1.CustomResourceDefinition) error {
		if next.Spec.Versions[1].Served {
			return refusal
		}
		return nil
	}
	opts := PlanOptions{Client: f.client(), Prober: &fakeProber{}, Settle: time.Millisecond,
		Check: func(context.Context, *apiextensionsv1.CustomResourceDefinition) error { return nil }}
	plan, err := PlanUpgrade(context.Background(), target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if b := plan.Blocked(); b != plan.Steps[1] {
		t.Fatalf("Blocked() = %v, want step 2", b)
	}
	var gate *Gate
	for i, g := range plan.Steps[1].Gates {
		if strings.HasPrefix(g.Name, "the API server accepts the updated crd") {
			gate = &plan.Steps[1].Gates[i]
		}
	}
	if gate == nil || gate.State != GateFail || !strings.Contains(gate.Detail, "in body should be greater than or equal to 0") {
		t.Fatalf("gate %+v, want a failure with the API server's message", gate)
	}
	if f.dryRuns == 0 {
		t.Error("no server dry run was asked for")
	}
	generation := f.crd.Generation
	var out bytes.Buffer
	var se *StepError
	if err := plan.Execute(context.Background(), &out); !errors.As(err, &se) || se.Step != 2 {
		t.Fatalf("Execute: %v, want a StepError at step 2", err)
	}
	if f.crd.Generation != generation || f.crd.Spec.Versions[1].Served {
		t.Errorf("the CRD changed although step 2's gate failed: generation %d, v1 served %v", f.crd.Generation, f.crd.Spec.Versions[1].Served)
	}
}

// TestPlanWaitsForStorageMigration: while the cluster's migrator runs a
// migration of the resource (the CRD's StorageMigrating condition), every
// step that changes something has a failing gate, and Execute changes
// nothing; once it ended, the plan runs.
func TestPlanWaitsForStorageMigration(t *testing.T) {
	f := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	f.add("default", 6, "v1alpha1")
	f.migrator = f.fakeMigrator("w-003") // stays Running
	opts := PlanOptions{Client: f.client(), Prober: &fakeProber{}, Settle: time.Millisecond,
		Check: func(context.Context, *apiextensionsv1.CustomResourceDefinition) error { return nil }}
	if _, err := opts.Client.Resource(SVMResource).Create(context.Background(), clusterSVM(), createOpts()); err != nil {
		t.Fatal(err)
	}
	for running := false; !running; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		running = migratingCondition(f.crd) != nil
		f.mu.Unlock()
	}
	plan, err := PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", opts)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := plan.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "[fail] no storage migration under way: a storage migration of crd widgets.example.com is under way (StorageVersionMigration theirs-1") {
		t.Errorf("plan:\n%s", text.String())
	}
	generation := f.crd.Generation
	err = plan.Execute(context.Background(), &text)
	var se *StepError
	if !errors.As(err, &se) || !se.BeforeStart || !strings.Contains(err.Error(), "under way") {
		t.Fatalf("Execute: %v, want a StepError before the start, saying a migration is under way", err)
	}
	if f.crd.Generation != generation {
		t.Errorf("the CRD changed while a migration ran")
	}
	// The migration ends (it failed): the plan runs.
	f.setSVMStatus("theirs-1", func(st *svmv1.StorageVersionMigrationStatus) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Failed", Status: metav1.ConditionTrue, Reason: "X", Message: "x"})
	})
	f.mu.Lock()
	setCRDCondition(f.crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionFalse, Reason: "MigrationFailed"})
	f.mu.Unlock()
	f.migrator = nil
	if err := plan.Execute(context.Background(), &text); err != nil {
		t.Fatalf("Execute once the migration ended: %v\n%s", err, text.String())
	}
}

func clusterSVM() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"generateName": "theirs-"},
		"spec":     map[string]any{"resource": map[string]any{"group": testGroup, "resource": "widgets"}}}}
}

func createOpts() metav1.CreateOptions { return metav1.CreateOptions{} }

// TestPlanStepWritesFreshCRD: a step writes the CRD as read just before
// its update, not the copy its gates were measured on. Another client's
// status or metadata write in between (Kubernetes' migrator's
// StorageMigrating condition) makes the update conflict, and the step
// reads the CRD again and writes it; a change of its spec stops the step,
// nothing written; conflicts without end stop it after MaxCRDConflicts
// fresh reads.
func TestPlanStepWritesFreshCRD(t *testing.T) {
	otherCondition := apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionFalse, Reason: "MigrationSucceeded"}
	tests := []struct {
		name string
		// other is another client's write, made before the n-th update
		// of the CRD's spec (dry runs and status writes not counted).
		// other returns false when it writes nothing.
		other func(crd *apiextensionsv1.CustomResourceDefinition, n int) bool
		// wantErr is a part of Execute's error; "" wants success.
		wantErr     string
		wantChanged bool // a *CRDChangedError
		wantUpdates int  // spec updates tried
		wantStorage string
		// wantGeneration is 2 after one spec write, ours or the other
		// client's (never both: ours would overwrite theirs).
		wantGeneration int64
		wantCABundle   string
	}{
		{
			name: "a status write between the read and the update, once",
			other: func(crd *apiextensionsv1.CustomResourceDefinition, n int) bool {
				setCRDCondition(crd, otherCondition)
				return n == 1
			},
			wantUpdates: 2, wantStorage: "v1alpha1", wantGeneration: 2,
		},
		{
			name: "the spec changed between the read and the update",
			other: func(crd *apiextensionsv1.CustomResourceDefinition, n int) bool {
				if n > 1 {
					return false
				}
				crd.Spec.Names.ShortNames = []string{"wd"}
				crd.Generation++
				return true
			},
			wantErr:     "step 3 (switch the storage version to v1alpha1) failed: nothing written: crd widgets.example.com changed since the step's gates were measured (generation 1 then, 2 now; its spec changed); run the plan again",
			wantChanged: true, wantUpdates: 1, wantStorage: "v1", wantGeneration: 2,
		},
		{
			name: "the storage version changed between the read and the update",
			other: func(crd *apiextensionsv1.CustomResourceDefinition, n int) bool {
				if n > 1 {
					return false
				}
				crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = true, false
				crd.Generation++
				return true
			},
			wantErr:     "(generation 1 then, 2 now; storage version v1 then, v1alpha1 now)",
			wantChanged: true, wantUpdates: 1, wantStorage: "v1alpha1", wantGeneration: 2,
		},
		{
			name: "a caBundle injected between the read and the update",
			other: func(crd *apiextensionsv1.CustomResourceDefinition, n int) bool {
				if n > 1 {
					return false
				}
				crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("injected CA")
				crd.Generation++
				return true
			},
			wantUpdates: 2, wantStorage: "v1alpha1", wantGeneration: 3, wantCABundle: "injected CA",
		},
		{
			name: "a status write before every update",
			other: func(crd *apiextensionsv1.CustomResourceDefinition, n int) bool {
				setCRDCondition(crd, otherCondition)
				return true
			},
			wantErr:     "the object has been modified (still conflicting after 10 fresh reads)",
			wantUpdates: MaxCRDConflicts + 1, wantStorage: "v1", wantGeneration: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI("v1", []string{"v1"}, "v1alpha1", "v1")
			f.add("default", 4, "v1")
			updates := 0
			f.onCRDUpdate = func(dryRun bool, subresource string) {
				if dryRun || subresource != "" {
					return
				}
				updates++
				f.mu.Lock()
				wrote := tt.other(f.crd, updates)
				if wrote {
					f.rv++
					f.crd.ResourceVersion = strconv.Itoa(f.rv)
				}
				f.mu.Unlock()
			}
			plan, err := PlanRollback(context.Background(), "widgets.example.com", "v1alpha1", PlanOptions{Client: f.client(), Prober: &fakeProber{}, Settle: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			err = plan.Execute(context.Background(), &out)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Execute: %v\n%s", err, out.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Execute: %v, want an error containing %q", err, tt.wantErr)
			}
			var changed *CRDChangedError
			if errors.As(err, &changed) != tt.wantChanged {
				t.Errorf("error %v: a *CRDChangedError %v, want %v", err, !tt.wantChanged, tt.wantChanged)
			}
			if updates != tt.wantUpdates {
				t.Errorf("%d updates of the crd's spec, want %d", updates, tt.wantUpdates)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if s, _ := storageVersion(f.crd); s != tt.wantStorage {
				t.Errorf("storage version %s, want %s", s, tt.wantStorage)
			}
			// Nothing another client wrote was overwritten.
			if f.crd.Generation != tt.wantGeneration {
				t.Errorf("generation %d, want %d", f.crd.Generation, tt.wantGeneration)
			}
			if got := string(f.crd.Spec.Conversion.Webhook.ClientConfig.CABundle); got != tt.wantCABundle {
				t.Errorf("caBundle %q, want %q", got, tt.wantCABundle)
			}
			if tt.wantErr == "" && tt.wantCABundle == "" && findCRDCondition(f.crd, StorageMigrating) == nil {
				t.Errorf("the other client's condition was overwritten: %+v", f.crd.Status.Conditions)
			}
		})
	}
}

func findCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}
