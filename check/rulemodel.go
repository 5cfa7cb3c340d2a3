package check

import (
	"fmt"
	"strings"

	"github.com/hubspoke/hubspoke/convert"
	convrules "github.com/hubspoke/hubspoke/convert/rules"
)

// The static checks read rule files through convert/rules, the one parser
// of the rule language: a file the loader refuses is never checked, and
// every rule form it accepts is seen here as it parsed it.

// rule is one parsed rule as the static checks walk it: its kind, the
// field it reads on the spoke side (From) and writes on the hub side (To),
// as segments; nil on a side the rule does not touch (hubOnly has no spoke
// side, spokeOnly no hub side, funcs neither).
type rule struct {
	Kind     string
	From, To []string
	Params   map[string]any
	Line     int
	// Conditional marks a rule with a when predicate: where it does not
	// hold, the fields it names pass unchanged.
	Conditional bool
	// Unrolled marks a copy of a rule through a tree selector ([**]) at
	// one depth below its list, for the field mapping; its paths are not
	// checked against the schema (a schema holds the tree to some depth
	// only).
	Unrolled bool
}

// treeDepth is how deep the static checks follow a tree selector ([**]):
// schemas spell out a tree to a few levels (they cannot recurse).
const treeDepth = 8

// Name renders the rule as "kind path" for messages.
func (r rule) Name() string {
	switch {
	case r.From != nil && r.To != nil:
		return fmt.Sprintf("%s %s -> %s", r.Kind, pointerOf(r.From), pointerOf(r.To))
	case r.From != nil:
		return fmt.Sprintf("%s %s", r.Kind, pointerOf(r.From))
	case r.To != nil:
		return fmt.Sprintf("%s %s", r.Kind, pointerOf(r.To))
	}
	return r.Kind
}

// spokeRules returns the rules of spoke version v in rf (nil when rf has no
// such spoke).
func spokeRules(rf *convrules.File, v string) []rule {
	if rf == nil {
		return nil
	}
	for _, sp := range rf.Spokes {
		if sp.Version == v {
			return rulesOf(sp)
		}
	}
	return nil
}

func rulesOf(sp convrules.SpokeSpec) []rule {
	out := make([]rule, 0, len(sp.Rules))
	for _, rs := range sp.Rules {
		r := rule{Kind: rs.Type, Line: rs.Line, Params: map[string]any{}}
		for k, v := range rs.Params {
			switch x := v.(type) {
			case map[string]string:
				m := make(map[string]any, len(x))
				for a, b := range x {
					m[a] = b
				}
				r.Params[k] = m
			case int64:
				if x != 0 {
					r.Params[k] = x
				}
			default:
				r.Params[k] = v
			}
		}
		r.Conditional = rs.Params["when"] != nil
		from, to := rs.From.Segments(), rs.To.Segments()
		switch rs.Type {
		case "hubOnly":
			r.To = to
		case "spokeOnly":
			r.From = from
		case "constant", "drop":
			// A field of one side only, as hubOnly or spokeOnly.
			if in, _ := rs.Params["in"].(string); in == "hub" {
				r.To = to
			} else {
				r.From = from
			}
		case "funcs":
			// A funcs rule may declare the fields its Go code owns
			// (from: spoke fields, to: hub fields, as written): the static
			// checks count them as handled, like spokeOnly and hubOnly.
			if owned := funcsOwned(rs.Params, r); len(owned) > 0 {
				out = append(out, owned...)
				continue
			}
		default:
			r.From, r.To = from, to
		}
		out = append(out, r)
		// A rule through a tree selector maps the tree's fields at every
		// depth: one copy of it per depth below the first.
		for d := 1; d <= treeDepth; d++ {
			f, okf := rs.From.TreeSegments(d)
			t, okt := rs.To.TreeSegments(d)
			if !okf && !okt {
				break
			}
			u := r
			u.Unrolled = true
			if u.From != nil {
				u.From = f
			}
			if u.To != nil {
				u.To = t
			}
			out = append(out, u)
		}
	}
	return out
}

// funcsOwned expands the fields a funcs rule declares into one rule per
// field (nil when it declares none).
func funcsOwned(params map[string]any, base rule) []rule {
	var out []rule
	for _, side := range []string{"from", "to"} {
		var paths []string
		switch v := params[side].(type) {
		case string:
			paths = []string{v}
		case []string:
			paths = v
		}
		for _, p := range paths {
			cp, err := convert.ParsePath(p)
			if err != nil {
				continue // the loader refuses bad paths; nothing to own
			}
			r := base
			if side == "from" {
				r.From = cp.Segments()
			} else {
				r.To = cp.Segments()
			}
			out = append(out, r)
		}
	}
	return out
}

// rulePos returns "file:line" of a line of rf.
func rulePos(rf *convrules.File, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", rf.Name, line)
	}
	return rf.Name
}

// hasPrefix reports whether p starts with prefix (segment-wise), treating
// "*", "[]" and numbers as the same item segment.
func hasPrefix(p, prefix []string) bool {
	if len(prefix) == 0 || len(p) < len(prefix) {
		return false
	}
	for i := range prefix {
		if !segEqual(p[i], prefix[i]) {
			return false
		}
	}
	return true
}

func segEqual(a, b string) bool {
	if a == b {
		return true
	}
	return isItem(a) && isItem(b)
}

func isItem(s string) bool {
	if s == "*" || s == "[]" {
		return true
	}
	if s == "" {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// pointerSegments splits a JSON pointer (as schema.Fields gives them) into
// its keys with convert's one path parser.
func pointerSegments(p string) []string {
	cp, err := convert.ParsePointer(p)
	if err != nil {
		return nil
	}
	return cp.Segments()
}
