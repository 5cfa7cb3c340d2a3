package convert

import (
	"bytes"
	"fmt"
)

// Modifiers change when and how a rule applies; every rule kind takes
// them (package convert/rules reads them from the when, restore and
// dropIfEmpty parameters of a rule).
type Modifiers struct {
	// When, if set, is a cel predicate: the rule runs only where it gives
	// true (in both directions: on the spoke object on the way to the
	// hub, on the hub object on the way back, so it must read what is the
	// same on both sides, such as metadata or a field no rule changes).
	// self is the item the rule runs on for a path through lists or maps,
	// else the whole object; object is the whole object.
	When CELExpression
	// WhenSource is When as written, for messages.
	WhenSource string
	// KeptWins makes a kept value (an exact value, a field kept aside)
	// win over an edit made through the other version since it was kept;
	// by default the edit wins.
	KeptWins bool
	// DropIfEmpty removes the rule's destination when the rule leaves it
	// an empty object, as Go's omitempty drops an empty struct pointer:
	// the source value is kept in the preserved annotation, and restored
	// while the destination stays absent.
	DropIfEmpty bool
}

// Modify applies m to r, a rule built by this package on the paths from
// and to (for hubOnly, spokeOnly and the like, both are the rule's path).
// It returns r itself when m changes nothing.
func Modify(r Rule, from, to Path, m Modifiers) (Rule, error) {
	if m.When == nil && !m.KeptWins && !m.DropIfEmpty {
		return r, nil
	}
	if _, ok := r.(*funcRule); ok {
		return nil, fmt.Errorf("%s: when, restore and dropIfEmpty do not apply to Go funcs, which decide for themselves", r)
	}
	inner := r
	if sr, ok := r.(*scopedRule); ok {
		inner = sr.inner
		if !sameScope(from, sr.selectors()) {
			return nil, fmt.Errorf("%s: modifiers on paths %s and %s that are not the rule's", r, from, to)
		}
	}
	mr := &modRule{inner: inner, from: from.innerPath(), to: to.innerPath(), m: m}
	return scoped(mr, from), nil
}

// selectors returns a path holding only the selectors of r, to compare
// scopes.
func (r *scopedRule) selectors() Path { return Path{scope: r.scope} }

// modRule runs its inner rule under Modifiers.
type modRule struct {
	inner    Rule
	from, to Path // the inner rule's paths (under itemKey in a scope)
	m        Modifiers
}

func (r *modRule) String() string { return r.inner.String() }

func (r *modRule) paths() []Path {
	out := []Path{r.from, r.to, annotationsPath}
	if pr, ok := r.inner.(pathRule); ok {
		out = append(out, pr.paths()...)
	}
	return out
}

func (r *modRule) ToHub(o *Object) error   { return r.run(o, r.from, r.to, r.inner.ToHub) }
func (r *modRule) FromHub(o *Object) error { return r.run(o, r.to, r.from, r.inner.FromHub) }

func (r *modRule) run(o *Object, src, dst Path, apply func(*Object) error) error {
	if r.m.When != nil {
		ok, err := r.holds(o)
		if err != nil || !ok {
			return err
		}
	}
	if r.m.KeptWins && !o.keptWins {
		o.keptWins = true
		defer func() { o.keptWins = false }()
	}
	var before []byte // the source value, for dropIfEmpty
	if r.m.DropIfEmpty {
		n, err := o.lookup(src)
		if err != nil {
			return wrapRuleErr(r, src, err)
		}
		if n == nil {
			// A value that was converted to nothing comes back while
			// the destination stays absent.
			v, ok, err := o.takeExact(o.to, dst, nil)
			if err != nil || !ok {
				if err == nil {
					err = apply(o)
				}
				return wrapRuleErr(r, dst, err)
			}
			if cur, err := o.lookup(dst); err != nil || cur != nil && !o.keptWins {
				return wrapRuleErr(r, dst, err)
			}
			return wrapRuleErr(r, dst, o.set(dst, node{raw: o.st.keep(v)}))
		}
		before = o.st.keep(o.rawOf(n))
	}
	if err := apply(o); err != nil {
		return err
	}
	if before == nil {
		return nil
	}
	d, err := o.lookup(dst)
	if err != nil || d == nil || !isEmptyObject(o.rawOf(d)) {
		return wrapRuleErr(r, dst, err)
	}
	if _, _, err := o.del(dst); err != nil {
		return wrapRuleErr(r, dst, err)
	}
	if err := o.pruneEmpty(dst, commonPrefixLen(src, dst)); err != nil {
		return wrapRuleErr(r, dst, err)
	}
	return wrapRuleErr(r, src, o.keepExact(o.from, src, before, nil))
}

// holds evaluates the rule's when predicate on o.
func (r *modRule) holds(o *Object) (bool, error) {
	var self []byte
	if o.top != nil {
		self = o.rawOf(&o.root.obj.members[0].val) // the item
	} else {
		self = o.objectContext()
	}
	out, err := o.evalCEL(r.m.When, self)
	if err != nil {
		return false, &Error{Index: -1, Pointer: o.pointer(Path{}), Rule: r.String(), abs: true, Err: fmt.Errorf("when %s: %w", r.m.WhenSource, err)}
	}
	switch string(out) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, &Error{Index: -1, Pointer: o.pointer(Path{}), Rule: r.String(), abs: true, Err: fmt.Errorf("when %s gives %s, not a boolean", r.m.WhenSource, compact(out))}
}

// isEmptyObject reports whether raw is the JSON of an object with no
// member.
func isEmptyObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}
