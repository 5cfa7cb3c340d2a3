package migrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// SVMResource is the resource of Kubernetes' own storage version
// migrations (GA in 1.37), which kube-controller-manager's
// storage-version-migrator-controller runs.
var SVMResource = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}

// StorageMigrating is the CRD condition the cluster's migrator sets while
// a migration of the CRD's resource runs (True), and when it ends (False,
// reason MigrationSucceeded or MigrationFailed).
const StorageMigrating = apiextensionsv1.StorageMigrating

// BusyError says a migration of the CRD's resource is under way already:
// a StorageVersionMigration not yet finished, or the CRD's StorageMigrating
// condition. Nothing was written.
type BusyError struct {
	CRD string
	// Migration is the StorageVersionMigration at work (from the list of
	// migrations, or the condition's message); empty when unknown.
	Migration string
	// Condition is the CRD's StorageMigrating condition when it is True.
	Condition *apiextensionsv1.CustomResourceDefinitionCondition
}

func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "a storage migration of crd %s is under way", e.CRD)
	if e.Migration != "" {
		fmt.Fprintf(&b, " (StorageVersionMigration %s", e.Migration)
		if e.Condition != nil {
			fmt.Fprintf(&b, "; the crd's condition StorageMigrating=True since %s: %s", e.Condition.LastTransitionTime.UTC().Format(time.RFC3339), e.Condition.Message)
		}
		b.WriteString(")")
	} else if e.Condition != nil {
		fmt.Fprintf(&b, " (the crd's condition StorageMigrating=True since %s: %s)", e.Condition.LastTransitionTime.UTC().Format(time.RFC3339), e.Condition.Message)
	}
	b.WriteString(": nothing written; wait until it ends")
	if e.Migration != "" {
		fmt.Fprintf(&b, " (kubectl get storageversionmigration %s), or delete it if it is stuck", e.Migration)
	}
	return b.String()
}

// WebhookError says the CRD's conversion webhook failed the health check
// made before the first write: an object read through the API server at
// a version that needs a conversion. Nothing was written.
type WebhookError struct {
	CRD             string
	Namespace, Name string
	Version         string
	Err             error
}

func (e *WebhookError) Error() string {
	what := "listing its objects"
	if e.Name != "" {
		what = "reading " + e.Name
		if e.Namespace != "" {
			what = "reading " + e.Namespace + "/" + e.Name
		}
	}
	return fmt.Sprintf("the conversion webhook of crd %s is not healthy: %s at %s through the API server: %v; nothing written (hubspoke doctor %s says why)", e.CRD, what, e.Version, e.Err, e.CRD)
}

func (e *WebhookError) Unwrap() error { return e.Err }

// svmFromUnstructured decodes a StorageVersionMigration.
func svmFromUnstructured(u map[string]any) (*svmv1.StorageVersionMigration, error) {
	var svm svmv1.StorageVersionMigration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &svm); err != nil {
		return nil, fmt.Errorf("decode storageversionmigration: %w", err)
	}
	return &svm, nil
}

// svmFinished tells whether a StorageVersionMigration has succeeded or
// failed.
func svmFinished(svm *svmv1.StorageVersionMigration) bool {
	return meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)) ||
		meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationFailed))
}

// ActiveMigrations lists the StorageVersionMigrations of the CRD's resource
// that have not finished: running, or waiting for the one running (the
// cluster runs one per resource at a time). served is false when the API
// server does not serve storagemigration.k8s.io/v1 (before Kubernetes
// 1.37, or turned off), and then the list is empty.
func ActiveMigrations(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) (active []*svmv1.StorageVersionMigration, served bool, err error) {
	list, err := dyn.Resource(SVMResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("list storageversionmigrations: %w", err)
	}
	for i := range list.Items {
		svm, err := svmFromUnstructured(list.Items[i].Object)
		if err != nil {
			return nil, true, err
		}
		if svm.Spec.Resource.Group == crd.Spec.Group && svm.Spec.Resource.Resource == crd.Spec.Names.Plural && !svmFinished(svm) {
			active = append(active, svm)
		}
	}
	return active, true, nil
}

// migratingCondition returns the CRD's StorageMigrating condition when it
// is True, else nil.
func migratingCondition(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		c := &crd.Status.Conditions[i]
		if c.Type == StorageMigrating && c.Status == apiextensionsv1.ConditionTrue {
			return c
		}
	}
	return nil
}

// migrationInMessage reads the migration's name from the message the
// cluster's migrator sets ("Migration NAME is running").
func migrationInMessage(msg string) string {
	name, ok := strings.CutPrefix(msg, "Migration ")
	if !ok {
		return ""
	}
	name, ok = strings.CutSuffix(name, " is running")
	if !ok {
		return ""
	}
	return name
}

// checkNotBusy fails with a *BusyError while a StorageVersionMigration of
// the CRD's resource is unfinished, or the CRD's StorageMigrating
// condition is True for a migration that still exists (or that cannot be
// told apart: the migrations cannot be listed). A True condition whose
// migration is gone (deleted while it ran: the cluster's migrator then
// never sets it back to False) is stale, and is returned as a note.
func checkNotBusy(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) (note string, err error) {
	cond := migratingCondition(crd)
	active, served, err := ActiveMigrations(ctx, dyn, crd)
	listed := err == nil
	if err != nil && !apierrors.IsForbidden(err) {
		return "", err
	}
	if len(active) > 0 {
		return "", &BusyError{CRD: crd.Name, Migration: active[0].Name, Condition: cond}
	}
	if cond == nil {
		return "", nil
	}
	name := migrationInMessage(cond.Message)
	if !listed || !served || name == "" {
		// Not served at v1: a migrator of Kubernetes 1.35 or 1.36 (at
		// v1beta1) may have set it.
		return "", &BusyError{CRD: crd.Name, Migration: name, Condition: cond}
	}
	_, err = dyn.Resource(SVMResource).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		// It exists and is finished: the migrator is about to set the
		// condition to False.
		return "", &BusyError{CRD: crd.Name, Migration: name, Condition: cond}
	}
	if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get storageversionmigration %s: %w", name, err)
	}
	return fmt.Sprintf("the crd's condition StorageMigrating=True names migration %s, which no longer exists (deleted while it ran): the condition is stale", name), nil
}

// checkWebhook reads a sample object through the API server at every
// served version, so that the CRD's conversion webhook converts it at
// least once, and fails with a *WebhookError if a read fails. It does
// nothing for a CRD without a conversion webhook, or without objects.
func (r *run) checkWebhook(ctx context.Context) error {
	crd := r.crd
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil
	}
	served := servedVersions(crd)
	if len(served) < 2 {
		return nil
	}
	// The sample is the first object listed at the storage version, or
	// at another served version when that LIST fails (it fails as a whole
	// when one object does not convert: the migration names that one).
	var sample *metav1.PartialObjectMetadata
	var listErr error
	for _, v := range append([]string{r.storage}, served...) {
		listErr = r.retry(ctx, "list a sample", func() error {
			list, err := listClient(r.opts.Client, crd, v, r.opts.Namespace).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: r.opts.LabelSelector})
			if err != nil {
				return err
			}
			if len(list.Items) > 0 {
				sample = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: list.Items[0].GetNamespace(), Name: list.Items[0].GetName()}}
			}
			return nil
		})
		if listErr == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if listErr != nil {
		return &WebhookError{CRD: crd.Name, Version: r.storage, Err: listErr}
	}
	if sample == nil {
		return nil
	}
	for _, v := range served {
		err := r.retry(ctx, "read a sample", func() error {
			_, err := objectClient(r.opts.Client, crd, v, sample.Namespace).Get(ctx, sample.Name, metav1.GetOptions{})
			return err
		})
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return &WebhookError{CRD: crd.Name, Namespace: sample.Namespace, Name: sample.Name, Version: v, Err: err}
		}
	}
	return nil
}
