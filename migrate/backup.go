package migrate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// BackupAPIVersion and BackupKind head every backup file.
const (
	BackupAPIVersion = "hubspoke.dev/v1alpha1"
	BackupKind       = "Backup"
)

// A backup file is JSON lines: a header, one line per object, a trailer.
//
//	{"apiVersion":"hubspoke.dev/v1alpha1","kind":"Backup","crd":"widgets.example.com","version":"v1",...}
//	{"sha256":"<hex of the object's bytes>","object":{...}}
//	{"count":2,"sha256":"<hex of every object's bytes, each followed by a newline>"}

// BackupHeader is the first line of a backup file.
type BackupHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// CRD is the CRD's name; Version the version the objects were read at.
	CRD     string    `json:"crd"`
	Version string    `json:"version"`
	Created time.Time `json:"created"`
	// Definition is the CRD as it was (for the record, and to restore it).
	Definition json.RawMessage `json:"definition,omitempty"`
}

type backupLine struct {
	SHA256 string          `json:"sha256"`
	Object json.RawMessage `json:"object"`
}

type backupTrailer struct {
	Count  int    `json:"count"`
	SHA256 string `json:"sha256"`
}

// Backup is a verified backup file.
type Backup struct {
	Header  BackupHeader
	Objects []json.RawMessage
	// SHA256 covers every object, each followed by a newline.
	SHA256 string
}

// BackupOptions configures WriteBackup.
type BackupOptions struct {
	CRD    string
	Client dynamic.Interface
	// Version to read the objects at (default: the storage version).
	Version string
	// Namespace, when set, limits the backup to one namespace (default:
	// every namespace).
	Namespace string
	// PageSize of the LIST (default DefaultPageSize).
	PageSize int64
}

// VersionError says a version is not one the CRD serves.
type VersionError struct {
	CRD     *apiextensionsv1.CustomResourceDefinition
	Version string
	// Nowhere: for a rollback, neither a given CRD file nor the backup
	// defines it, and status.storedVersions does not name it.
	Nowhere bool
}

func (e *VersionError) Error() string {
	var all, served []string
	for _, v := range e.CRD.Spec.Versions {
		all = append(all, v.Name)
		if v.Served {
			served = append(served, v.Name)
		}
	}
	if findVersion(e.CRD, e.Version) != nil {
		return fmt.Sprintf("%s is a version of crd %s that is not served (served: %s)", e.Version, e.CRD.Name, strings.Join(served, ", "))
	}
	if e.Nowhere {
		return fmt.Sprintf("%s is not a version of crd %s (versions: %s), nor of a given crd file or backup, and no object is stored in it (storedVersions: %s): nothing defines a %s to roll back to",
			e.Version, e.CRD.Name, strings.Join(all, ", "), strings.Join(e.CRD.Status.StoredVersions, ", "), e.Version)
	}
	return fmt.Sprintf("%s is not a version of crd %s (versions: %s)", e.Version, e.CRD.Name, strings.Join(all, ", "))
}

// BackupResult counts what WriteBackup wrote.
type BackupResult struct {
	Count   int
	SHA256  string
	Version string
}

// WriteBackup writes every object of the CRD, full content, to w.
func WriteBackup(ctx context.Context, w io.Writer, opts BackupOptions) (*BackupResult, error) {
	if opts.Client == nil || opts.CRD == "" {
		return nil, errors.New("backup: a client and a crd name are required")
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	crd, err := GetCRD(ctx, opts.Client, opts.CRD)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	version := opts.Version
	if version == "" {
		if version, err = storageVersion(crd); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	} else if !isServed(crd, version) {
		return nil, &VersionError{CRD: crd, Version: version}
	}
	def, err := toUnstructured(crd)
	if err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(def.Object, "metadata", "managedFields")
	defJSON, err := json.Marshal(def.Object)
	if err != nil {
		return nil, fmt.Errorf("backup: encode crd: %w", err)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(BackupHeader{APIVersion: BackupAPIVersion, Kind: BackupKind, CRD: opts.CRD, Version: version, Created: time.Now().UTC().Truncate(time.Second), Definition: defJSON}); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	total := sha256.New()
	count := 0
	client := listClient(opts.Client, crd, version, opts.Namespace)
	cont := ""
	for {
		list, err := client.List(ctx, metav1.ListOptions{Limit: opts.PageSize, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("backup %s: list at %s: %w", opts.CRD, version, err)
		}
		for i := range list.Items {
			data, err := json.Marshal(list.Items[i].Object)
			if err != nil {
				return nil, fmt.Errorf("backup: encode %s: %w", objectKey(&list.Items[i]), err)
			}
			sum := sha256.Sum256(data)
			if err := enc.Encode(backupLine{SHA256: hex.EncodeToString(sum[:]), Object: data}); err != nil {
				return nil, fmt.Errorf("backup: write: %w", err)
			}
			total.Write(data)
			total.Write([]byte{'\n'})
			count++
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	res := &BackupResult{Count: count, SHA256: hex.EncodeToString(total.Sum(nil)), Version: version}
	if err := enc.Encode(backupTrailer{Count: count, SHA256: res.SHA256}); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	return res, nil
}

// ReadBackup reads a backup file and verifies every checksum and the count.
// Errors name the line.
func ReadBackup(r io.Reader) (*Backup, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var (
		b       Backup
		line    int
		total   = sha256.New()
		trailer *backupTrailer
	)
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if trailer != nil {
			return nil, fmt.Errorf("backup line %d: data after the trailer", line)
		}
		if line == 1 {
			if err := json.Unmarshal(text, &b.Header); err != nil {
				return nil, fmt.Errorf("backup line 1: header: %w", err)
			}
			if b.Header.APIVersion != BackupAPIVersion || b.Header.Kind != BackupKind {
				return nil, fmt.Errorf("backup line 1: got apiVersion %q kind %q, want %s %s", b.Header.APIVersion, b.Header.Kind, BackupAPIVersion, BackupKind)
			}
			continue
		}
		var probe struct {
			Object json.RawMessage `json:"object"`
			Count  *int            `json:"count"`
			SHA256 string          `json:"sha256"`
		}
		if err := json.Unmarshal(text, &probe); err != nil {
			return nil, fmt.Errorf("backup line %d: %w", line, err)
		}
		if probe.Object == nil {
			if probe.Count == nil {
				return nil, fmt.Errorf("backup line %d: neither an object nor the trailer", line)
			}
			trailer = &backupTrailer{Count: *probe.Count, SHA256: probe.SHA256}
			continue
		}
		obj := compact(probe.Object)
		if len(obj) == 0 || obj[0] != '{' {
			return nil, fmt.Errorf("backup line %d: the object is not a JSON object", line)
		}
		sum := sha256.Sum256(obj)
		if got := hex.EncodeToString(sum[:]); got != probe.SHA256 {
			return nil, fmt.Errorf("backup line %d: checksum %s, want %s: the object was altered", line, got, probe.SHA256)
		}
		total.Write(obj)
		total.Write([]byte{'\n'})
		b.Objects = append(b.Objects, obj)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("backup line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("backup: empty file")
	}
	if trailer == nil {
		return nil, fmt.Errorf("backup: no trailer after %d objects: the file is truncated", len(b.Objects))
	}
	if trailer.Count != len(b.Objects) {
		return nil, fmt.Errorf("backup: %d objects, the trailer says %d", len(b.Objects), trailer.Count)
	}
	b.SHA256 = hex.EncodeToString(total.Sum(nil))
	if b.SHA256 != trailer.SHA256 {
		return nil, fmt.Errorf("backup: total checksum %s, the trailer says %s", b.SHA256, trailer.SHA256)
	}
	return &b, nil
}

func compact(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// Converter converts the JSON of an object to toAPIVersion
// ("group/version"); *convert.Converter satisfies it.
type Converter interface {
	Convert(dst, obj []byte, toAPIVersion string) ([]byte, error)
}

// RestoreOptions configures Restore.
type RestoreOptions struct {
	Client dynamic.Interface
	// CRD overrides the CRD named in the backup.
	CRD string
	// Converter converts objects whose version the CRD no longer serves to
	// its storage version. Without it such objects fail the restore.
	Converter Converter
	// Progress, when set, is called after every object.
	Progress func(RestoreResult)
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
	Created, Updated, Unchanged, Converted int
}

// Restore writes every object of b back: created when missing, updated
// when its content differs, left alone when equal, so running it twice
// changes nothing the second time. Objects at a version the CRD no longer
// serves are converted to the storage version with opts.Converter.
func Restore(ctx context.Context, b *Backup, opts RestoreOptions) (*RestoreResult, error) {
	name := opts.CRD
	if name == "" {
		name = b.Header.CRD
	}
	crd, err := GetCRD(ctx, opts.Client, name)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	storage, err := storageVersion(crd)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	res := &RestoreResult{}
	var dryRun []string
	if opts.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	for _, raw := range b.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return res, fmt.Errorf("restore: decode object: %w", err)
		}
		named := func(err error) error {
			return fmt.Errorf("restore: %w", &ObjectError{Namespace: obj.GetNamespace(), Name: obj.GetName(), Err: err})
		}
		group, version, _ := strings.Cut(obj.GetAPIVersion(), "/")
		if group != crd.Spec.Group {
			return res, named(fmt.Errorf("apiVersion %s is not of group %s", obj.GetAPIVersion(), crd.Spec.Group))
		}
		if !isServed(crd, version) {
			if opts.Converter == nil {
				return res, named(fmt.Errorf("version %s is not served by crd %s: give the conversion rules to convert it", version, name))
			}
			out, err := opts.Converter.Convert(nil, raw, group+"/"+storage)
			if err != nil {
				return res, named(fmt.Errorf("convert %s to %s: %w", version, storage, err))
			}
			obj = &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(out); err != nil {
				return res, named(fmt.Errorf("decode converted object: %w", err))
			}
			version = storage
			res.Converted++
		}
		stripServerFields(obj)
		client := objectClient(opts.Client, crd, version, obj.GetNamespace())
		status, hasStatus := obj.Object["status"]
		statusSub := hasStatusSubresource(crd, version)
		live, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			if sameContent(live, obj) {
				res.Unchanged++
				break
			}
			if opts.ListOnly {
				res.Updated++
				break
			}
			obj.SetResourceVersion(live.GetResourceVersion())
			out, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRun})
			if err != nil {
				return res, named(fmt.Errorf("update: %w", err))
			}
			if hasStatus && statusSub && !reflect.DeepEqual(out.Object["status"], status) {
				out.Object["status"] = status
				if _, err := client.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRun}); err != nil {
					return res, named(fmt.Errorf("update status: %w", err))
				}
			}
			res.Updated++
		case isNotFound(err):
			if opts.ListOnly {
				res.Created++
				break
			}
			out, err := client.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, DryRun: dryRun})
			if err != nil {
				return res, named(fmt.Errorf("create: %w", err))
			}
			if hasStatus && statusSub && !opts.DryRun {
				out.Object["status"] = status
				if _, err := client.UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
					return res, named(fmt.Errorf("restore status: %w", err))
				}
			}
			res.Created++
		default:
			return res, named(fmt.Errorf("get: %w", err))
		}
		if opts.Progress != nil {
			opts.Progress(*res)
		}
	}
	return res, nil
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

func sameContent(live, want *unstructured.Unstructured) bool {
	return reflect.DeepEqual(Content(live), Content(want))
}

// ChangedSince lists, as namespace/name, the objects of b that exist now
// with another content than b holds: the ones a restore of b overwrites.
// Objects are compared at the backup's version when the CRD still serves
// it, else by resourceVersion (any write since the backup counts).
func ChangedSince(ctx context.Context, dyn dynamic.Interface, b *Backup, crdName string) ([]string, error) {
	if crdName == "" {
		crdName = b.Header.CRD
	}
	crd, err := GetCRD(ctx, dyn, crdName)
	if err != nil {
		return nil, err
	}
	version, byRV := b.Header.Version, false
	if !isServed(crd, version) {
		byRV = true
		if version, err = storageVersion(crd); err != nil {
			return nil, err
		}
	}
	live := map[string]*unstructured.Unstructured{}
	client := listClient(dyn, crd, version, "")
	cont := ""
	for {
		list, err := client.List(ctx, metav1.ListOptions{Limit: DefaultPageSize, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("list %s at %s: %w", crdName, version, err)
		}
		for i := range list.Items {
			live[objectKey(&list.Items[i])] = &list.Items[i]
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	var changed []string
	for _, raw := range b.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decode backed-up object: %w", err)
		}
		key := objectKey(obj)
		l, ok := live[key]
		switch {
		case !ok:
		case byRV && l.GetResourceVersion() != obj.GetResourceVersion():
			changed = append(changed, key)
		case !byRV && !sameContent(l, obj):
			changed = append(changed, key)
		}
	}
	slices.Sort(changed)
	return changed, nil
}
