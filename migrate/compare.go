package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/schema"
)

// CompareOptions configures ChangedSince.
type CompareOptions struct {
	// CRD overrides the CRD named in the backup.
	CRD string
	// Converter converts objects between the backup's version and the
	// storage version. With it, both sides of the comparison go through
	// the same conversions (see ChangedSince); without it, objects are
	// read at the backup's version through the API server, which must
	// still serve it.
	Converter Converter
	// Prober, when there is no Converter, converts through the CRD's
	// conversion webhook instead (one review per conversion).
	Prober Prober
	// Definition defines the backup's version when the live CRD no longer
	// does (default: the CRD in the backup's header); its schema's
	// defaults are applied as the API server applies them.
	Definition *apiextensionsv1.CustomResourceDefinition
}

// Changed is an object of a backup that exists now with another content.
type Changed struct {
	// Key is namespace/name (name for a cluster-scoped CRD).
	Key string `json:"key"`
	// Pointers are the JSON pointers of the first differences, at the
	// backup's version (at most 3), or why the object cannot be compared.
	Pointers []string `json:"pointers,omitempty"`
}

func (c Changed) String() string {
	if len(c.Pointers) == 0 {
		return c.Key
	}
	return c.Key + " (" + strings.Join(c.Pointers, ", ") + ")"
}

// ChangedSince lists the objects of b that exist now with another content
// than b holds, sorted by key: the ones a restore of b overwrites. Objects
// created since are not listed (a restore leaves them alone), nor are
// those deleted since (a restore creates them again).
//
// The comparison is of content (everything but the metadata the API
// server owns), semantically (check.Equal), at the backup's version. An
// object that a migration re-encoded and nobody edited is unchanged: with
// a Converter, the backed-up object is taken through the same conversions
// as the live one (to the storage version, coerced to its schema as the
// API server does, and back to the backup's version), and the live one is
// converted to the backup's version, so that a conversion's own changes
// (defaults, lossy fields) are on both sides. Without one, the live
// objects are read at the backup's version through the API server.
func ChangedSince(ctx context.Context, dyn dynamic.Interface, b *Backup, opts CompareOptions) ([]Changed, error) {
	crdName := opts.CRD
	if crdName == "" {
		crdName = b.Header.CRD
	}
	crd, err := GetCRD(ctx, dyn, crdName)
	if err != nil {
		return nil, err
	}
	storage, err := storageVersion(crd)
	if err != nil {
		return nil, err
	}
	bv := b.Header.Version
	readAt := bv
	if opts.Converter == nil && opts.Prober != nil {
		opts.Converter = proberConverter{ctx: ctx, prober: opts.Prober, crd: crd}
	}
	if opts.Converter != nil {
		readAt = storage
	} else if !isServed(crd, bv) {
		return nil, fmt.Errorf("crd %s no longer serves %s, the version of the backup: give the conversion rules (or the webhook's address) to compare its objects at %s", crdName, bv, bv)
	}
	var backupSchema, storageSchema *schema.Version
	if opts.Converter != nil {
		storageSchema = versionSchema(crd, storage)
		def := crd
		if findVersion(crd, bv) == nil {
			def = opts.Definition
			if def == nil || findVersion(def, bv) == nil {
				def = backupDefinition(b)
			}
		}
		backupSchema = versionSchema(def, bv)
	}
	group := crd.Spec.Group

	live := map[string]*unstructured.Unstructured{}
	client := listClient(dyn, crd, readAt, b.Header.Namespace)
	cont := ""
	for {
		list, err := client.List(ctx, metav1.ListOptions{Limit: DefaultPageSize, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("list %s at %s: %w", crdName, readAt, err)
		}
		for i := range list.Items {
			live[objectKey(&list.Items[i])] = &list.Items[i]
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}

	var changed []Changed
	for i, raw := range b.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("%sdecode backed-up object: %w", b.line(i), err)
		}
		key := objectKey(obj)
		l, ok := live[key]
		if !ok {
			continue
		}
		want, got := obj.Object, l.Object
		if opts.Converter != nil {
			if want, got, err = throughConversion(opts.Converter, raw, l, group, bv, storage, storageSchema, backupSchema); err != nil {
				changed = append(changed, Changed{Key: key, Pointers: []string{err.Error()}})
				continue
			}
		}
		wc := Content(&unstructured.Unstructured{Object: want})
		gc := Content(&unstructured.Unstructured{Object: got})
		if check.Equal(wc, gc) {
			continue
		}
		d := check.Diffs(wc, gc, nil)
		if len(d) > 3 {
			d = append(d[:3], fmt.Sprintf("%d more", len(d)-3))
		}
		changed = append(changed, Changed{Key: key, Pointers: d})
	}
	slices.SortFunc(changed, func(a, b Changed) int { return strings.Compare(a.Key, b.Key) })
	return changed, nil
}

// throughConversion returns the backed-up object (raw, at version bv) and
// the live one (at storage) as both read at bv after a migration to
// storage: raw converted to storage, coerced, converted back; live
// converted to bv. Each conversion's result is coerced to the target's
// schema, as the API server does after every conversion.
func throughConversion(conv Converter, raw []byte, live *unstructured.Unstructured, group, bv, storage string, storageSchema, backupSchema *schema.Version) (want, got map[string]any, err error) {
	liveJSON, err := json.Marshal(live.Object)
	if err != nil {
		return nil, nil, err
	}
	if bv == storage {
		want, err = schema.DecodeObject(raw)
		if err != nil {
			return nil, nil, err
		}
		got, err = schema.DecodeObject(liveJSON)
		return want, got, err
	}
	atStorage, err := convertObject(conv, raw, group+"/"+storage, storageSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("backed-up object: convert to %s: %w", storage, err)
	}
	data, err := json.Marshal(atStorage)
	if err != nil {
		return nil, nil, err
	}
	if want, err = convertObject(conv, data, group+"/"+bv, backupSchema); err != nil {
		return nil, nil, fmt.Errorf("backed-up object: convert back to %s: %w", bv, err)
	}
	if got, err = convertObject(conv, liveJSON, group+"/"+bv, backupSchema); err != nil {
		return nil, nil, fmt.Errorf("live object: convert to %s: %w", bv, err)
	}
	return want, got, nil
}

// proberConverter converts through a conversion webhook with a Prober, as
// the API server would. It lives for one ChangedSince call.
type proberConverter struct {
	ctx    context.Context
	prober Prober
	crd    *apiextensionsv1.CustomResourceDefinition
}

func (p proberConverter) Convert(dst, obj []byte, toAPIVersion string) ([]byte, error) {
	out, err := p.prober.Probe(p.ctx, p.crd, obj, toAPIVersion)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}
