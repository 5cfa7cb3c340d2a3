package rules

import (
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/hubspoke/hubspoke/convert"
)

var registered = map[string]convert.Rule{} // guarded by celMu

// RegisterFuncs makes Go rules available to the funcs entries of every rule
// file this program loads, by name, besides those in Options.Funcs (which
// win on a shared name). A name registered again is replaced. Package
// webhookmain calls it for the funcs of a user's own hubspoke binary, so
// that serve, check and convert all see them.
func RegisterFuncs(funcs map[string]convert.Rule) {
	celMu.Lock()
	defer celMu.Unlock()
	for name, r := range funcs {
		registered[name] = r
	}
}

// RegisteredFuncs returns the names RegisterFuncs registered, sorted: the
// Go funcs every rule file this program loads may name (a webhook reports
// them, so that a Conversion naming a func it lacks is refused before it
// is served).
func RegisteredFuncs() []string {
	celMu.RLock()
	defer celMu.RUnlock()
	names := make([]string, 0, len(registered))
	for k := range registered {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// funcsRule returns the Go rule registered as name, and every name known.
func (l *loader) funcsRule(name string) (convert.Rule, bool, []string) {
	if r, ok := l.opts.Funcs[name]; ok {
		return r, true, nil
	}
	celMu.RLock()
	defer celMu.RUnlock()
	if r, ok := registered[name]; ok {
		return r, true, nil
	}
	known := map[string]bool{}
	for k := range l.opts.Funcs {
		known[k] = true
	}
	for k := range registered {
		known[k] = true
	}
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		names = []string{"none"}
	}
	return nil, false, names
}

// ownedPaths reads the fields a funcs rule declares it owns: from (spoke
// fields) and to (hub fields), each a path or a list of paths. They tell
// check which fields the Go code handles; the engine does not use them.
func (l *loader) ownedPaths(m map[string]entry, field string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, k := range []string{"from", "to"} {
		e, ok := m[k]
		if !ok {
			continue
		}
		nodes := []*yaml.Node{e.val}
		if e.val.Kind == yaml.SequenceNode {
			nodes = e.val.Content
		}
		for _, n := range nodes {
			if n.Kind != yaml.ScalarNode {
				return nil, l.errf(n, field+"."+k, "want a path or a list of paths, got %s", kindName(n))
			}
			p, err := convert.ParsePath(n.Value)
			if err != nil {
				return nil, l.errf(n, field+"."+k, "%v", err)
			}
			if err := convert.CheckRulePath(p); err != nil {
				return nil, l.errf(n, field+"."+k, "%v", err)
			}
			out[k] = append(out[k], n.Value) // as written, for check
		}
	}
	return out, nil
}
