package convert

import (
	"encoding/json"
	"errors"
	"fmt"
)

// onlyRule handles a field that exists in one version only. On the way out
// of that version the field is removed and its value kept in the preserved
// annotation (owned by that version); on the way back it is restored. A
// value that equals the rule's default (or derived value) is not kept,
// since the way back sets it anyway.
type onlyRule struct {
	kind   string // hubOnly, spokeOnly, constant or drop
	path   Path
	inHub  bool   // the hub has the field, the spoke lacks it
	def    []byte // raw JSON default, nil when none
	always bool   // constant: def is written whatever the parent
	drop   bool   // drop: kept only where it fits
	derive CELExpression
}

// OnlySide is a field that one side has and the other lacks, with what
// the side that has it holds when nothing was kept (see OnlyOn).
type OnlySide struct {
	Path Path
	// InHub says the hub has the field and the spoke lacks it (hubOnly);
	// else the spoke has it (spokeOnly).
	InHub bool
	// Default (raw JSON) is set when the object comes back without a kept
	// value, inside an existing parent object.
	Default []byte
	// Derive computes that value instead from the object (a cel
	// expression: self and object are the whole object, as the rules
	// before left it), say from a label; optional.none() gives none.
	Derive CELExpression
	// Constant writes Default always, creating missing parent objects:
	// the field is the constant Default on its side.
	Constant bool
	// Drop gives the field up on purpose: it is kept in the preserved
	// annotation only while the annotations stay within the API server's
	// limit, else dropped. The reason is the rule file's acknowledgeLoss.
	Drop bool
}

// HubOnly declares path a field only the hub has (say a new spec.paused).
// Converting to the spoke removes it and keeps it in the preserved
// annotation; converting back restores it. When the object reaches the hub
// without a kept value, def (raw JSON, may be nil) is set: a default, which
// is distinct from null and from zero.
func HubOnly(path Path, def []byte) (Rule, error) {
	return OnlyOn(OnlySide{Path: path, InHub: true, Default: def})
}

// SpokeOnly declares path a field only this spoke has (say one the hub
// dropped). Converting to the hub keeps it in the preserved annotation;
// converting back restores it, or sets def when nothing was kept.
func SpokeOnly(path Path, def []byte) (Rule, error) {
	return OnlyOn(OnlySide{Path: path, Default: def})
}

// OnlyOn builds the rule of a field one side has and the other lacks.
func OnlyOn(f OnlySide) (Rule, error) {
	kind := "spokeOnly"
	switch {
	case f.Drop:
		kind = "drop"
	case f.Constant:
		kind = "constant"
	case f.InHub:
		kind = "hubOnly"
	}
	path := f.Path
	if err := checkRulePath(path); err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	if _, _, ok := path.metaEntry(); ok {
		return nil, fmt.Errorf("%s %s: labels and annotations are in every version; move data to or from one with a rule that maps a field (rename, cel, ...)", kind, path)
	}
	if f.Default != nil && !json.Valid(f.Default) {
		return nil, fmt.Errorf("%s %s: default is not valid JSON", kind, path)
	}
	if f.Constant && f.Default == nil {
		return nil, fmt.Errorf("%s %s: the constant value is missing", kind, path)
	}
	if f.Derive != nil && (f.Default != nil || f.Drop) {
		return nil, fmt.Errorf("%s %s: a derived value replaces the default; give one of them", kind, path)
	}
	if path.HasSelectors() && len(path.segs) == 0 {
		return nil, fmt.Errorf("%s %s: name a field inside the items, not the items themselves", kind, path)
	}
	r := &onlyRule{kind: kind, path: path.innerPath(), inHub: f.InHub, def: f.Default, always: f.Constant, drop: f.Drop, derive: f.Derive}
	return scoped(r, path), nil
}

func (r *onlyRule) String() string { return fmt.Sprintf("%s %s", r.kind, r.path) }

func (r *onlyRule) paths() []Path { return []Path{r.path, annotationsPath} }

func (r *onlyRule) ToHub(o *Object) error {
	if r.inHub {
		return r.restore(o)
	}
	return r.strip(o)
}

func (r *onlyRule) FromHub(o *Object) error {
	if r.inHub {
		return r.strip(o)
	}
	return r.restore(o)
}

// value returns what the field holds when nothing was kept: the default,
// or the derived value (nil for none).
func (r *onlyRule) value(o *Object) ([]byte, error) {
	if r.derive == nil {
		return r.def, nil
	}
	self := o.objectContext()
	if o.top != nil {
		self = o.rawOf(&o.root.obj.members[0].val)
	}
	v, err := o.evalCEL(r.derive, self)
	if errors.Is(err, ErrNoForm) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("derive: %w", err)
	}
	return v, nil
}

// strip removes the field from an object leaving its version (o.from) and
// keeps it under that version.
func (r *onlyRule) strip(o *Object) error {
	n, ok, err := o.del(r.path)
	if err != nil {
		return wrapRuleErr(r, r.path, err)
	}
	if !ok {
		if r.always || r.derive != nil {
			// The way back writes a value: say there was none.
			if v, err := r.value(o); err != nil || v == nil {
				return wrapRuleErr(r, r.path, err)
			}
			return wrapRuleErr(r, r.path, o.keepPresence(o.from, r.path, false))
		}
		return nil
	}
	raw := o.rawOf(&n)
	if r.always {
		// The parents the way in creates for the constant go with it.
		if err := o.pruneEmpty(r.path, 1); err != nil {
			return wrapRuleErr(r, r.path, err)
		}
	}
	def, err := r.value(o)
	if err != nil {
		return wrapRuleErr(r, r.path, err)
	}
	if def != nil && jsonEqual(raw, def) {
		return nil
	}
	if r.drop {
		return wrapRuleErr(r, r.path, o.keepDroppable(o.from, r.path, raw))
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
	} else if cur != nil && !(ok && o.keptWins) {
		return nil
	}
	if ok {
		return wrapRuleErr(r, r.path, o.set(r.path, node{raw: o.st.keep(kept)}))
	}
	if r.always || r.derive != nil {
		if set, ok, err := o.takePresence(o.to, r.path); err != nil || ok && !set {
			return wrapRuleErr(r, r.path, err) // it had no value when it left
		}
	}
	def, err := r.value(o)
	switch {
	case err != nil:
		return wrapRuleErr(r, r.path, err)
	case def != nil && r.always:
		return wrapRuleErr(r, r.path, o.set(r.path, node{raw: o.st.keep(def)}))
	case def != nil:
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
		return wrapRuleErr(r, r.path, o.set(r.path, node{raw: o.st.keep(def)}))
	}
	return nil
}
