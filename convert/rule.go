package convert

import (
	"bytes"
	"fmt"

	"github.com/hubspoke/hubspoke/apirules"
)

// A Rule maps one aspect of a spoke version to the hub. Rules are written in
// the spoke -> hub direction; the engine runs them in order on the way to the
// hub and runs their inverses in reverse order on the way back. Every rule
// built by this package is checked to be invertible when it is made.
type Rule interface {
	// String names the rule in errors, e.g. "rename spec.replicas -> spec.size".
	String() string
	// ToHub applies the rule to an object on its way from the spoke to the hub.
	ToHub(o *Object) error
	// FromHub applies the inverse, on the way from the hub to the spoke.
	FromHub(o *Object) error
}

// pathRule is implemented by rules that know the paths they read, so the
// scanner can expand those objects while it validates the document.
type pathRule interface {
	paths() []Path
}

// ruleErr builds the Error of a rule failing at p.
func ruleErr(r Rule, p Path, format string, args ...any) error {
	return &Error{Index: -1, Pointer: p.plainPointer(), Rule: r.String(), Err: fmt.Errorf(format, args...)}
}

// wrapRuleErr attaches the rule to an error from the object model.
func wrapRuleErr(r Rule, p Path, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		if e.Rule == "" {
			e.Rule = r.String()
		}
		return e
	}
	return &Error{Index: -1, Pointer: p.plainPointer(), Rule: r.String(), Err: err}
}

// Func is a conversion written in Go, on the same raw object API as rules.
type Func func(o *Object) error

type funcRule struct {
	name           string
	toHub, fromHub Func
}

// Funcs makes a rule of two Go functions, for what declarative rules cannot
// express: toHub maps the spoke to the hub, fromHub maps back. Both are
// required; the engine cannot derive one from the other. name identifies the
// rule in errors.
func Funcs(name string, toHub, fromHub Func) (Rule, error) {
	if toHub == nil || fromHub == nil {
		return nil, fmt.Errorf("funcs %s: both the to-hub and the from-hub function are required, the engine cannot invert Go code", name)
	}
	return &funcRule{name: name, toHub: toHub, fromHub: fromHub}, nil
}

func (r *funcRule) String() string { return "funcs " + r.name }

func (r *funcRule) ToHub(o *Object) error { return wrapRuleErr(r, Path{}, r.toHub(o)) }

func (r *funcRule) FromHub(o *Object) error { return wrapRuleErr(r, Path{}, r.fromHub(o)) }

// move takes the value at src to dst. Missing stays missing; a null or zero
// value moves as it is. Parents of src that the move empties are removed
// below the paths' common prefix, mirroring the parents created for dst.
//
// A label or annotation is in every version: one the destination already
// holds is kept in the preserved annotation (owned by the version the
// object leaves) before it is overwritten, and one the source empties is
// restored from there.
func move(o *Object, r Rule, src, dst Path, conv func(node) (node, error)) error {
	if len(src.segs) == 3 || len(dst.segs) == 3 { // a label or annotation is metadata.labels[k]
		_, _, srcMeta := src.metaEntry()
		_, _, dstMeta := dst.metaEntry()
		if srcMeta || dstMeta {
			return moveMeta(o, r, src, dst, srcMeta, dstMeta, conv)
		}
	}
	if len(src.segs) == len(dst.segs) && commonPrefixLen(src, dst) >= len(src.segs)-1 {
		return moveWithin(o, r, src, dst, conv)
	}
	n, err := o.lookup(src)
	if err != nil {
		return wrapRuleErr(r, src, err)
	}
	if n == nil {
		return nil
	}
	v := *n
	if conv != nil && !v.isNull() {
		if v, err = conv(v); err != nil {
			return err
		}
	}
	if d, err := o.lookup(dst); err != nil {
		return wrapRuleErr(r, dst, err)
	} else if d != nil {
		return ruleErr(r, dst, "both %s and %s are set; refusing to overwrite %s", o.pointer(src), o.pointer(dst), o.pointer(dst))
	}
	if _, _, err := o.del(src); err != nil {
		return wrapRuleErr(r, src, err)
	}
	if err := o.set(dst, v); err != nil {
		return wrapRuleErr(r, dst, err)
	}
	return wrapRuleErr(r, src, o.pruneEmpty(src, commonPrefixLen(src, dst)))
}

// moveMeta is move where src or dst is a label or an annotation.
func moveMeta(o *Object, r Rule, src, dst Path, srcMeta, dstMeta bool, conv func(node) (node, error)) error {
	n, err := o.lookup(src)
	if err != nil {
		return wrapRuleErr(r, src, err)
	}
	if n == nil {
		if dstMeta && !src.Equal(dst) {
			// The object's own label, which the other version would read
			// as the field: kept aside, to come back with the object.
			if d, err := o.lookup(dst); err != nil {
				return wrapRuleErr(r, dst, err)
			} else if d != nil {
				if err := o.keepField(o.from, dst, o.st.keep(o.rawOf(d))); err != nil {
					return wrapRuleErr(r, dst, err)
				}
				if _, _, err := o.del(dst); err != nil {
					return wrapRuleErr(r, dst, err)
				}
				if err := o.pruneEmpty(dst, 1); err != nil {
					return wrapRuleErr(r, dst, err)
				}
			}
		}
		if srcMeta && !src.Equal(dst) {
			return wrapRuleErr(r, src, restoreMeta(o, src))
		}
		return nil
	}
	v := *n
	if conv != nil && !v.isNull() {
		if v, err = conv(v); err != nil {
			return err
		}
	}
	if dstMeta {
		if err := checkMetaValue(dst, v); err != nil {
			return ruleErr(r, dst, "%v", err)
		}
	}
	if d, err := o.lookup(dst); err != nil {
		return wrapRuleErr(r, dst, err)
	} else if d != nil && !(dstMeta && src.Equal(dst)) {
		if !dstMeta {
			return ruleErr(r, dst, "both %s and %s are set; refusing to overwrite %s", o.pointer(src), o.pointer(dst), o.pointer(dst))
		}
		// The object's own label: kept, to come back with it.
		if err := o.keepField(o.from, dst, o.st.keep(o.rawOf(d))); err != nil {
			return wrapRuleErr(r, dst, err)
		}
	}
	if !src.Equal(dst) {
		if _, _, err := o.del(src); err != nil {
			return wrapRuleErr(r, src, err)
		}
	}
	if err := o.set(dst, v); err != nil {
		return wrapRuleErr(r, dst, err)
	}
	if srcMeta && !src.Equal(dst) {
		if err := restoreMeta(o, src); err != nil {
			return wrapRuleErr(r, src, err)
		}
	}
	if field, _, _ := dst.metaEntry(); field == "annotations" {
		if size, err := o.whole().annotationsSize(); err != nil {
			return wrapRuleErr(r, dst, err)
		} else if size > apirules.MaxAnnotationsBytes {
			return ruleErr(r, dst, "writing the annotation grows metadata.annotations to %d bytes, over the API server's limit of %d bytes", size, apirules.MaxAnnotationsBytes)
		}
	}
	return wrapRuleErr(r, src, o.pruneEmpty(src, max(commonPrefixLen(src, dst), 1)))
}

// restoreMeta puts back the label or annotation at p that the version the
// object is converted to had before a rule wrote over it or set it aside.
func restoreMeta(o *Object, p Path) error {
	kept, ok, err := o.takeField(o.to, p)
	if err != nil || !ok {
		return err
	}
	return o.set(p, node{raw: o.st.keep(kept)})
}

// moveWithin is move for two keys of one object (or one key): the value
// keeps its position, under its new key.
func moveWithin(o *Object, r Rule, src, dst Path, conv func(node) (node, error)) error {
	parentPath := Path{segs: src.segs[:len(src.segs)-1]}
	parent, err := o.lookup(parentPath)
	if err != nil {
		return wrapRuleErr(r, src, err)
	}
	if parent == nil {
		return nil
	}
	srcKey, dstKey := src.segs[len(src.segs)-1], dst.segs[len(dst.segs)-1]
	if ok, err := o.st.expandFor(parent, srcKey); err != nil || !ok {
		return wrapRuleErr(r, src, err)
	}
	if _, err := o.st.expandFor(parent, dstKey); err != nil {
		return wrapRuleErr(r, src, err)
	}
	i := parent.obj.find(srcKey)
	if i < 0 {
		return nil
	}
	v := parent.obj.members[i].val
	if conv != nil && !v.isNull() {
		if v, err = conv(v); err != nil {
			return err
		}
		// conv may have grown the object's members (a kept value read
		// from the annotation does not, but stay safe).
		i = parent.obj.find(srcKey)
	}
	same := srcKey == dstKey
	if !same && parent.obj.find(dstKey) >= 0 {
		return ruleErr(r, dst, "both %s and %s are set; refusing to overwrite %s", o.pointer(src), o.pointer(dst), o.pointer(dst))
	}
	if err := o.markPath(parentPath); err != nil {
		return wrapRuleErr(r, src, err)
	}
	parent.obj.modified = true
	m := &parent.obj.members[i]
	if !same {
		m.rawKey = o.st.quote(dst.segs[len(dst.segs)-1])
		m.plain = bytes.IndexByte(m.rawKey, '\\') < 0
	}
	m.val = v
	return nil
}

// markPath marks every object on the way to p as modified.
func (o *Object) markPath(p Path) error {
	cur := &o.root
	for _, seg := range p.segs {
		ok, err := o.st.expandFor(cur, seg)
		if err != nil || !ok {
			return err
		}
		cur.obj.modified = true
		i := cur.obj.find(seg)
		if i < 0 {
			return nil
		}
		cur = &cur.obj.members[i].val
	}
	return nil
}

// checkPair checks the two paths of a rule and returns the paths its rule
// runs on: the paths themselves, or for paths through lists and maps, their
// inner paths (see scopedRule).
func checkPair(kind string, from, to Path) (Path, Path, error) {
	if err := checkRulePath(from); err != nil {
		return Path{}, Path{}, fmt.Errorf("%s: from: %w", kind, err)
	}
	if err := checkRulePath(to); err != nil {
		return Path{}, Path{}, fmt.Errorf("%s: to: %w", kind, err)
	}
	if err := checkScopes(kind, from, to); err != nil {
		return Path{}, Path{}, err
	}
	if !from.Equal(to) && (from.HasPrefix(to) || to.HasPrefix(from)) {
		return Path{}, Path{}, fmt.Errorf("%s: cannot move %s into or out of itself (%s); the inverse would be ambiguous", kind, from, to)
	}
	if n := len(from.scope); n > 0 && from.scope[n-1].sel.kind == selTree && !from.Equal(to) {
		st := from.scope[n-1]
		if k := st.segs[len(st.segs)-1]; len(from.segs) > 0 && from.segs[0] == k || len(to.segs) > 0 && to.segs[0] == k {
			return Path{}, Path{}, fmt.Errorf("%s: %s and %s change %q, the key under which the items of [**] hold their children, so the tree would not be the same on both sides", kind, from, to, k)
		}
	}
	return from.innerPath(), to.innerPath(), nil
}
