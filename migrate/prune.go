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
// seen is the CRD as read when the migration began: its resourceVersion is
// the precondition of the write, so if anything changed the CRD since (a
// new storage version, an edit of any kind) nothing is pruned and the
// message says what changed. Call it only after every object was rewritten.
func Prune(ctx context.Context, dyn dynamic.Interface, seen *apiextensionsv1.CustomResourceDefinition) (*PruneResult, error) {
	storage, err := storageVersion(seen)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	want := []string{storage}
	if slices.Equal(seen.Status.StoredVersions, want) {
		return &PruneResult{StoredVersions: want, Message: fmt.Sprintf("storedVersions already [%s]", storage)}, nil
	}
	next := seen.DeepCopy()
	next.Status.StoredVersions = want
	u, err := toUnstructured(next)
	if err != nil {
		return nil, err
	}
	_, err = dyn.Resource(CRDResource).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		now, gerr := GetCRD(ctx, dyn, seen.Name)
		if gerr != nil {
			return nil, fmt.Errorf("prune: %w (after a conflict: %w)", gerr, err)
		}
		return &PruneResult{StoredVersions: now.Status.StoredVersions, Message: changedMessage(seen, now)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prune storedVersions of crd %s: %w", seen.Name, err)
	}
	dropped := slices.DeleteFunc(slices.Clone(seen.Status.StoredVersions), func(v string) bool { return v == storage })
	return &PruneResult{Pruned: true, StoredVersions: want, Message: fmt.Sprintf("storedVersions set to [%s] (dropped %v)", storage, dropped)}, nil
}

// changedMessage explains why storedVersions were not pruned.
func changedMessage(seen, now *apiextensionsv1.CustomResourceDefinition) string {
	msg := fmt.Sprintf("not pruned: crd %s changed since the migration began (resourceVersion %s then, %s now", seen.Name, seen.ResourceVersion, now.ResourceVersion)
	oldSV, _ := storageVersion(seen)
	newSV, err := storageVersion(now)
	switch {
	case err != nil:
		msg += "; " + err.Error()
	case oldSV != newSV:
		msg += fmt.Sprintf("; storage version %s then, %s now: objects written meanwhile may be stored in either", oldSV, newSV)
	case seen.Generation != now.Generation:
		msg += fmt.Sprintf("; spec generation %d then, %d now", seen.Generation, now.Generation)
	default:
		msg += "; metadata or status only"
	}
	return msg + "); run the migration again"
}
