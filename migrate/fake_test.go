package migrate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// fakeAPI is a small API server behind a client-go dynamic fake: it keeps
// resourceVersions, answers conflicts, pages lists, and records in which
// version each object is "stored" (an object is re-encoded only by a write
// whose encoding differs, as the real etcd3 store does).
type fakeAPI struct {
	mu      sync.Mutex
	rv      int
	crd     *apiextensionsv1.CustomResourceDefinition
	objs    map[string]map[string]any // key -> object (apiVersion excluded)
	stored  map[string]string         // key -> version stored in
	writes  map[string]int            // key -> writes that reached storage
	updates int                       // update requests on objects
	dryRuns int                       // dry-run updates of the CRD
	// namespaces exist; put adds the namespace of each object it stores.
	namespaces map[string]bool
	// forbidNamespaces answers 403 to every read of a namespace.
	forbidNamespaces bool
	// writeLog records every write that reached storage, in order, as
	// "verb key" (verb: create, update, status).
	writeLog []string

	// refuseObject, when set, judges every create and update of an object
	// (dry run or not) as the API server's validation would.
	refuseObject func(*unstructured.Unstructured) error
	// refuseCRD, when set, judges a CRD update as the API server's
	// validation would: a non-nil error refuses it.
	refuseCRD func(*apiextensionsv1.CustomResourceDefinition) error

	// Faults: called (under no lock) before an update, get or list is
	// served; a non-nil error is returned instead.
	beforeUpdate func(key string, n int) error
	beforeList   func(version, cont string) error
	beforeGet    func(key string) error
	beforeCRD    func() error
	// onCRDUpdate is called (under no lock) before an update of the CRD
	// (dry run or not; subresource "status" or "") is judged: another
	// client's write there makes the update conflict, as it would on an
	// API server.
	onCRDUpdate func(dryRun bool, subresource string)

	listMu   sync.Mutex
	listOpts metav1.ListOptions

	// svms are the StorageVersionMigrations, by name; migrator, when set,
	// runs (in a goroutine) for each one created, as the cluster's
	// migrator would. noSVMAPI answers 404 to them, as an API server
	// that does not serve storagemigration.k8s.io/v1.
	svms     map[string]*unstructured.Unstructured
	migrator func(name string)
	noSVMAPI bool
	svmSeq   int
	// watchers receive a Modified event for every object the migrator
	// writes.
	watchers []*watch.RaceFreeFakeWatcher
	// svmGen is the CRD's generation when the migrator took each
	// migration up: at the end of one, as Kubernetes 1.37's runner does,
	// the fake prunes storedVersions if the generation is the same,
	// whether the migration succeeded or failed.
	svmGen map[string]int64
	// cacheLag makes the migrator start, as Kubernetes' does, only once
	// its cache of the resource has reached the migration's
	// resourceVersion: when an object is written after it, or after
	// cacheLag (the next bookmark of its watch); bookmarked says that it
	// waited that long.
	cacheLag   time.Duration
	bookmarked bool
}

const testGroup = "example.com"

func newFakeAPI(storage string, storedVersions []string, served ...string) *fakeAPI {
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: "crd-uid", ResourceVersion: "1", Generation: 1},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: testGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"}, ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr("https://webhook.invalid/convert")},
			}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: storedVersions},
	}
	for _, v := range []string{"v1alpha1", "v1"} {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: slices.Contains(served, v), Storage: v == storage,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	return &fakeAPI{rv: 1, crd: crd, objs: map[string]map[string]any{}, stored: map[string]string{}, writes: map[string]int{}, namespaces: map[string]bool{}}
}

// add stores n objects w-000.. in namespace ns at version.
func (f *fakeAPI) add(ns string, n int, version string) {
	for i := range n {
		f.put(ns, fmt.Sprintf("w-%03d", i), version, map[string]any{"spec": map[string]any{"size": int64(i)}})
	}
}

func (f *fakeAPI) put(ns, name, version string, body map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	obj := runtime.DeepCopyJSON(body)
	obj["kind"] = "Widget"
	obj["metadata"] = map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "resourceVersion": strconv.Itoa(f.rv)}
	key := ns + "/" + name
	f.objs[key] = obj
	f.stored[key] = version
	f.namespaces[ns] = true
}

func (f *fakeAPI) storage() string {
	s, _ := storageVersion(f.crd)
	return s
}

// pagingClient passes List's Limit and Continue to the fake, whose list
// actions drop them.
type pagingClient struct {
	dynamic.Interface
	f *fakeAPI
}

func (c pagingClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return pagingResource{c.Interface.Resource(gvr), c.f}
}

type pagingResource struct {
	dynamic.NamespaceableResourceInterface
	f *fakeAPI
}

func (r pagingResource) Namespace(ns string) dynamic.ResourceInterface {
	return pagingNamespaced{r.NamespaceableResourceInterface.Namespace(ns), r.f}
}

func (r pagingResource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.f.listMu.Lock()
	defer r.f.listMu.Unlock()
	r.f.listOpts = opts
	return r.NamespaceableResourceInterface.List(ctx, opts)
}

type pagingNamespaced struct {
	dynamic.ResourceInterface
	f *fakeAPI
}

func (r pagingNamespaced) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.f.listMu.Lock()
	defer r.f.listMu.Unlock()
	r.f.listOpts = opts
	return r.ResourceInterface.List(ctx, opts)
}

func (f *fakeAPI) client() dynamic.Interface {
	return pagingClient{f.fake(), f}
}

func (f *fakeAPI) fake() *dynamicfake.FakeDynamicClient {
	c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Group: testGroup, Version: "v1", Resource: "widgets"}:       "WidgetList",
		{Group: testGroup, Version: "v1alpha1", Resource: "widgets"}: "WidgetList",
		CRDResource: "CustomResourceDefinitionList",
		SVMResource: "StorageVersionMigrationList",
	})
	c.PrependReactor("*", "*", f.react)
	c.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w := watch.NewRaceFreeFake()
		f.watchers = append(f.watchers, w)
		return true, w, nil
	})
	return c
}

func (f *fakeAPI) react(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr := action.GetResource()
	if gvr == CRDResource {
		obj, err := f.reactCRD(action)
		return true, obj, err
	}
	if gvr == SVMResource {
		obj, err := f.reactSVM(action)
		return true, obj, err
	}
	if gvr == NamespaceResource {
		a, ok := action.(clienttesting.GetActionImpl)
		if !ok {
			return true, nil, fmt.Errorf("unexpected namespace action %T", action)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case f.forbidNamespaces:
			return true, nil, apierrors.NewForbidden(gvr.GroupResource(), a.GetName(), errors.New("no access"))
		case !f.namespaces[a.GetName()]:
			return true, nil, apierrors.NewNotFound(gvr.GroupResource(), a.GetName())
		}
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": a.GetName()}}}, nil
	}
	if gvr.Group != testGroup {
		return true, nil, fmt.Errorf("unexpected resource %v", gvr)
	}
	f.mu.Lock()
	served := isServed(f.crd, gvr.Version)
	f.mu.Unlock()
	if !served {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	switch a := action.(type) {
	case clienttesting.ListActionImpl:
		return f.list(gvr.Version, a.GetNamespace(), f.listOpts) // under listMu
	case clienttesting.GetActionImpl:
		key := a.GetNamespace() + "/" + a.GetName()
		if f.beforeGet != nil {
			if err := f.beforeGet(key); err != nil {
				return true, nil, err
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		obj, ok := f.objs[key]
		if !ok {
			return true, nil, apierrors.NewNotFound(gvr.GroupResource(), a.GetName())
		}
		return true, f.at(obj, gvr.Version), nil
	case clienttesting.UpdateActionImpl:
		return f.update(a, gvr)
	case clienttesting.CreateActionImpl:
		u := a.GetObject().(*unstructured.Unstructured)
		key := u.GetNamespace() + "/" + u.GetName()
		if f.refuseObject != nil {
			if err := f.refuseObject(u); err != nil {
				return true, nil, err
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.namespaces[u.GetNamespace()] {
			return true, nil, apierrors.NewNotFound(NamespaceResource.GroupResource(), u.GetNamespace())
		}
		if slices.Contains(a.GetCreateOptions().DryRun, metav1.DryRunAll) {
			f.dryRuns++
			return true, u.DeepCopy(), nil
		}
		if _, ok := f.objs[key]; ok {
			return true, nil, apierrors.NewAlreadyExists(gvr.GroupResource(), u.GetName())
		}
		f.rv++
		obj := runtime.DeepCopyJSON(u.Object)
		delete(obj, "apiVersion")
		delete(obj, "status") // the status subresource ignores it on create
		md := obj["metadata"].(map[string]any)
		md["resourceVersion"] = strconv.Itoa(f.rv)
		md["uid"] = "uid-" + u.GetName()
		f.objs[key] = obj
		f.stored[key] = f.storage()
		f.writes[key]++
		f.writeLog = append(f.writeLog, "create "+key)
		return true, f.at(obj, gvr.Version), nil
	case clienttesting.DeleteActionImpl:
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.objs, a.GetNamespace()+"/"+a.GetName())
		return true, nil, nil
	}
	return true, nil, fmt.Errorf("unexpected action %T", action)
}

// at returns obj as read at version.
func (f *fakeAPI) at(obj map[string]any, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	u.SetAPIVersion(testGroup + "/" + version)
	return u
}

func (f *fakeAPI) list(version, ns string, opts metav1.ListOptions) (bool, runtime.Object, error) {
	if f.beforeList != nil {
		if err := f.beforeList(version, opts.Continue); err != nil {
			return true, nil, err
		}
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.objs))
	for k, o := range f.objs {
		lbls, _, _ := unstructured.NestedStringMap(o, "metadata", "labels")
		if (ns == "" || strings.HasPrefix(k, ns+"/")) && sel.Matches(labels.Set(lbls)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if opts.Continue != "" {
		keys = keys[sort.SearchStrings(keys, opts.Continue):]
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": testGroup + "/" + version, "kind": "WidgetList"}}
	list.SetResourceVersion(strconv.Itoa(f.rv))
	n := len(keys)
	if opts.Limit > 0 && int64(n) > opts.Limit {
		n = int(opts.Limit)
		list.SetContinue(keys[n])
		rest := int64(len(keys) - n)
		list.SetRemainingItemCount(&rest)
	}
	for _, k := range keys[:n] {
		list.Items = append(list.Items, *f.at(f.objs[k], version))
	}
	return true, list, nil
}

func (f *fakeAPI) update(a clienttesting.UpdateActionImpl, gvr schema.GroupVersionResource) (bool, runtime.Object, error) {
	u := a.GetObject().(*unstructured.Unstructured)
	key := u.GetNamespace() + "/" + u.GetName()
	f.mu.Lock()
	f.updates++
	n := f.updates
	f.mu.Unlock()
	if f.beforeUpdate != nil {
		if err := f.beforeUpdate(key, n); err != nil {
			return true, nil, err
		}
	}
	if f.refuseObject != nil && a.Subresource == "" {
		if err := f.refuseObject(u); err != nil {
			return true, nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.objs[key]
	if !ok {
		return true, nil, apierrors.NewNotFound(gvr.GroupResource(), u.GetName())
	}
	oldRV, _, _ := unstructured.NestedString(old, "metadata", "resourceVersion")
	if u.GetResourceVersion() != oldRV {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), u.GetName(), fmt.Errorf("the object has been modified"))
	}
	next := runtime.DeepCopyJSON(u.Object)
	delete(next, "apiVersion")
	if a.Subresource == "status" {
		st := next["status"]
		next = runtime.DeepCopyJSON(old)
		next["status"] = st
	} else {
		next["status"] = old["status"]
		if next["status"] == nil {
			delete(next, "status")
		}
	}
	dry := slices.Contains(a.GetUpdateOptions().DryRun, metav1.DryRunAll)
	// The encoding differs when the content or the storage version does.
	if reflect.DeepEqual(next, old) && f.stored[key] == f.storage() || dry {
		return true, f.at(old, gvr.Version), nil
	}
	f.rv++
	unstructured.SetNestedField(next, strconv.Itoa(f.rv), "metadata", "resourceVersion")
	f.objs[key] = next
	f.stored[key] = f.storage()
	f.writes[key]++
	verb := "update "
	if a.Subresource == "status" {
		verb = "status "
	}
	f.writeLog = append(f.writeLog, verb+key)
	for _, w := range f.watchers {
		w.Modify(f.at(next, f.storage()))
	}
	return true, f.at(next, gvr.Version), nil
}

func (f *fakeAPI) reactCRD(action clienttesting.Action) (runtime.Object, error) {
	if f.beforeCRD != nil {
		if err := f.beforeCRD(); err != nil {
			return nil, err
		}
	}
	if a, ok := action.(clienttesting.UpdateActionImpl); ok && f.onCRDUpdate != nil {
		f.onCRDUpdate(slices.Contains(a.UpdateOptions.DryRun, metav1.DryRunAll), a.Subresource)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch a := action.(type) {
	case clienttesting.GetActionImpl:
		if a.GetName() != f.crd.Name {
			return nil, apierrors.NewNotFound(CRDResource.GroupResource(), a.GetName())
		}
		return toUnstructured(f.crd)
	case clienttesting.UpdateActionImpl:
		next, err := fromUnstructured(a.GetObject().(*unstructured.Unstructured))
		if err != nil {
			return nil, err
		}
		if next.ResourceVersion != f.crd.ResourceVersion {
			return nil, apierrors.NewConflict(CRDResource.GroupResource(), next.Name, fmt.Errorf("the object has been modified"))
		}
		if slices.Contains(a.UpdateOptions.DryRun, metav1.DryRunAll) {
			f.dryRuns++
			if f.refuseCRD != nil {
				if err := f.refuseCRD(next); err != nil {
					return nil, err
				}
			}
			return toUnstructured(next) // a dry run changes nothing
		}
		f.rv++
		if a.Subresource == "status" {
			f.crd.Status = next.Status
		} else {
			if !reflect.DeepEqual(next.Spec, f.crd.Spec) {
				f.crd.Generation++
			}
			f.crd.Spec = next.Spec
			if s, err := storageVersion(next); err == nil && !slices.Contains(f.crd.Status.StoredVersions, s) {
				f.crd.Status.StoredVersions = append(f.crd.Status.StoredVersions, s)
			}
		}
		f.crd.ResourceVersion = strconv.Itoa(f.rv)
		return toUnstructured(f.crd)
	}
	return nil, fmt.Errorf("unexpected crd action %T", action)
}

func (f *fakeAPI) reactSVM(action clienttesting.Action) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noSVMAPI {
		return nil, apierrors.NewNotFound(SVMResource.GroupResource(), "")
	}
	if f.svms == nil {
		f.svms = map[string]*unstructured.Unstructured{}
	}
	switch a := action.(type) {
	case clienttesting.ListActionImpl:
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigrationList"}}
		names := make([]string, 0, len(f.svms))
		for n := range f.svms {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			list.Items = append(list.Items, *f.svms[n].DeepCopy())
		}
		return list, nil
	case clienttesting.GetActionImpl:
		u, ok := f.svms[a.GetName()]
		if !ok {
			return nil, apierrors.NewNotFound(SVMResource.GroupResource(), a.GetName())
		}
		return u.DeepCopy(), nil
	case clienttesting.CreateActionImpl:
		u := a.GetObject().(*unstructured.Unstructured).DeepCopy()
		if u.GetName() == "" {
			f.svmSeq++
			u.SetName(u.GetGenerateName() + strconv.Itoa(f.svmSeq))
		}
		f.rv++
		u.SetResourceVersion(strconv.Itoa(f.rv))
		u.SetCreationTimestamp(metav1.Now())
		f.svms[u.GetName()] = u
		if f.migrator != nil {
			go f.migrator(u.GetName())
		}
		return u.DeepCopy(), nil
	case clienttesting.UpdateActionImpl:
		u := a.GetObject().(*unstructured.Unstructured)
		old, ok := f.svms[u.GetName()]
		if !ok {
			return nil, apierrors.NewNotFound(SVMResource.GroupResource(), u.GetName())
		}
		if u.GetResourceVersion() != old.GetResourceVersion() {
			return nil, apierrors.NewConflict(SVMResource.GroupResource(), u.GetName(), errors.New("the object has been modified"))
		}
		next := old.DeepCopy()
		next.Object["status"] = runtime.DeepCopyJSONValue(u.Object["status"])
		f.rv++
		next.SetResourceVersion(strconv.Itoa(f.rv))
		f.svms[u.GetName()] = next
		if svm, err := svmFromUnstructured(next.Object); err == nil && svmFinished(svm) {
			f.endMigration(u.GetName(), meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)))
		}
		return next.DeepCopy(), nil
	case clienttesting.DeleteActionImpl:
		if _, ok := f.svms[a.GetName()]; !ok {
			return nil, apierrors.NewNotFound(SVMResource.GroupResource(), a.GetName())
		}
		delete(f.svms, a.GetName())
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected storageversionmigration action %T", action)
}

// svm returns a StorageVersionMigration as stored.
func (f *fakeAPI) svm(name string) *svmv1.StorageVersionMigration {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.svms[name]
	if !ok {
		return nil
	}
	svm, err := svmFromUnstructured(u.Object)
	if err != nil {
		panic(err)
	}
	return svm
}

// setSVMStatus changes a migration's status as its controller would;
// false if it is gone or finished.
func (f *fakeAPI) setSVMStatus(name string, edit func(*svmv1.StorageVersionMigrationStatus)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.svms[name]
	if !ok {
		return false
	}
	svm, err := svmFromUnstructured(u.Object)
	if err != nil {
		panic(err)
	}
	if svmFinished(svm) {
		return false
	}
	edit(&svm.Status)
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(svm)
	if err != nil {
		panic(err)
	}
	f.rv++
	next := &unstructured.Unstructured{Object: m}
	next.SetResourceVersion(strconv.Itoa(f.rv))
	f.svms[name] = next
	return true
}

// fakeMigrator is the cluster's migrator as the fake plays it: it takes a
// migration up (Running, the CRD's StorageMigrating condition), rewrites
// every object at the storage version, except that from an object named
// in failOn on it retries a transient error for ever (as a conversion
// webhook failing makes it do); then Succeeded, the condition False and
// storedVersions pruned if the CRD's generation did not change.
func (f *fakeAPI) fakeMigrator(failOn string) func(name string) {
	return func(name string) {
		time.Sleep(5 * time.Millisecond)
		f.mu.Lock()
		gen := f.crd.Generation
		if f.svmGen == nil {
			f.svmGen = map[string]int64{}
		}
		f.svmGen[name] = gen
		setCRDCondition(f.crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionTrue,
			Reason: "MigrationRunning", Message: "Migration " + name + " is running"})
		f.rv++
		f.crd.ResourceVersion = strconv.Itoa(f.rv)
		rv := strconv.Itoa(f.rv)
		f.mu.Unlock()
		f.setSVMStatus(name, func(st *svmv1.StorageVersionMigrationStatus) {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning), Status: metav1.ConditionTrue, Reason: "MigrationRunning", Message: "The migration is running"})
			st.ResourceVersion = rv
		})
		f.waitCache(rv)
		f.mu.Lock()
		keys := make([]string, 0, len(f.objs))
		for k := range f.objs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		storage := f.storage()
		for i, k := range keys {
			if failOn != "" && strings.HasSuffix(k, "/"+failOn) {
				f.mu.Unlock()
				f.setSVMStatus(name, func(st *svmv1.StorageVersionMigrationStatus) {
					meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning), Status: metav1.ConditionTrue, Reason: "MigrationRunning",
						Message: fmt.Sprintf("The migration is running, %d/%d objects not yet migrated; transient error: Internal error occurred: conversion webhook for example.com/v1alpha1, Kind=Widget failed: injected", len(keys)-i, len(keys))})
				})
				return // retried for ever
			}
			if f.stored[k] != storage {
				f.rv++
				unstructured.SetNestedField(f.objs[k], strconv.Itoa(f.rv), "metadata", "resourceVersion")
				f.stored[k] = storage
				f.writes[k]++
				f.writeLog = append(f.writeLog, "migrator "+k)
				for _, w := range f.watchers {
					w.Modify(f.at(f.objs[k], storage))
				}
			}
		}
		f.mu.Unlock()
		f.setSVMStatus(name, func(st *svmv1.StorageVersionMigrationStatus) {
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning), Status: metav1.ConditionFalse, Reason: "MigrationCompleted", Message: "Migration completed"})
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(svmv1.MigrationSucceeded), Status: metav1.ConditionTrue, Reason: "StorageVersionMigrationSucceeded", Message: "Migration completed"})
		})
		f.mu.Lock()
		defer f.mu.Unlock()
		f.endMigration(name, true)
	}
}

// waitCache waits, with cacheLag set, until an object was written after
// rv or cacheLag passed (bookmarked).
func (f *fakeAPI) waitCache(rv string) {
	if f.cacheLag == 0 {
		return
	}
	since, _ := strconv.Atoi(rv)
	for deadline := time.Now().Add(f.cacheLag); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		for _, o := range f.objs {
			s, _, _ := unstructured.NestedString(o, "metadata", "resourceVersion")
			if n, _ := strconv.Atoi(s); n > since {
				f.mu.Unlock()
				return
			}
		}
		if time.Now().After(deadline) {
			f.bookmarked = true
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
	}
}

// endMigration is the runner's end of a migration (f.mu held): the CRD's
// condition False and, if the generation did not change since the
// migration began, storedVersions pruned — even when it failed, as
// Kubernetes 1.37 does.
func (f *fakeAPI) endMigration(name string, succeeded bool) {
	c := migratingCondition(f.crd)
	if c == nil || migrationInMessage(c.Message) != name {
		return
	}
	reason := "MigrationFailed"
	if succeeded {
		reason = "MigrationSucceeded"
	}
	setCRDCondition(f.crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: StorageMigrating, Status: apiextensionsv1.ConditionFalse, Reason: reason})
	if gen, ok := f.svmGen[name]; ok && gen == f.crd.Generation {
		f.crd.Status.StoredVersions = []string{f.storage()}
	}
	f.rv++
	f.crd.ResourceVersion = strconv.Itoa(f.rv)
}

func setCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	c.LastTransitionTime = metav1.Now()
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == c.Type {
			crd.Status.Conditions[i] = c
			return
		}
	}
	crd.Status.Conditions = append(crd.Status.Conditions, c)
}

// editCRD changes the CRD as another client would.
func (f *fakeAPI) editCRD(edit func(*apiextensionsv1.CustomResourceDefinition)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	edit(f.crd)
	f.rv++
	f.crd.ResourceVersion = strconv.Itoa(f.rv)
}

func (f *fakeAPI) storedIn() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.stored {
		if _, ok := f.objs[k]; ok {
			out[k] = v
		}
	}
	return out
}

// noSleep records the waits instead of sleeping.
type noSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *noSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func ptr[T any](v T) *T { return &v }
