package convert

import (
	"encoding/json"
	"fmt"
)

// onlyRule handles a field that exists in one version only. On the way out
// of that version the field is removed and its value kept in the preserved
// annotation (owned by that version); on the way back it is restored. A
// value that equals the rule's default is not kept, since the way back sets
// the default anyway.
type onlyRule struct {
	kind string // "hubOnly" or "spokeOnly"
	path Path
	def  []byte // raw JSON default, nil when none
}

// HubOnly declares path a field only the hub has (say a new spec.paused).
// Converting to the spoke removes it and keeps it in the preserved
// annotation; converting back restores it. When the object reaches the hub
// without a kept value, def (raw JSON, may be nil) is set: a default, which
// is distinct from null and from zero.
func HubOnly(path Path, def []byte) (Rule, error) { return newOnly("hubOnly", path, def) }

// SpokeOnly declares path a field only this spoke has (say one the hub
// dropped). Converting to the hub keeps it in the preserved annotation;
// converting back restores it, or sets def when nothing was kept.
func SpokeOnly(path Path, def []byte) (Rule, error) { return newOnly("spokeOnly", path, def) }

func newOnly(kind string, path Path, def []byte) (Rule, error) {
	if err := checkRulePath(path); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	if def != nil && !json.Valid(def) {
		return nil, fmt.Errorf("%s %s: default is not valid JSON", kind, path)
	}
	if path.HasSelectors() && len(path.segs) == 0 {
		return nil, fmt.Errorf("%s %s: name a field inside the items, not the items themselves", kind, path)
	}
	return scoped(&onlyRule{kind: kind, path: path.innerPath(), def: def}, path), nil
}

func (r *onlyRule) String() string { return fmt.Sprintf("%s %s", r.kind, r.path) }

func (r *onlyRule) paths() []Path { return []Path{r.path, annotationsPath} }

func (r *onlyRule) ToHub(o *Object) error {
	if r.kind == "hubOnly" {
		return r.restore(o)
	}
	return r.strip(o)
}

func (r *onlyRule) FromHub(o *Object) error {
	if r.kind == "hubOnly" {
		return r.strip(o)
	}
	return r.restore(o)
}

// strip removes the field from an object leaving its version (o.from) and
// keeps it under that version.
func (r *onlyRule) strip(o *Object) error {
	n, ok, err := o.del(r.path)
	if err != nil {
		return wrapRuleErr(r, r.path, err)
	}
	if !ok {
		return nil
	}
	raw := o.rawOf(&n)
	if r.def != nil && jsonEqual(raw, r.def) {
		return nil
	}
	return wrapRuleErr(r, r.path, o.keepField(o.from, r.path, raw))
}

// restore puts the field back on an object entering its version (o.to). A
// value already present on the object (an edit made through the other
// version) wins over the kept one.
func (r *onlyRule) restore(o *Object) error {
	kept, ok, err := o.takeField(o.to, r.path)
	if err != nil {
		return wrapRuleErr(r, r.path, err)
	}
	if cur, err := o.lookup(r.path); err != nil {
		return wrapRuleErr(r, r.path, err)
	} else if cur != nil {
		return nil
	}
	switch {
	case ok:
		return wrapRuleErr(r, r.path, o.set(r.path, node{raw: o.st.keep(kept)}))
	case r.def != nil:
		// Like the API server's defaulting, a default fills a missing
		// field of an existing object; it never creates the object.
		if len(r.path.segs) > 1 {
			parent, err := o.lookup(Path{segs: r.path.segs[:len(r.path.segs)-1]})
			if err != nil {
				return wrapRuleErr(r, r.path, err)
			}
			if parent == nil || parent.kind() != '{' {
				return nil
			}
		}
		return wrapRuleErr(r, r.path, o.set(r.path, node{raw: r.def}))
	}
	return nil
}
