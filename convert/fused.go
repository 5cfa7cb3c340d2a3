package convert

import (
	"strings"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// A rename between two keys of every item of a list ([*]) is the commonest
// rule on list items, and often the only rule on its list. Then the scan
// does it as it reads the list: it validates each item as flatItems would
// and copies the list's bytes into the conversion's scratch memory with the
// key replaced, so that no item is recorded, walked by the rule or written
// again (about half of what a list item costs). The rule, when it runs,
// finds its list done.
//
// Whether a rename can be done so depends on the route (the rules a
// conversion from one version to another runs, in order): New works out,
// for each route, the renames that are the only rule touching their list
// (no other rule's path is a prefix of the list's or under it, and no rule
// without paths, such as Funcs, on the route). The scan knows its route
// from the object's apiVersion when it is the object's first member, as
// the API server writes it; otherwise no rename is fused.
//
// Anything off the compact path (space, an escaped key or string value, a
// non-ASCII string, an item that is not an object, an item holding both
// keys or one twice, an error)
// makes the scan read the list as it reads any other: the rule then runs
// on the items as usual and says what is wrong.

// noFusedRenames makes the scan read every list, leaving renames to their
// rules: the tests' reference for fusedList.
var noFusedRenames = false

// fusedRename is a rename the scan does on the list at path at, whose
// trie node is t.
type fusedRename struct {
	t        *trie
	at       Path
	rule     *scopedRule
	dir      int    // 0: ToHub (key 0 to key 1), 1: FromHub
	from, to []byte // the keys, quoted
}

// fusedPlans returns, for each route (from, to: indexes of c.versions),
// the renames its scan may do: plans[from*len(c.versions)+to], nil when
// none.
func (c *Converter) fusedPlans() [][]fusedRename {
	plans := make([][]fusedRename, len(c.routes))
	for i, steps := range c.routes {
		plans[i] = c.fusedRoute(steps)
	}
	return plans
}

// fusedRoute returns the renames of steps that the scan may do.
func (c *Converter) fusedRoute(steps []routeStep) []fusedRename {
	var out []fusedRename
	for i, s := range steps {
		r, ok := s.r.(*scopedRule)
		if !ok || r.rename == nil || !r.plain[0] || !r.plain[1] || len(r.scope) != 1 || r.scope[0].sel.kind != selItems {
			continue
		}
		at := r.at[0]
		alone := true
		for j, o := range steps {
			if j == i {
				continue
			}
			pr, ok := o.r.(pathRule)
			if !ok {
				return nil // a rule that may touch anything (Funcs)
			}
			for _, p := range pr.paths() {
				if p.HasPrefix(at) || at.HasPrefix(p) {
					alone = false
				}
			}
		}
		t := c.trie
		for _, seg := range at.segs {
			t = t.child(quoteAsWritten(seg))
		}
		if !alone || t == nil || t.items == nil {
			continue
		}
		from, to := r.quoted[s.dir], r.quoted[1-s.dir]
		out = append(out, fusedRename{t: t, at: at, rule: r, dir: s.dir, from: from, to: to})
	}
	if len(out) > 64 {
		out = out[:64] // the scan's record of what it did is a word
	}
	return out
}

// planFor returns the renames the scan of obj, converted to toAPIVersion,
// may do: none unless obj opens with its apiVersion.
func (c *Converter) planFor(obj []byte, to string) []fusedRename {
	if c.plans == nil || noFusedRenames {
		return nil
	}
	const open = `{"apiVersion":`
	if len(obj) < len(open)+2 || string(obj[:len(open)]) != open || obj[len(open)] != '"' {
		return nil
	}
	i := len(open) + 1
	j := i
	for j < len(obj) && obj[j] != '"' && obj[j] != '\\' {
		j++
	}
	if j >= len(obj) || obj[j] != '"' {
		return nil
	}
	from, ok := c.versionOf(node{raw: obj[i-1 : j+1]})
	if !ok {
		return nil
	}
	group, version, ok := strings.Cut(to, "/")
	if !ok || group != c.group {
		return nil
	}
	fi, ti := c.versionIndex(from), c.versionIndex(version)
	if fi < 0 || ti < 0 {
		return nil
	}
	return c.plans[fi*len(c.versions)+ti]
}

// versionIndex returns the index of version v in c.versions, or -1.
func (c *Converter) versionIndex(v string) int {
	for i, known := range c.versions {
		if known == v {
			return i
		}
	}
	return -1
}

// fusedRan reports whether the scan did r's rename in direction dir.
func (p *parser) fusedRan(r *scopedRule, dir int) bool {
	for i := range p.fused {
		if p.fusedDone&(1<<i) != 0 && p.fused[i].rule == r && p.fused[i].dir == dir {
			return true
		}
	}
	return false
}

// fusedFor returns the index in p.fused of the rename on the list whose
// trie node is t, or -1.
func (p *parser) fusedFor(t *trie) int {
	for i := range p.fused {
		if p.fused[i].t == t {
			return i
		}
	}
	return -1
}

// fusedList reads the list at p.pos with the rename f done on its items,
// and returns its bytes: the scratch copy when a key was renamed (changed),
// else the list as it is. ok is false, with nothing read, when the list is
// off the compact path: the caller then reads it as any other.
func (p *parser) fusedList(f *fusedRename) (raw []byte, changed, ok bool) {
	d, marks, st := p.data, p.marks, p.st
	start := p.pos
	if p.depth+2 > jsonscan.MaxDepth || start+1 >= len(d) || d[start+1] != '{' {
		return nil, false, false // deep, empty, space or not objects: the general path
	}
	scratch := len(st.scratch)
	run := start // the first byte not yet copied to scratch
	fail := func() ([]byte, bool, bool) {
		st.scratch = st.scratch[:scratch]
		return nil, false, false
	}
	var mc jsonscan.Cursor
	i := start + 1
	for { // d[i] is '{', an item's
		i++
		if i >= len(d) || d[i] != '"' {
			return fail() // an empty item, or space
		}
		fromAt, sawTo := -1, false
		for { // d[i] is the quote opening a key
			ks := i
			j, next := mc.Next(d, i+1)
			if j == 0 {
				j, next = jsonscan.StringEnd(d, marks, i+1)
			}
			if j <= 0 || j+1 >= len(d) || d[j+1] != ':' {
				return fail()
			}
			ke := j + 1
			mc = next
			if n := ke - ks; n == len(f.from) && string(d[ks:ke]) == string(f.from) {
				if fromAt >= 0 {
					return fail() // a duplicate key: the general path's error
				}
				fromAt = ks
			} else if n == len(f.to) && string(d[ks:ke]) == string(f.to) {
				if sawTo {
					return fail()
				}
				sawTo = true
			}
			i = ke + 1
			if i >= len(d) {
				return fail()
			}
			switch c := d[i]; {
			case c == '"':
				if j, mc = mc.Next(d, i+1); j == 0 {
					if j, mc = jsonscan.StringEnd(d, marks, i+1); j <= 0 {
						return fail()
					}
				}
				i = j + 1
			case c >= '1' && c <= '9':
				if j = jsonscan.PlainInt(d, i); j > 0 {
					i = j
					break
				}
				fallthrough
			default:
				var err error
				if i, err = p.valueEnd(i, p.depth+2); err != nil {
					return fail()
				}
			}
			if i >= len(d) {
				return fail()
			}
			if d[i] == ',' {
				if i+1 >= len(d) || d[i+1] != '"' {
					return fail()
				}
				i++
				continue
			}
			if d[i] != '}' {
				return fail()
			}
			break
		}
		if fromAt >= 0 {
			if sawTo {
				return fail() // both keys: the rule's error
			}
			st.scratch = append(st.scratch, d[run:fromAt]...)
			st.scratch = append(st.scratch, f.to...)
			run = fromAt + len(f.from)
		}
		i++ // '}'
		if i+1 < len(d) && d[i] == ',' && d[i+1] == '{' {
			i++
			continue
		}
		if i < len(d) && d[i] == ']' {
			break
		}
		return fail()
	}
	end := i + 1
	p.pos = end
	if run == start {
		return d[start:end], false, true
	}
	st.scratch = append(st.scratch, d[run:end]...)
	return st.scratch[scratch:len(st.scratch):len(st.scratch)], true, true
}
