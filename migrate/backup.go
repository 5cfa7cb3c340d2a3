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
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/hubspoke/hubspoke/apirules"
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
//	{"count":2,"header":"<hex of the header's bytes>","sha256":"<hex of every object's bytes, each followed by a newline>"}
//
// Every checksum is over compact JSON (json.Compact), so that whitespace
// is not a difference.

// BackupHeader is the first line of a backup file.
type BackupHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// CRD is the CRD's name; Version the version the objects were read at.
	CRD     string    `json:"crd"`
	Version string    `json:"version"`
	Created time.Time `json:"created"`
	// Namespace and LabelSelector say the backup holds part of the CRD's
	// objects: those of one namespace, or those selected.
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	// Definition is the CRD as it was (for the record, and to restore it).
	Definition json.RawMessage `json:"definition,omitempty"`
}

type backupLine struct {
	SHA256 string          `json:"sha256"`
	Object json.RawMessage `json:"object"`
}

type backupTrailer struct {
	Count  int    `json:"count"`
	Header string `json:"header"`
	SHA256 string `json:"sha256"`
}

// Backup is a verified backup file.
type Backup struct {
	Header  BackupHeader
	Objects []json.RawMessage
	// SHA256 covers every object, each followed by a newline;
	// HeaderSHA256 the header.
	SHA256       string
	HeaderSHA256 string

	lines []int // the line of each object in the file, when read from one
}

// line returns "backup line N: " for object i when known.
func (b *Backup) line(i int) string {
	if i < len(b.lines) {
		return fmt.Sprintf("backup line %d: ", b.lines[i])
	}
	return ""
}

// BackupOptions configures WriteBackup.
type BackupOptions struct {
	CRD    string
	Client dynamic.Interface
	// Version to read the objects at (default: the storage version).
	Version string
	// Namespace, when set, limits the backup to one namespace (default:
	// every namespace). A namespace that does not exist is an error
	// (*NamespaceError), and so is a namespace for a cluster-scoped CRD.
	Namespace string
	// LabelSelector, when set, limits the backup to the objects it
	// selects (kubectl's -l syntax).
	LabelSelector string
	// PageSize of the LIST (default DefaultPageSize).
	PageSize int64
	// Progress, when set, is called after every page with the objects
	// written so far and the total expected (listed plus the API server's
	// remainingItemCount).
	Progress func(done, total int)
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
	if _, err := labels.Parse(opts.LabelSelector); err != nil {
		return nil, fmt.Errorf("backup: label selector %q: %w", opts.LabelSelector, err)
	}
	crd, err := GetCRD(ctx, opts.Client, opts.CRD)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if err := checkNamespace(ctx, opts.Client, crd, opts.Namespace); err != nil {
		return nil, fmt.Errorf("backup %s: %w", opts.CRD, err)
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
	header, err := json.Marshal(BackupHeader{APIVersion: BackupAPIVersion, Kind: BackupKind, CRD: opts.CRD, Version: version,
		Created: time.Now().UTC().Truncate(time.Second), Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, Definition: defJSON})
	if err != nil {
		return nil, fmt.Errorf("backup: encode header: %w", err)
	}
	headerSum := sha256.Sum256(header)
	if _, err := bw.Write(append(header, '\n')); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	total := sha256.New()
	count := 0
	client := listClient(opts.Client, crd, version, opts.Namespace)
	cont := ""
	for {
		list, err := client.List(ctx, metav1.ListOptions{Limit: opts.PageSize, Continue: cont, LabelSelector: opts.LabelSelector})
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
		cont = list.GetContinue()
		if opts.Progress != nil {
			expected := count
			if rc := list.GetRemainingItemCount(); rc != nil && cont != "" {
				expected += int(*rc)
			}
			opts.Progress(count, expected)
		}
		if cont == "" {
			break
		}
	}
	res := &BackupResult{Count: count, SHA256: hex.EncodeToString(total.Sum(nil)), Version: version}
	if err := enc.Encode(backupTrailer{Count: count, Header: hex.EncodeToString(headerSum[:]), SHA256: res.SHA256}); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	return res, nil
}

// ReadBackup reads a backup file and verifies it: the header's checksum,
// every object's, the count, the total, and that no object (namespace and
// name) is there twice. Errors name the line.
func ReadBackup(r io.Reader) (*Backup, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var (
		b       Backup
		line    int
		total   = sha256.New()
		trailer *backupTrailer
		seen    = map[string]int{} // namespace/name -> line
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
			sum := sha256.Sum256(compact(text))
			b.HeaderSHA256 = hex.EncodeToString(sum[:])
			continue
		}
		var probe struct {
			Object json.RawMessage `json:"object"`
			Count  *int            `json:"count"`
			Header *string         `json:"header"`
			SHA256 string          `json:"sha256"`
		}
		if err := json.Unmarshal(text, &probe); err != nil {
			return nil, fmt.Errorf("backup line %d: %w", line, err)
		}
		if probe.Object == nil {
			if probe.Count == nil {
				return nil, fmt.Errorf("backup line %d: neither an object nor the trailer", line)
			}
			if probe.Header == nil {
				return nil, fmt.Errorf("backup line %d: the trailer has no checksum of the header: a backup written before hubspoke covered its header cannot be verified; take a new backup", line)
			}
			trailer = &backupTrailer{Count: *probe.Count, Header: *probe.Header, SHA256: probe.SHA256}
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
		head, err := apirules.ReadHead(obj)
		if err != nil {
			return nil, fmt.Errorf("backup line %d: %w", line, err)
		}
		if len(head.Name) == 0 {
			return nil, fmt.Errorf("backup line %d: the object has no metadata.name", line)
		}
		key := string(head.Name)
		if len(head.Namespace) > 0 {
			key = string(head.Namespace) + "/" + key
		}
		if first, ok := seen[key]; ok {
			return nil, fmt.Errorf("backup line %d: object %s again (first on line %d): a backup holds each object once", line, key, first)
		}
		seen[key] = line
		total.Write(obj)
		total.Write([]byte{'\n'})
		b.Objects = append(b.Objects, obj)
		b.lines = append(b.lines, line)
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
	if trailer.Header != b.HeaderSHA256 {
		return nil, fmt.Errorf("backup line 1: header checksum %s, the trailer says %s: the header was altered", b.HeaderSHA256, trailer.Header)
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
