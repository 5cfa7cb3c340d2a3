package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/migrate"
)

// Reasons of StorageMigrating and Migrated.
const (
	ReasonMigrating       = "Migrating"
	ReasonMigrated        = "Migrated"
	ReasonMigrationFailed = "MigrationFailed"
)

// migrate runs the storage migration spec.storage asks for, once per
// generation, after every ready replica serves it and the CRD converts
// through the webhook: a backup first when asked, then package migrate's
// guarded run (conflicts retried, a precondition on the prune).
func (r *reconciler) migrate(ctx context.Context, u *unstructured.Unstructured, crd *apiextv1.CustomResourceDefinition, st *v1alpha1.Status) {
	gen := u.GetGeneration()
	if st.Migration != nil && st.Migration.Generation == gen {
		return // done for this generation
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionMigrated); c != nil && c.ObservedGeneration == gen && c.Status == metav1.ConditionFalse &&
		time.Since(c.LastTransitionTime.Time) < r.opts.Resync {
		return // failed for this generation: retried after Resync
	}
	set := func(t string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	set(v1alpha1.ConditionStorageMigrating, true, ReasonMigrating, "every object is being rewritten at the storage version")
	if err := r.writeStatus(ctx, u, *st); err != nil {
		r.log.Error("status", "conversion", u.GetName(), "error", err)
	}
	m, err := r.runMigration(ctx, crd, u.GetName(), gen, u.Object["spec"].(map[string]any))
	set(v1alpha1.ConditionStorageMigrating, false, ReasonMigrated, "no migration runs")
	if err != nil {
		set(v1alpha1.ConditionMigrated, false, ReasonMigrationFailed, err.Error())
		r.events.Eventf(u, crd, corev1.EventTypeWarning, ReasonMigrationFailed, "Migrate", "%v", err)
		return
	}
	st.Migration = m
	set(v1alpha1.ConditionMigrated, true, ReasonMigrated, fmt.Sprintf("%d objects at %s (%d rewritten); storedVersions %v", m.Objects, m.StorageVersion, m.Rewritten, m.StoredVersions))
	r.events.Eventf(u, crd, corev1.EventTypeNormal, ReasonMigrated, "Migrate", "%d objects at %s; storedVersions %v", m.Objects, m.StorageVersion, m.StoredVersions)
}

// runMigration is the call into package migrate: a backup when asked,
// then Migrate, pruning when asked.
func (r *reconciler) runMigration(ctx context.Context, crd *apiextv1.CustomResourceDefinition, name string, gen int64, spec map[string]any) (*v1alpha1.Migration, error) {
	storage, _, _ := unstructured.NestedMap(spec, "storage")
	backup, _ := storage["backup"].(bool)
	prune, _ := storage["pruneStoredVersions"].(bool)
	m := &v1alpha1.Migration{Generation: gen}
	if backup {
		if r.opts.BackupDir == "" {
			return nil, fmt.Errorf("spec.storage.backup: the operator has no backup directory (--backup-dir)")
		}
		path := filepath.Join(r.opts.BackupDir, fmt.Sprintf("%s-generation-%d-%s.jsonl", crd.Name, gen, time.Now().UTC().Format("20060102T150405Z")))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		res, err := migrate.WriteBackup(ctx, f, migrate.BackupOptions{CRD: crd.Name, Client: r.dyn})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("backup to %s: %w (nothing migrated)", path, err)
		}
		m.Backup, m.BackupSHA256 = path, res.SHA256
	}
	res, err := migrate.Migrate(ctx, migrate.Options{CRD: crd.Name, Client: r.dyn, Prune: prune})
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", crd.Name, err)
	}
	if prune && !res.Pruned && !(len(res.StoredVersions) == 1 && res.StoredVersions[0] == res.StorageVersion) {
		return nil, fmt.Errorf("migrate %s: every object rewritten, storedVersions not pruned: %s", crd.Name, res.PruneMessage)
	}
	m.StorageVersion, m.Objects, m.Rewritten, m.StoredVersions = res.StorageVersion, int64(res.Done), int64(res.Rewritten), res.StoredVersions
	return m, nil
}
