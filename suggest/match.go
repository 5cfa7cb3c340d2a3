package suggest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// candidates are the fields that may have moved: each only field and the
// object fields inside it (not through lists and maps: a rule's two paths
// go through the same selectors).
func candidates(roots []*only) []*cand {
	var out []*cand
	for _, r := range roots {
		var add func(n *node, p path)
		add = func(n *node, p path) {
			out = append(out, &cand{p: p, n: n, root: r})
			if kind(n) == "object" {
				for k, c := range n.Properties {
					add(&c, p.with(seg{key: k}))
				}
			}
		}
		add(r.n, r.p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].p.String() < out[j].p.String() })
	return out
}

// compat says how well a spoke field can become a hub field, by shape
// alone: 1 the same shape, less for shapes a rule converts.
func compat(s, h *node) float64 {
	if shapeHash(s) == shapeHash(h) {
		return 1
	}
	ks, kh := kind(s), kind(h)
	switch {
	case ks == kh && isScalar(ks):
		return 0.8
	case ks == kh:
		return 0.4 + 0.5*likeness(s, h)
	case (ks == "integer" && kh == "string") || (ks == "string" && kh == "integer"):
		return 0.6
	case ks == "array" && kh == "map":
		return 0.6 * likeness(s.Items, h.AdditionalProperties.Structural) / max(likeness(s.Items, h.AdditionalProperties.Structural), 0.01)
	case ks == "map" && kh == "array":
		return 0.6 * likeness(s.AdditionalProperties.Structural, h.Items) / max(likeness(s.AdditionalProperties.Structural, h.Items), 0.01)
	case ks == "array" && kh != "array" && itemLike(s.Items, h), kh == "array" && ks != "array" && itemLike(h.Items, s):
		return 0.6
	case ks == "object" && kh == "string":
		if _, _, ok := patternOf(s); ok {
			return 0.6
		}
	case ks == "string" && kh == "object":
		if _, _, ok := patternOf(h); ok {
			return 0.6
		}
	}
	return 0
}

type match struct {
	s, h       *cand
	score      float64
	exact      bool
	guess      bool
	name, desc float64
}

// matchMoves pairs the fields of one version with the fields of the
// other that have no partner of the same name: first those of the same
// shape with like names or descriptions, then those of shapes a rule
// converts, then, in one parent, a single pair left of the same
// (non-trivial) shape. The best pairs win; a close second makes a TODO.
func (c *comparer) matchMoves() {
	ss, hs := candidates(c.sOnly), candidates(c.hOnly)
	var all []match
	for _, s := range ss {
		for _, h := range hs {
			if s.p.scope() != h.p.scope() {
				continue
			}
			name := nameLikeness(s.p.keys(), h.p.keys())
			desc := descLikeness(s.n.Description, h.n.Description)
			if name < 0.3 && desc < 0.3 {
				continue
			}
			cp := compat(s.n, h.n)
			if cp == 0 {
				continue
			}
			m := match{s: s, h: h, exact: cp == 1, name: name, desc: desc}
			if m.exact {
				m.score = 2 + name + desc
			} else {
				m.score = 0.5*cp + 0.4*name + 0.3*desc
				if m.score < 0.45 {
					continue
				}
			}
			all = append(all, m)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	for _, m := range all {
		if !c.free(m.s, ss) || !c.free(m.h, hs) {
			continue
		}
		c.take(m, all, ss, hs)
	}
	c.soleLeft(ss, hs)
}

// free: neither the field nor a field around or inside it has moved.
func (c *comparer) free(x *cand, all []*cand) bool {
	for _, y := range all {
		if y.used && y.root == x.root && (x.p.hasPrefix(y.p) || y.p.hasPrefix(x.p)) {
			return false
		}
	}
	return true
}

func (c *comparer) take(m match, all []match, ss, hs []*cand) {
	m.s.used, m.h.used = true, true
	for _, x := range []*cand{m.s, m.h} {
		if x.p.String() == x.root.p.String() {
			x.root.matched = true
		} else {
			x.root.consumed = true
		}
	}
	// A close second on either side: say so.
	var others []string
	for _, o := range all {
		if (o.s == m.s) == (o.h == m.h) || o.score < m.score-0.1 || !c.free(o.s, ss) || !c.free(o.h, hs) {
			continue
		}
		if o.s == m.s {
			others = append(others, o.h.p.String()+" ("+c.hub+")")
		} else {
			others = append(others, o.s.p.String()+" ("+c.spoke+")")
		}
	}
	n := len(c.out)
	var like []string
	if m.name >= 0.3 {
		like = append(like, "a like name")
	}
	if m.desc >= 0.3 {
		like = append(like, "a like description")
	}
	switch {
	case m.guess:
		c.reason = fmt.Sprintf("the one field of this shape left in %s in both versions", m.s.p[:len(m.s.p)-1])
	case m.exact:
		c.reason = "the same shape, " + strings.Join(like, " and ")
	default:
		c.reason = "shapes a rule converts, " + strings.Join(like, " and ")
	}
	c.move(m.s.n, m.h.n, m.s.p, m.h.p)
	c.reason = ""
	if len(others) > 0 || m.guess {
		todo := "a guess from the shape alone: confirm it"
		if len(others) > 0 {
			todo = "it might be " + strings.Join(others, " or ") + " instead: confirm"
		}
		for i := n; i < len(c.out); i++ {
			if c.out[i].rule.TODO == "" {
				c.out[i].rule.TODO = todo
			} else {
				c.out[i].rule.TODO = todo + "; " + c.out[i].rule.TODO
			}
		}
	}
}

// soleLeft pairs, in each parent object, the one spoke field and the one
// hub field left of the same shape (not plain ones: too common to tell).
func (c *comparer) soleLeft(ss, hs []*cand) {
	type group struct{ s, h []*cand }
	groups := map[string]*group{}
	key := func(x *cand) string {
		parent := x.p[:len(x.p)-1]
		return parent.String() + "\x00" + shapeHash(x.n)
	}
	for _, s := range ss {
		if c.free(s, ss) && s.p.String() == s.root.p.String() && !plainShape(s.n) {
			g := groups[key(s)]
			if g == nil {
				g = &group{}
				groups[key(s)] = g
			}
			g.s = append(g.s, s)
		}
	}
	for _, h := range hs {
		if c.free(h, hs) && h.p.String() == h.root.p.String() {
			if g := groups[key(h)]; g != nil {
				g.h = append(g.h, h)
			}
		}
	}
	var keys []string
	for k, g := range groups {
		if len(g.s) == 1 && len(g.h) == 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		c.take(match{s: g.s[0], h: g.h[0], guess: true}, nil, ss, hs)
	}
}

// plainShape: a boolean, or a string without enum, pattern or format; too
// common a shape to pair fields by it alone.
func plainShape(n *node) bool {
	switch kind(n) {
	case "boolean":
		return true
	case "string":
		v := n.ValueValidation
		return v == nil || (len(v.Enum) == 0 && v.Pattern == "" && v.Format == "")
	}
	return false
}

// move writes the rules that bring spoke field s at from to hub field h
// at to.
func (c *comparer) move(s, h *node, from, to path) {
	if isScalar(kind(s)) && kind(s) == kind(h) {
		c.scalar(s, h, from, to) // a rename, or a value rule that moves it
		return
	}
	if shapeHash(s) == shapeHash(h) {
		c.add(phaseMove, Rule{Kind: "rename", From: from.String(), To: to.String(), Why: c.moveWhy(from, to)})
		return
	}
	ks, kh := kind(s), kind(h)
	switch {
	case ks != kh:
		c.change(s, h, from, to)
	case isScalar(ks):
		c.scalar(s, h, from, to)
	default:
		// Move it whole, then compare what it holds where it now is.
		c.add(phaseMove, Rule{Kind: "rename", From: from.String(), To: to.String(), Why: c.moveWhy(from, to) + " (what differs inside follows)"})
		c.same(s, h, to)
	}
}

// leftovers: what moved nowhere is kept aside (hubOnly, spokeOnly); what
// is left of an object something moved into or out of too.
func (c *comparer) leftovers() {
	for _, o := range c.hOnly {
		switch {
		case o.matched:
		case o.consumed:
			c.add(phaseRest, Rule{Kind: "hubOnly", From: o.p.String(), To: o.p.String(),
				Why: fmt.Sprintf("%s is new in %s; what is left of it once the fields below move in is kept while the object is read through %s (listed first: on the way back the moves run first)", o.p, c.hub, c.spoke)})
		default:
			r := Rule{Kind: "hubOnly", From: o.p.String(), To: o.p.String(), Why: fmt.Sprintf("%s is in %s only: kept in the preserved annotation while the object is read through %s", o.p, c.hub, c.spoke)}
			if o.n.Default.Object != nil {
				d, _ := json.Marshal(o.n.Default.Object)
				r.Params = []Param{{"default", json.RawMessage(d)}}
				r.Why += fmt.Sprintf(", and set to %s's default %s when nothing was kept", c.hub, d)
			}
			r.TODO = c.maybeRenamed(o, c.sOnly, false)
			c.add(phaseHubOnly, r)
		}
	}
	for _, o := range c.sOnly {
		switch {
		case o.matched:
		case o.consumed:
			c.add(phaseLeft, Rule{Kind: "spokeOnly", From: o.p.String(), To: o.p.String(),
				Why: fmt.Sprintf("%s is in %s only; what is left of it once the fields above move out is kept while the object is read through %s", o.p, c.spoke, c.hub)})
		default:
			r := Rule{Kind: "spokeOnly", From: o.p.String(), To: o.p.String(), Why: fmt.Sprintf("%s is in %s only: kept in the preserved annotation while the object is read through other versions", o.p, c.spoke)}
			r.TODO = c.maybeRenamed(o, c.hOnly, true)
			c.add(phaseSpokeOnly, r)
		}
	}
}

// maybeRenamed names the fields of the other side left in the same parent
// with the same shape: one of them may be this field renamed.
func (c *comparer) maybeRenamed(o *only, others []*only, spoke bool) string {
	var names []string
	for _, x := range others {
		if x.matched || x.consumed || len(x.p) != len(o.p) || x.p[:len(x.p)-1].String() != o.p[:len(o.p)-1].String() || shapeHash(x.n) != shapeHash(o.n) {
			continue
		}
		names = append(names, x.p.String())
	}
	if len(names) == 0 {
		return ""
	}
	other := c.spoke
	if spoke {
		other = c.hub
	}
	return fmt.Sprintf("if it is %s (%s) renamed, replace both rules with a rename", strings.Join(names, " or "), other)
}

// ordered returns the rules in the order they must be written: the rest
// of new hub objects first, then the moves (one that vacates a path
// before one that fills it), then the rest of old spoke objects, then the
// fields of one version only.
func (c *comparer) ordered() []Rule {
	sort.SliceStable(c.out, func(i, j int) bool { return c.out[i].phase < c.out[j].phase })
	var moves []Rule
	var out []Rule
	for _, e := range c.out {
		if e.phase == phaseMove {
			moves = append(moves, e.rule)
		}
	}
	moves = vacateFirst(moves)
	mi := 0
	for _, e := range c.out {
		if e.phase == phaseMove {
			out = append(out, moves[mi])
			mi++
			continue
		}
		out = append(out, e.rule)
	}
	return out
}

// vacateFirst orders moves so that a move out of a path comes before a
// move into it (conditions to deprecated.conditions, then
// v1beta2.conditions to conditions), keeping the order otherwise.
func vacateFirst(rs []Rule) []Rule {
	under := func(p, q string) bool { return p == q || strings.HasPrefix(p, q+".") || strings.HasPrefix(p, q+"[") }
	var out []Rule
	placed := make([]bool, len(rs))
	for len(out) < len(rs) {
		progress := false
		for i, r := range rs {
			if placed[i] {
				continue
			}
			blocked := false
			for j, o := range rs {
				if j != i && !placed[j] && o.From != o.To && under(r.To, o.From) && r.From != r.To {
					blocked = true // o vacates where r writes
				}
			}
			if !blocked {
				out, placed[i], progress = append(out, r), true, true
			}
		}
		if !progress { // a cycle (a swap): as found
			for i, r := range rs {
				if !placed[i] {
					out, placed[i] = append(out, r), true
				}
			}
		}
	}
	return out
}
