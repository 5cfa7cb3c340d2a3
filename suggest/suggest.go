// Package suggest writes a starting rule file for a CRD with several
// versions: it compares each version's structural schema with the hub's
// and proposes the rules that map them, each with a comment saying why,
// and a TODO where it cannot tell.
//
// What it finds, field by field (and inside lists and maps, with the
// selector the schema calls for):
//
//   - renames and moves: a field of one version and a field of the other
//     with the same shape and similar names (abbreviations and plurals
//     allowed) or descriptions, also into or out of a new parent object;
//   - enum changes: values paired by spelling (rsa and RSA), values with
//     no partner in the other version (kept by a cel rule, or a TODO);
//   - type changes: an integer count and a duration string (the unit from
//     the field's name), an integer and its decimal string, integers in
//     units of different sizes (memoryMiB and memoryBytes);
//   - a list of objects and a map keyed by one of their fields, a
//     singleton list and its item, a cron string and its five fields;
//   - fields in one version only (hubOnly and spokeOnly, with the hub's
//     default), and what is left of a new object once fields move into it.
//
// It reads schemas only: no cluster, no client-go. Package convert/rules
// loads what it writes; hubspoke check says what it got wrong.
package suggest

import (
	"fmt"
	"slices"

	"github.com/hubspoke/hubspoke/schema"
)

// Options tune Suggest.
type Options struct {
	// Hub is the hub version (default: the CRD's storage version).
	Hub string
}

// Result is a suggested rule file.
type Result struct {
	// Name, Group, Kind: the CRD's.
	Name, Group, Kind string
	// Hub is the hub version; HubReason says why it was chosen.
	Hub, HubReason string
	// Spokes are the other versions, in the CRD's order.
	Spokes []Spoke
}

// Spoke holds the rules suggested for one spoke version.
type Spoke struct {
	Version string
	Rules   []Rule
	// Notes are what the comparison found that no rule says (TODOs
	// without a rule, and a line when the schemas are the same).
	Notes []string
}

// Rule is one suggested rule.
type Rule struct {
	// Kind is the rule kind: rename, enum, cel, duration, intToString,
	// stringToInt, scale, listToMap, mapToList, listToItem, itemToList,
	// join, split, hubOnly or spokeOnly.
	Kind string
	// From and To are the spoke and hub paths, dotted (for hubOnly and
	// spokeOnly, Path).
	From, To string
	// Params are the rule's other parameters, in the order written.
	Params []Param
	// Why says what in the schemas led to it.
	Why string
	// TODO says what it could not tell ("" when it is sure).
	TODO string
}

// Param is one parameter of a rule.
type Param struct {
	Key string
	// Value is a string, an int64, or a []Pair (a map, in order).
	Value any
}

// Pair is one entry of a map parameter (enum values).
type Pair struct{ Key, Value string }

// Suggest compares every version of crd with the hub and returns the
// suggested rules.
func Suggest(crd *schema.CRD, opts Options) (*Result, error) {
	r := &Result{Name: crd.Object.Name, Group: crd.Group(), Kind: crd.Kind()}
	var storage string
	for _, v := range crd.Versions() {
		if v.Storage {
			storage = v.Name
		}
	}
	switch {
	case opts.Hub != "":
		if crd.Version(opts.Hub) == nil {
			return nil, fmt.Errorf("--hub %s: the CRD has no such version (it has %v)", opts.Hub, crd.VersionNames())
		}
		r.Hub, r.HubReason = opts.Hub, "chosen with --hub"
		if opts.Hub == storage {
			r.HubReason = "the storage version, chosen with --hub"
		}
	case storage != "":
		r.Hub, r.HubReason = storage, "the storage version"
	default:
		return nil, fmt.Errorf("the CRD has no storage version: choose the hub with --hub")
	}
	if len(crd.Versions()) < 2 {
		return nil, fmt.Errorf("the CRD has one version (%s): there is nothing to convert", r.Hub)
	}
	hub := crd.Version(r.Hub)
	if hub.Structural == nil {
		return nil, fmt.Errorf("version %s has no structural schema: %v", r.Hub, hub.StructuralErr)
	}
	for _, v := range crd.Versions() {
		if v.Name == r.Hub {
			continue
		}
		sp := Spoke{Version: v.Name}
		if v.Structural == nil {
			sp.Notes = append(sp.Notes, fmt.Sprintf("TODO: version %s has no structural schema (%v): nothing could be compared", v.Name, v.StructuralErr))
		} else {
			sp.Rules, sp.Notes = compare(v, hub)
			if len(sp.Rules) == 0 && len(sp.Notes) == 0 {
				sp.Notes = append(sp.Notes, fmt.Sprintf("the %s and %s schemas hold the same fields: no rule needed", v.Name, r.Hub))
			}
		}
		r.Spokes = append(r.Spokes, sp)
	}
	return r, nil
}

// TODOs counts the rules and notes that need a decision.
func (r *Result) TODOs() int {
	n := 0
	for _, s := range r.Spokes {
		for _, x := range s.Rules {
			if x.TODO != "" {
				n++
			}
		}
		n += len(slices.DeleteFunc(slices.Clone(s.Notes), func(s string) bool { return len(s) < 5 || s[:5] != "TODO:" }))
	}
	return n
}
