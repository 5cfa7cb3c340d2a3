package convert

import (
	"encoding/json"
	"fmt"
)

// missingRule says what a missing field stands for on the other side:
// hub is the hub's value of a field the spoke lacks, spoke the spoke's
// value of a field the hub lacks (either may be nil). The field keeps its
// path; values other than these move unchanged.
//
// The mapping is made exact in both directions: a missing spoke field is
// hub in the hub, and hub in the hub is a missing spoke field, unless the
// spoke had hub set explicitly (then its presence is kept in the
// preserved annotation, and restored while the hub value is still hub);
// likewise for spoke. A field missing on both sides where the other
// direction would write a value is kept as missing the same way.
type missingRule struct {
	path       Path
	hub, spoke []byte // raw JSON, nil when not set
}

// Missing declares what a missing field at path stands for: hub is the
// value the hub holds for a spoke object without the field, spoke the
// value the spoke holds for a hub object without it (raw JSON; at least
// one). So false ↔ unset and nil ↔ default conversions are exact: the
// value is written only inside an existing parent object, as the API
// server's defaulting writes it, and an explicit value equal to it is
// told from a missing one through the preserved annotation.
func Missing(path Path, hub, spoke []byte) (Rule, error) {
	if err := checkRulePath(path); err != nil {
		return nil, fmt.Errorf("missing: %w", err)
	}
	if _, _, ok := path.metaEntry(); ok {
		return nil, fmt.Errorf("missing %s: a rule on absence names a field of the object, not a label or an annotation", path)
	}
	if hub == nil && spoke == nil {
		return nil, fmt.Errorf("missing %s: give the hub value, the spoke value, or both", path)
	}
	for _, v := range [][]byte{hub, spoke} {
		if v != nil && !json.Valid(v) {
			return nil, fmt.Errorf("missing %s: %s is not valid JSON", path, v)
		}
	}
	if path.HasSelectors() && len(path.segs) == 0 {
		return nil, fmt.Errorf("missing %s: name a field inside the items, not the items themselves", path)
	}
	return scoped(&missingRule{path: path.innerPath(), hub: hub, spoke: spoke}, path), nil
}

func (r *missingRule) String() string {
	s := "missing " + r.path.String()
	if r.hub != nil {
		s += " (hub " + compact(r.hub) + ")"
	}
	if r.spoke != nil {
		s += " (spoke " + compact(r.spoke) + ")"
	}
	return s
}

func (r *missingRule) paths() []Path { return []Path{r.path, annotationsPath} }

// ToHub: fill is the hub's value of a missing spoke field, back the
// spoke's value of a missing hub field.
func (r *missingRule) ToHub(o *Object) error   { return r.run(o, r.hub, r.spoke) }
func (r *missingRule) FromHub(o *Object) error { return r.run(o, r.spoke, r.hub) }

// run converts the field from o.from to o.to: fill is what o.to holds for
// a field o.from lacks, back what o.from holds for a field o.to lacks.
func (r *missingRule) run(o *Object, fill, back []byte) error {
	p := r.path
	n, err := o.lookup(p)
	if err != nil {
		return wrapRuleErr(r, p, err)
	}
	if n == nil {
		// Missing in o.from. Was it missing in o.to too, when the object
		// left it?
		if set, ok, err := o.takePresence(o.to, p); err != nil || ok && !set {
			return wrapRuleErr(r, p, err)
		}
		if fill != nil {
			return wrapRuleErr(r, p, r.fill(o, fill))
		}
		if back != nil && r.hasParent(o) {
			// Missing on both sides, where the way back writes back.
			return wrapRuleErr(r, p, o.keepPresence(o.from, p, false))
		}
		return nil
	}
	raw := o.rawOf(n)
	if back != nil && jsonEqual(raw, back) {
		// back stands for a missing field in o.to, unless o.to had it set.
		set, ok, err := o.takePresence(o.to, p)
		if err != nil {
			return wrapRuleErr(r, p, err)
		}
		if !(ok && set) {
			if _, _, err := o.del(p); err != nil {
				return wrapRuleErr(r, p, err)
			}
			return nil
		}
	}
	if fill != nil && jsonEqual(raw, fill) {
		// Set explicitly to what a missing field becomes: the way back
		// must not drop it.
		return wrapRuleErr(r, p, o.keepPresence(o.from, p, true))
	}
	return nil
}

// fill sets the field to v inside its parent object, when that exists.
func (r *missingRule) fill(o *Object, v []byte) error {
	if !r.hasParent(o) {
		return nil
	}
	return o.set(r.path, node{raw: v})
}

// hasParent reports whether the field's parent is an object of o.
func (r *missingRule) hasParent(o *Object) bool {
	if len(r.path.segs) < 2 {
		return true
	}
	parent, err := o.lookup(Path{segs: r.path.segs[:len(r.path.segs)-1]})
	return err == nil && parent != nil && parent.kind() == '{'
}
