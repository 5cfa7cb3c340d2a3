package check

import (
	"context"
	"time"
)

// Counterexamples are minimised here rather than by rapid's shrinker:
// rapid shrinks only the first failure of a run and is driven through
// testing's flags, while every distinct failure needs its own minimal
// example. The search is greedy on the JSON of the object: drop a field,
// drop a list item, or replace a value by its simplest form (empty string,
// zero, empty list or object), keeping a candidate when it is still valid
// in its version (schema and CEL, after the version's defaults) and still
// shows the same failure.

// shrinkAll minimises the findings named by keys within the run's shrink
// time.
func (e *lawEnv) shrinkAll(ctx context.Context, found map[string]*Finding, keys []string) {
	if len(keys) == 0 {
		return
	}
	budget := e.opts.ShrinkTime
	if budget <= 0 {
		budget = 5 * time.Second
	}
	deadline := time.Now().Add(budget)
	for _, k := range keys {
		f := found[k]
		if f.input == nil {
			continue
		}
		best := e.shrink(ctx, f, k, deadline)
		if best != nil && best != f {
			best.Count = f.Count
			found[k] = best
		}
	}
}

// shrink returns the finding of the smallest object found that still shows
// the failure keyed k.
func (e *lawEnv) shrink(ctx context.Context, f *Finding, k string, deadline time.Time) *Finding {
	j := f.job
	ver := e.crd.Version(j.from)
	best := f
	cur := f.input
	for improved := true; improved; {
		improved = false
		for _, cand := range candidates(cur.obj) {
			if ctx.Err() != nil || time.Now().After(deadline) {
				return best
			}
			ver.ApplyDefaults(cand)
			if len(e.vals.validate(ver, cand)) > 0 {
				continue
			}
			s := newSample(cand)
			if len(s.data) >= len(cur.data) {
				continue
			}
			for _, g := range e.safe(j, s) {
				if findingKey(g) == k {
					g.input, g.job, g.size = s, j, len(s.data)
					if g.Input == nil {
						g.Input = cand
					}
					best, cur, improved = g, s, true
					break
				}
			}
			if improved {
				break
			}
		}
	}
	return best
}

// candidates returns simpler variants of obj, biggest simplifications
// first. apiVersion, kind and metadata stay.
func candidates(obj map[string]any) []map[string]any {
	var out []map[string]any
	var walk func(v any, path []any)
	walk = func(v any, path []any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if len(path) == 0 && k == "metadata" {
					// Metadata shrinks to its name and namespace.
					if md, ok := c.(map[string]any); ok {
						for mk := range md {
							if mk != "name" && mk != "namespace" {
								out = append(out, mutate(obj, []any{"metadata", mk}, nil, true))
							}
						}
					}
					continue
				}
				if len(path) == 0 && skipRoot(k) {
					continue
				}
				p := append(append([]any(nil), path...), k)
				out = append(out, mutate(obj, p, nil, true))
				if s := simplest(c); s != nil {
					out = append(out, mutate(obj, p, s, false))
				}
				walk(c, p)
			}
		case []any:
			for i, c := range x {
				p := append(append([]any(nil), path...), i)
				out = append(out, mutate(obj, p, nil, true))
				walk(c, p)
			}
		}
	}
	walk(obj, nil)
	return out
}

// simplest returns the simplest value of v's kind, or nil when v is
// already that.
func simplest(v any) any {
	switch x := v.(type) {
	case string:
		if x != "" {
			return ""
		}
	case int64:
		if x != 0 {
			return int64(0)
		}
	case float64:
		if x != 0 {
			return int64(0)
		}
	case bool:
		if x {
			return false
		}
	case map[string]any:
		if len(x) > 0 {
			return map[string]any{}
		}
	case []any:
		if len(x) > 0 {
			return []any{}
		}
	}
	return nil
}

// mutate returns a copy of obj with the value at path replaced by v, or
// removed.
func mutate(obj map[string]any, path []any, v any, remove bool) map[string]any {
	cp := deepCopy(obj)
	var parent any = cp
	for _, seg := range path[:len(path)-1] {
		switch s := seg.(type) {
		case string:
			parent = parent.(map[string]any)[s]
		case int:
			parent = parent.([]any)[s]
		}
	}
	last := path[len(path)-1]
	switch s := last.(type) {
	case string:
		m := parent.(map[string]any)
		if remove {
			delete(m, s)
		} else {
			m[s] = v
		}
	case int:
		l := parent.([]any)
		if remove {
			// Lists are values of their parent: rebuild it there.
			nl := append(append([]any(nil), l[:s]...), l[s+1:]...)
			setAt(cp, path[:len(path)-1], nl)
		} else {
			l[s] = v
		}
	}
	return cp
}

func setAt(root map[string]any, path []any, v any) {
	var parent any = root
	for _, seg := range path[:len(path)-1] {
		switch s := seg.(type) {
		case string:
			parent = parent.(map[string]any)[s]
		case int:
			parent = parent.([]any)[s]
		}
	}
	switch s := path[len(path)-1].(type) {
	case string:
		parent.(map[string]any)[s] = v
	case int:
		parent.([]any)[s] = v
	}
}
