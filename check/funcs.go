package check

import (
	"fmt"

	"github.com/hubspoke/hubspoke/schema"
)

// funcsRules expands a funcs rule into one rule per field it declares it
// owns: its spoke fields (from) and its hub fields (to), each a path or a
// list of paths. The static checks then count those fields as handled by
// Go, like fields a spokeOnly or hubOnly rule keeps, rather than lost.
func funcsRules(r Rule) ([]Rule, error) {
	if r.Kind != "funcs" {
		return []Rule{r}, nil
	}
	var out []Rule
	for _, side := range []string{"from", "to"} {
		var paths []string
		switch v := r.Params[side].(type) {
		case nil:
		case string:
			paths = []string{v}
		case []any:
			for _, p := range v {
				s, ok := p.(string)
				if !ok {
					return nil, fmt.Errorf("rule funcs: %s: want a path or a list of paths", side)
				}
				paths = append(paths, s)
			}
		default:
			return nil, fmt.Errorf("rule funcs: %s: want a path or a list of paths", side)
		}
		for _, p := range paths {
			segs, err := schema.ParsePath(p)
			if err != nil {
				return nil, fmt.Errorf("rule funcs: %s: %w", side, err)
			}
			nr := Rule{Kind: r.Kind, Params: r.Params, Line: r.Line}
			if side == "from" {
				nr.From = segs
			} else {
				nr.To = segs
			}
			out = append(out, nr)
		}
	}
	if len(out) == 0 {
		r.From, r.To = nil, nil
		out = []Rule{r}
	}
	return out, nil
}
