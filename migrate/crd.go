package migrate

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// CRDResource is the resource through which CRDs are read and written.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// GetCRD reads the CRD name through dyn.
func GetCRD(ctx context.Context, dyn dynamic.Interface, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u, err := dyn.Resource(CRDResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get crd %s: %w", name, err)
	}
	return fromUnstructured(u)
}

func fromUnstructured(u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return nil, fmt.Errorf("decode crd %s: %w", u.GetName(), err)
	}
	return &crd, nil
}

func toUnstructured(crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return nil, fmt.Errorf("encode crd %s: %w", crd.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	return u, nil
}

// updateCRD writes crd's spec (with crd.ResourceVersion as precondition).
func updateCRD(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, dryRun ...string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u, err := toUnstructured(crd)
	if err != nil {
		return nil, err
	}
	out, err := dyn.Resource(CRDResource).Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRun})
	if err != nil {
		return nil, fmt.Errorf("update crd %s: %w", crd.Name, err)
	}
	return fromUnstructured(out)
}

// MaxCRDConflicts bounds how often a write of the CRD (an update by a plan
// step, the prune of storedVersions) reads the CRD again after a conflict.
const MaxCRDConflicts = 10

// CRDChangedError says a plan step did not write the CRD because its spec
// or storage version changed since the step's gates were measured on it.
type CRDChangedError struct {
	Seen, Now *apiextensionsv1.CustomResourceDefinition
}

func (e *CRDChangedError) Error() string {
	if e.Now.UID != e.Seen.UID {
		return fmt.Sprintf("nothing written: crd %s was deleted and created again since the step's gates were measured; run the plan again", e.Seen.Name)
	}
	return fmt.Sprintf("nothing written: crd %s changed since the step's gates were measured (%s); run the plan again", e.Seen.Name, changeDetail(e.Seen, e.Now))
}

// editCRD updates the CRD that the gates of a step were measured on
// (seen) with edit applied to it as freshly read. Only the CRD's status or
// metadata may have changed since (Kubernetes' own migrator writes its
// StorageMigrating condition, the API server its conditions; a caBundle
// injector its spec's caBundle): a read CRD that is another one (uid), or
// has another spec (generation; the caBundle aside) or storage version,
// is not written, and a *CRDChangedError says what
// changed. A conflict (a write between the read and the update) reads it
// again, at most MaxCRDConflicts times; the update never carries a stale
// resourceVersion. edit returns the CRD to write; it may change its
// argument.
func editCRD(ctx context.Context, dyn dynamic.Interface, seen *apiextensionsv1.CustomResourceDefinition, edit func(*apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition, dryRun ...string) (*apiextensionsv1.CustomResourceDefinition, error) {
	storage, _ := storageVersion(seen)
	for attempt := 0; ; attempt++ {
		now, err := GetCRD(ctx, dyn, seen.Name)
		if err != nil {
			return nil, err
		}
		nowStorage, _ := storageVersion(now)
		if now.UID != seen.UID || specChanged(seen, now) || nowStorage != storage {
			return nil, &CRDChangedError{Seen: seen, Now: now}
		}
		out, err := updateCRD(ctx, dyn, edit(now), dryRun...)
		if apierrors.IsConflict(err) && attempt < MaxCRDConflicts {
			continue // a status or metadata write meanwhile: judge it again
		}
		if apierrors.IsConflict(err) {
			return nil, fmt.Errorf("%w (still conflicting after %d fresh reads)", err, MaxCRDConflicts)
		}
		return out, err
	}
}

// specChanged tells whether now's spec differs from seen's (same uid) in
// more than the conversion webhook's caBundle. The bundle is another
// owner's (cert-manager's cainjector, hubspoke certs rotate, the sandbox
// inject it): a rotation must not stop a plan or a prune, and a write of
// the CRD as freshly read keeps it.
func specChanged(seen, now *apiextensionsv1.CustomResourceDefinition) bool {
	if now.Generation == seen.Generation {
		return false
	}
	a, b := seen.Spec.DeepCopy(), now.Spec.DeepCopy()
	for _, s := range []*apiextensionsv1.CustomResourceDefinitionSpec{a, b} {
		if s.Conversion != nil && s.Conversion.Webhook != nil && s.Conversion.Webhook.ClientConfig != nil {
			s.Conversion.Webhook.ClientConfig.CABundle = nil
		}
	}
	return !equality.Semantic.DeepEqual(a, b)
}

// storageVersion returns the one version marked storage: true.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	var found []string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			found = append(found, v.Name)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("crd %s has %d storage versions %v, want exactly one", crd.Name, len(found), found)
	}
	return found[0], nil
}

func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

func findVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func isServed(crd *apiextensionsv1.CustomResourceDefinition, name string) bool {
	v := findVersion(crd, name)
	return v != nil && v.Served
}

func resourceFor(crd *apiextensionsv1.CustomResourceDefinition, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
}

func namespaced(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Spec.Scope == apiextensionsv1.NamespaceScoped
}

func hasStatusSubresource(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	v := findVersion(crd, version)
	return v != nil && v.Subresources != nil && v.Subresources.Status != nil
}

func inStoredVersions(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	return slices.Contains(crd.Status.StoredVersions, version)
}

// objectClient returns the client for one object of crd at version.
func objectClient(dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, version, namespace string) dynamic.ResourceInterface {
	r := dyn.Resource(resourceFor(crd, version))
	if namespaced(crd) {
		return r.Namespace(namespace)
	}
	return r
}

// listClient lists the CRD's objects at version in namespace, or in every
// namespace when it is empty (or the CRD is cluster-scoped).
func listClient(dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, version, namespace string) dynamic.ResourceInterface {
	r := dyn.Resource(resourceFor(crd, version))
	if namespace != "" && namespaced(crd) {
		return r.Namespace(namespace)
	}
	return r
}

// NamespaceResource is the resource through which namespaces are read.
var NamespaceResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// NamespaceError says a namespace given to limit a run cannot be used: it
// does not exist, or the CRD is cluster-scoped.
type NamespaceError struct {
	Namespace string
	CRD       string
	// ClusterScoped: the CRD's objects have no namespace.
	ClusterScoped bool
}

func (e *NamespaceError) Error() string {
	if e.ClusterScoped {
		return fmt.Sprintf("crd %s is cluster-scoped: its objects have no namespace, so namespace %s selects nothing (leave -n out)", e.CRD, e.Namespace)
	}
	return fmt.Sprintf("namespace %s not found: no object of crd %s can be in it", e.Namespace, e.CRD)
}

// checkNamespace fails with a *NamespaceError when namespace is set and
// does not exist, or the CRD is cluster-scoped. A client not allowed to
// read namespaces (a user whose rights end at a namespace) cannot tell,
// and goes on.
func checkNamespace(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, namespace string) error {
	if namespace == "" {
		return nil
	}
	if !namespaced(crd) {
		return &NamespaceError{Namespace: namespace, CRD: crd.Name, ClusterScoped: true}
	}
	_, err := dyn.Resource(NamespaceResource).Get(ctx, namespace, metav1.GetOptions{})
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case apierrors.IsNotFound(err):
		return &NamespaceError{Namespace: namespace, CRD: crd.Name}
	}
	return fmt.Errorf("get namespace %s: %w", namespace, err)
}
