package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/schema"
)

// Converter converts the JSON of an object to toAPIVersion
// ("group/version"); *convert.Converter satisfies it.
type Converter interface {
	Convert(dst, obj []byte, toAPIVersion string) ([]byte, error)
}

// RestoreOptions configures Restore.
type RestoreOptions struct {
	Client dynamic.Interface
	// CRD overrides the CRD named in the backup. Its group and kind must
	// be the objects'.
	CRD string
	// Converter converts objects whose version the CRD no longer serves to
	// its storage version. Without it such objects fail the restore.
	Converter Converter
	// LabelSelector, when set, restores only the objects of the backup it
	// selects (kubectl's -l syntax).
	LabelSelector string
	// Progress, when set, is called after every object.
	Progress func(RestoreProgress)
	// DryRun sends every write with dryRun=All: each object is validated
	// and admitted as the real restore would write it, nothing is stored
	// (the status of an object a dry run creates is not sent: the object
	// does not exist for its status to be written to).
	DryRun bool
	// ListOnly reads and compares each object and writes nothing: the
	// counts are what a restore would do.
	ListOnly bool
}

// RestoreResult counts what Restore did.
type RestoreResult struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Converted int `json:"converted"`
}

// RestoreProgress is what Restore reports after every object.
type RestoreProgress struct {
	RestoreResult
	// Done objects of Total (the objects of the backup that are restored).
	Done, Total int
}

// RestoreError lists the objects of a backup that cannot be restored,
// found before anything was written.
type RestoreError struct {
	CRD      string
	Objects  int      // objects validated
	Problems []string // one per object (or namespace), naming it
}

func (e *RestoreError) Error() string {
	shown := e.Problems
	if len(shown) > 10 {
		shown = shown[:10]
	}
	msg := fmt.Sprintf("%d problems in the %d objects to restore into crd %s, nothing written: %s", len(e.Problems), e.Objects, e.CRD, strings.Join(shown, "; "))
	if len(e.Problems) > len(shown) {
		msg += fmt.Sprintf("; and %d more", len(e.Problems)-len(shown))
	}
	return msg
}

// restoreItem is one object of a backup ready to be written.
type restoreItem struct {
	obj       *unstructured.Unstructured // server-owned metadata stripped
	version   string                     // the version it is written at
	converted bool
	line      string // "backup line N: ", for messages
}

// Restore writes every object of b back: created when missing, updated
// when its content differs, left alone when equal, so running it twice
// changes nothing the second time. Objects at a version the CRD no longer
// serves are converted to the storage version with opts.Converter.
//
// Before the first write, every object is validated (*RestoreError):
// group and kind of the CRD, a name, a namespace that exists (none for a
// cluster-scoped CRD), a version the CRD serves or the converter converts;
// then a sample of each version is written with a server-side dry run.
func Restore(ctx context.Context, b *Backup, opts RestoreOptions) (*RestoreResult, error) {
	name := opts.CRD
	if name == "" {
		name = b.Header.CRD
	}
	crd, err := GetCRD(ctx, opts.Client, name)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	items, err := prepareRestore(ctx, opts.Client, b, crd, opts.Converter, opts.LabelSelector, true)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	w := restorer{client: opts.Client, crd: crd, dryRun: opts.DryRun, listOnly: opts.ListOnly}
	if !opts.ListOnly {
		if err := w.sample(ctx, items); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	}
	res := &RestoreResult{}
	for i, it := range items {
		if err := w.write(ctx, it, res); err != nil {
			return res, fmt.Errorf("restore: %s%w", it.line, err)
		}
		if it.converted {
			res.Converted++
		}
		if opts.Progress != nil {
			opts.Progress(RestoreProgress{RestoreResult: *res, Done: i + 1, Total: len(items)})
		}
	}
	return res, nil
}

// prepareRestore validates every object of b for crd (the CRD as it is
// when the objects are written) and returns them ready to write, or a
// *RestoreError listing every problem. With checkNamespaces, the
// namespaces the objects need are read from the API server.
func prepareRestore(ctx context.Context, dyn dynamic.Interface, b *Backup, crd *apiextensionsv1.CustomResourceDefinition, conv Converter, selector string, checkNamespaces bool) ([]restoreItem, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", selector, err)
	}
	storage, err := storageVersion(crd)
	if err != nil {
		return nil, err
	}
	var storageSchema *schema.Version
	if conv != nil {
		storageSchema = versionSchema(crd, storage)
	}
	rerr := &RestoreError{CRD: crd.Name}
	var (
		items      []restoreItem
		namespaces []string
	)
	for i, raw := range b.Objects {
		line := b.line(i)
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			rerr.Problems = append(rerr.Problems, fmt.Sprintf("%sdecode object: %v", line, err))
			continue
		}
		if !sel.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		rerr.Objects++
		key := objectKey(obj)
		problem := func(format string, args ...any) {
			rerr.Problems = append(rerr.Problems, fmt.Sprintf("%sobject %s: ", line, key)+fmt.Sprintf(format, args...))
		}
		group, version, _ := strings.Cut(obj.GetAPIVersion(), "/")
		switch {
		case obj.GetName() == "":
			problem("no metadata.name")
			continue
		case group != crd.Spec.Group || version == "":
			problem("apiVersion %q is not a version of group %s (crd %s)", obj.GetAPIVersion(), crd.Spec.Group, crd.Name)
			continue
		case obj.GetKind() != crd.Spec.Names.Kind:
			problem("kind %q, but crd %s holds %s", obj.GetKind(), crd.Name, crd.Spec.Names.Kind)
			continue
		case namespaced(crd) && obj.GetNamespace() == "":
			problem("no metadata.namespace, but crd %s is namespaced", crd.Name)
			continue
		case !namespaced(crd) && obj.GetNamespace() != "":
			problem("namespace %s, but crd %s is cluster-scoped", obj.GetNamespace(), crd.Name)
			continue
		}
		it := restoreItem{obj: obj, version: version, line: line}
		if !isServed(crd, version) {
			if conv == nil {
				problem("version %s is not served by crd %s (served: %s): give the conversion rules to convert it", version, crd.Name, strings.Join(servedVersions(crd), ", "))
				continue
			}
			out, err := convertObject(conv, raw, group+"/"+storage, storageSchema)
			if err != nil {
				problem("convert %s to %s: %v", version, storage, err)
				continue
			}
			it.obj, it.version, it.converted = &unstructured.Unstructured{Object: out}, storage, true
		}
		stripServerFields(it.obj)
		if ns := it.obj.GetNamespace(); ns != "" && !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
		items = append(items, it)
	}
	if checkNamespaces {
		for _, ns := range namespaces {
			var ne *NamespaceError
			if err := checkNamespace(ctx, dyn, crd, ns); errors.As(err, &ne) {
				n := 0
				for _, it := range items {
					if it.obj.GetNamespace() == ns {
						n++
					}
				}
				rerr.Problems = append(rerr.Problems, fmt.Sprintf("namespace %s of %d objects not found: create it first", ns, n))
			} else if err != nil {
				return nil, err
			}
		}
	}
	if len(rerr.Problems) > 0 {
		return nil, rerr
	}
	return items, nil
}

// convertObject converts raw to toAPIVersion with conv and coerces the
// result to v's schema as the API server would (nil: no schema known).
func convertObject(conv Converter, raw []byte, toAPIVersion string, v *schema.Version) (map[string]any, error) {
	out, err := conv.Convert(nil, raw, toAPIVersion)
	if err != nil {
		return nil, err
	}
	m, err := schema.DecodeObject(out)
	if err != nil {
		return nil, fmt.Errorf("the converted object: %w", err)
	}
	if v != nil {
		if err := check.Coerce(v, m); err != nil {
			return nil, fmt.Errorf("the converted object: %w", err)
		}
	}
	return m, nil
}

// versionSchema returns the schema of version of crd, or nil when it has
// none the API server would apply.
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) *schema.Version {
	if crd == nil {
		return nil
	}
	u, err := toUnstructured(crd)
	if err != nil {
		return nil
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil
	}
	c, err := schema.Load("crd "+crd.Name, data)
	if err != nil {
		return nil
	}
	return c.Version(version)
}

// restorer writes the objects of a restore.
type restorer struct {
	client   dynamic.Interface
	crd      *apiextensionsv1.CustomResourceDefinition
	dryRun   bool
	listOnly bool
}

// sample writes, with a server-side dry run, the first object of each
// version that the restore would create or update: the API server's
// validation and admission judge one object of each kind of write before
// the first real one.
func (w restorer) sample(ctx context.Context, items []restoreItem) error {
	dry := restorer{client: w.client, crd: w.crd, dryRun: true}
	sampled := map[string]bool{}
	tried := map[string]int{}
	for _, it := range items {
		if sampled[it.version] || tried[it.version] >= 20 {
			continue
		}
		tried[it.version]++
		var res RestoreResult
		if err := dry.write(ctx, it, &res); err != nil {
			return fmt.Errorf("%sserver dry run of a sample, nothing written: %w", it.line, err)
		}
		if res.Unchanged == 0 {
			sampled[it.version] = true
		}
	}
	return nil
}

// write creates, updates or leaves alone one object, and counts it in res.
func (w restorer) write(ctx context.Context, it restoreItem, res *RestoreResult) error {
	obj := it.obj.DeepCopy()
	named := func(err error) error {
		return &ObjectError{Namespace: obj.GetNamespace(), Name: obj.GetName(), Err: err}
	}
	var dryRun []string
	if w.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	client := objectClient(w.client, w.crd, it.version, obj.GetNamespace())
	status, hasStatus := obj.Object["status"]
	statusSub := hasStatusSubresource(w.crd, it.version)
	live, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		if sameContent(live, obj) {
			res.Unchanged++
			return nil
		}
		if w.listOnly {
			res.Updated++
			return nil
		}
		obj.SetResourceVersion(live.GetResourceVersion())
		out, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRun})
		if err != nil {
			return named(fmt.Errorf("update: %w", err))
		}
		if hasStatus && statusSub && !check.Equal(out.Object["status"], status) {
			out.Object["status"] = status
			if _, err := client.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRun}); err != nil {
				return named(fmt.Errorf("update status: %w", err))
			}
		}
		res.Updated++
	case isNotFound(err):
		if w.listOnly {
			res.Created++
			return nil
		}
		out, err := client.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, DryRun: dryRun})
		if err != nil {
			return named(fmt.Errorf("create: %w", err))
		}
		if hasStatus && statusSub && !w.dryRun {
			out.Object["status"] = status
			if _, err := client.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
				return named(fmt.Errorf("restore status: %w", err))
			}
		}
		res.Created++
	default:
		return named(fmt.Errorf("get: %w", err))
	}
	return nil
}

// stripServerFields removes the metadata the API server owns.
func stripServerFields(obj *unstructured.Unstructured) {
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
}

// Content returns the parts of an object a restore writes: everything but
// the metadata the API server owns. Two objects with equal Content are the
// same object as far as a backup is concerned.
func Content(obj *unstructured.Unstructured) map[string]any {
	c := obj.DeepCopy()
	stripServerFields(c)
	return c.Object
}

// sameContent compares the Content of two objects with hubspoke's one
// semantic JSON equality (check.Equal: numbers by value, key order never).
func sameContent(live, want *unstructured.Unstructured) bool {
	return check.Equal(Content(live), Content(want))
}
