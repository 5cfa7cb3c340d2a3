package rules

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// KindGrammar is one rule kind of the file format: the key that names it
// and the parameters it takes. Grammar lists them so that the Conversion
// resource's schema (package deploy) is built from the loader's own table,
// never from a copy of it.
type KindGrammar struct {
	Name   string
	Params []string
	// Modifiers are the parameters every kind of its sort takes (when,
	// restore, dropIfEmpty).
	Modifiers []string
}

// Grammar returns every rule kind and its parameters, sorted by kind.
func Grammar() []KindGrammar {
	out := make([]KindGrammar, 0, len(kinds))
	for name, k := range kinds {
		out = append(out, KindGrammar{Name: name, Params: slices.Clone(k.params), Modifiers: slices.Clone(k.mods)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SpecFields are the fields of spec a rule file may hold: the conversion
// (group, kind, hub, spokes) and the two the operator reads when the file
// is a Conversion object in a cluster (rollout, storage), which every
// other reader accepts and ignores.
var SpecFields = []string{"group", "kind", "hub", "spokes", "rollout", "storage"}

// Rollout is spec.rollout: how the operator rolls out a new generation of
// a Conversion object. Programs that serve a file ignore it.
type Rollout struct {
	// AcknowledgeDifferences lets the new rules answer differently from
	// the ones served now, for a stated reason (nil: they must agree).
	AcknowledgeDifferences *Acknowledgement
}

// Acknowledgement is spec.rollout.acknowledgeDifferences: the new rules
// may answer differently from generation FromGeneration, the one every
// replica serves when they are applied, because of Reason. Naming the
// generation makes the acknowledgement apply to one change only: the next
// change is compared with the generation served by then.
type Acknowledgement struct {
	FromGeneration int64
	Reason         string
}

// Storage is spec.storage: what the operator does to the stored objects
// once every replica serves a generation. Programs that serve a file
// ignore it.
type Storage struct {
	// Migrate re-encodes every object at the CRD's storage version.
	Migrate bool
	// PruneStoredVersions then sets status.storedVersions to the storage
	// version alone (needs Migrate).
	PruneStoredVersions bool
	// Backup writes every object to the operator's backup directory
	// before the migration (needs Migrate).
	Backup bool
}

// rollout reads spec.rollout.
func (l *loader) rollout(e entry) (*Rollout, error) {
	m, err := l.mapping(e.val, "spec.rollout", "acknowledgeDifferences")
	if err != nil {
		return nil, err
	}
	r := &Rollout{}
	ack, ok := m["acknowledgeDifferences"]
	if !ok {
		return r, nil
	}
	const field = "spec.rollout.acknowledgeDifferences"
	am, err := l.mapping(ack.val, field, "fromGeneration", "reason")
	if err != nil {
		return nil, err
	}
	a := &Acknowledgement{}
	g, ok := am["fromGeneration"]
	if !ok {
		return nil, l.errf(ack.val, field+".fromGeneration", "missing: name the generation the new rules may answer differently from (status.servedGeneration)")
	}
	if g.val.Kind != yaml.ScalarNode || g.val.ShortTag() != "!!int" {
		return nil, l.errf(g.val, field+".fromGeneration", "want a positive integer, got %s", kindName(g.val))
	}
	n, err := strconv.ParseInt(g.val.Value, 10, 64)
	if err != nil || n < 1 {
		return nil, l.errf(g.val, field+".fromGeneration", "want a positive integer, got %q", g.val.Value)
	}
	a.FromGeneration = n
	a.Reason = strings.TrimSpace(l.scalar(am, "reason"))
	if rn, ok := am["reason"]; !ok || rn.val.Kind != yaml.ScalarNode || a.Reason == "" || rn.val.ShortTag() != "!!str" {
		at := ack.val
		if ok {
			at = rn.val
		}
		return nil, l.errf(at, field+".reason", "want a sentence saying why the new rules may answer differently")
	}
	r.AcknowledgeDifferences = a
	return r, nil
}

// storage reads spec.storage.
func (l *loader) storage(e entry) (*Storage, error) {
	m, err := l.mapping(e.val, "spec.storage", "migrate", "pruneStoredVersions", "backup")
	if err != nil {
		return nil, err
	}
	s := &Storage{}
	for _, f := range []struct {
		k   string
		dst *bool
	}{{"migrate", &s.Migrate}, {"pruneStoredVersions", &s.PruneStoredVersions}, {"backup", &s.Backup}} {
		v, ok := m[f.k]
		if !ok {
			continue
		}
		if v.val.Kind != yaml.ScalarNode || v.val.ShortTag() != "!!bool" {
			return nil, l.errf(v.val, "spec.storage."+f.k, "want true or false, got %s", kindName(v.val))
		}
		*f.dst = v.val.Value == "true"
	}
	for _, k := range []string{"pruneStoredVersions", "backup"} {
		if v, ok := m[k]; ok && v.val.Value == "true" && !s.Migrate {
			return nil, l.errf(v.val, "spec.storage."+k, "needs migrate: true (objects are backed up, and storedVersions pruned, around a migration)")
		}
	}
	return s, nil
}
