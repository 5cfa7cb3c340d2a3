package migrate

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// PruneResult is the outcome of Prune.
type PruneResult struct {
	// Pruned tells whether status.storedVersions was written.
	Pruned bool
	// StoredVersions is status.storedVersions afterwards.
	StoredVersions []string
	// Message says what was done, or why nothing was.
	Message string
}

// Prune sets status.storedVersions of the CRD to its storage version alone.
// seen is the CRD as read when the migration began. Prune reads the CRD
// afresh and writes only if it is still the same CRD (uid) with the same
// spec (generation) and storage version: then every object the migration
// rewrote is stored at the storage version, and so is every object
// written since. A change of the CRD's status or metadata (the cluster's
// migrator's StorageMigrating condition, a label) or of its conversion
// webhook's caBundle alone (a CA injector's) does not matter; any other
// change of its spec stops the prune, and the message says what changed.
// The write is an update of the status of the CRD as just read (its
// resourceVersion the precondition): a conflict reads it again. Call it
// only after every object was rewritten.
func Prune(ctx context.Context, dyn dynamic.Interface, seen *apiextensionsv1.CustomResourceDefinition) (*PruneResult, error) {
	storage, err := storageVersion(seen)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	want := []string{storage}
	for attempt := 0; ; attempt++ {
		now, err := GetCRD(ctx, dyn, seen.Name)
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		nowStorage, _ := storageVersion(now)
		if now.UID != seen.UID || specChanged(seen, now) || nowStorage != storage {
			return &PruneResult{StoredVersions: now.Status.StoredVersions, Message: changedMessage(seen, now)}, nil
		}
		if slices.Equal(now.Status.StoredVersions, want) {
			return &PruneResult{StoredVersions: want, Message: fmt.Sprintf("storedVersions already [%s]", storage)}, nil
		}
		next := now.DeepCopy()
		next.Status.StoredVersions = want
		u, err := toUnstructured(next)
		if err != nil {
			return nil, err
		}
		_, err = dyn.Resource(CRDResource).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) && attempt < MaxCRDConflicts {
			continue // a status or metadata write meanwhile: judge it again
		}
		if err != nil {
			return nil, fmt.Errorf("prune storedVersions of crd %s: %w", seen.Name, err)
		}
		dropped := slices.DeleteFunc(slices.Clone(now.Status.StoredVersions), func(v string) bool { return v == storage })
		return &PruneResult{Pruned: true, StoredVersions: want, Message: fmt.Sprintf("storedVersions set to [%s] (dropped %v)", storage, dropped)}, nil
	}
}

// changedMessage explains why storedVersions were not pruned.
func changedMessage(seen, now *apiextensionsv1.CustomResourceDefinition) string {
	if now.UID != seen.UID {
		return fmt.Sprintf("not pruned: crd %s was deleted and created again since the migration began; run the migration again", seen.Name)
	}
	why := "objects written meanwhile may be stored at a version it named for a while"
	if oldSV, newSV := storageVersionOrNone(seen), storageVersionOrNone(now); oldSV != newSV {
		why = "objects written meanwhile may be stored in either"
	}
	return fmt.Sprintf("not pruned: crd %s changed since the migration began (%s: %s); run the migration again", seen.Name, changeDetail(seen, now), why)
}

// changeDetail says how the spec of now differs from seen's (same uid):
// generation, and the storage version or else the rest of the spec.
func changeDetail(seen, now *apiextensionsv1.CustomResourceDefinition) string {
	msg := fmt.Sprintf("generation %d then, %d now", seen.Generation, now.Generation)
	if _, err := storageVersion(now); err != nil {
		return msg + "; " + err.Error()
	}
	if oldSV, newSV := storageVersionOrNone(seen), storageVersionOrNone(now); oldSV != newSV {
		return msg + fmt.Sprintf("; storage version %s then, %s now", oldSV, newSV)
	}
	return msg + "; its spec changed"
}

func storageVersionOrNone(crd *apiextensionsv1.CustomResourceDefinition) string {
	s, err := storageVersion(crd)
	if err != nil {
		return "none"
	}
	return s
}
