package check

import (
	"fmt"
	"slices"

	convrules "github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

// Evolution check names.
const (
	CheckVersionRemoved   = "version-removed"
	CheckVersionUnserved  = "version-unserved"
	CheckStorageMoved     = "storage-moved"
	CheckFieldRemoved     = "field-removed"
	CheckFieldTightened   = "field-tightened"
	CheckNewRequiredField = "new-required-field"
)

// Evolution reports the breaking changes from revision prev of a CRD to
// revision next, as crdify users know them: a version removed that may
// still be stored, a version no longer served, storage moved to a version
// while the old one is no longer served, and for every version in both, a
// field removed, a type changed, an enum narrowed, bounds or lengths
// tightened, nullability or list semantics changed (anything the old
// schema accepted that the new one rejects), and a new required field.
// rules (of next, may be nil) make it aware of conversion: a removed field
// that a rule still names is pointed out.
func Evolution(prev, next *schema.CRD, rules *convrules.File) *Report {
	r := &Report{}
	stored := prev.Object.Status.StoredVersions
	prevStorage, nextStorage := storageOf(prev), storageOf(next)
	for _, pv := range prev.Versions() {
		r.Checks++
		nv := next.Version(pv.Name)
		if nv == nil {
			msg := "version removed"
			switch {
			case slices.Contains(stored, pv.Name):
				msg += fmt.Sprintf(": it is in status.storedVersions %v, so the API server refuses the update until objects are migrated and storedVersions cleaned", stored)
			case len(stored) == 0:
				msg += ": objects may still be stored in it (status.storedVersions unknown); migrate them and clean storedVersions first"
			default:
				msg += fmt.Sprintf(": not in status.storedVersions %v, but clients using it break", stored)
			}
			r.Add(Finding{Check: CheckVersionRemoved, From: pv.Name, Message: msg, Pos: prev.Pos(fmt.Sprintf("/spec/versions/%d", pv.Index))})
			continue
		}
		if pv.Served && !nv.Served {
			r.Add(Finding{Check: CheckVersionUnserved, Severity: SeverityWarning, From: pv.Name, Message: "version no longer served: clients using it break", Pos: next.Pos(fmt.Sprintf("/spec/versions/%d/served", nv.Index))})
		}
		if pv.Structural != nil && nv.Structural != nil {
			evolveVersion(r, next, pv, nv, rules)
		}
	}
	r.Checks++
	if prevStorage != "" && nextStorage != "" && prevStorage != nextStorage {
		if ov := next.Version(prevStorage); ov == nil || !ov.Served {
			r.Add(Finding{Check: CheckStorageMoved, From: prevStorage, To: nextStorage,
				Message: fmt.Sprintf("storage moved from %s to %s while %s is no longer served: objects stay stored as %s until rewritten; keep %s served until a storage migration has run", prevStorage, nextStorage, prevStorage, prevStorage, prevStorage)})
		} else {
			r.Add(Finding{Check: CheckStorageMoved, Severity: SeverityWarning, From: prevStorage, To: nextStorage,
				Message: fmt.Sprintf("storage moved from %s to %s: existing objects are rewritten only when written; run a storage migration", prevStorage, nextStorage)})
		}
	}
	return r
}

func storageOf(c *schema.CRD) string {
	for _, v := range c.Versions() {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func evolveVersion(r *Report, next *schema.CRD, pv, nv *schema.Version, rules *convrules.File) {
	var removed [][]string
	for _, fp := range schema.Fields(pv.Structural) {
		segs, _ := schema.ParsePath(fp)
		if len(segs) == 0 || skipRoot(segs[0]) {
			continue
		}
		if slices.ContainsFunc(removed, func(p []string) bool { return hasPrefix(segs, p) }) {
			continue
		}
		r.Checks++
		on, _ := schema.LookupSegments(pv.Structural, segs)
		nn, err := schema.LookupSegments(nv.Structural, segs)
		pos := next.Pos(next.SchemaPointer(nv, segs))
		if err != nil {
			if preservedBy(nv.Structural, segs) {
				continue
			}
			removed = append(removed, segs)
			msg := "field removed: stored objects lose it when read or written, and clients setting it are pruned"
			if rn := ruleNaming(rules, nv.Name, segs); rn != "" {
				msg += fmt.Sprintf(" (rule %s still names it)", rn)
			}
			r.Add(Finding{Check: CheckFieldRemoved, From: pv.Name, To: nv.Name, Path: fp, Message: msg, Pos: pos})
			continue
		}
		for _, c := range contain(on, nn) {
			r.Add(Finding{Check: CheckFieldTightened, Severity: c.severity, From: pv.Name, To: nv.Name, Path: fp,
				FromConstraint: c.a, ToConstraint: c.b, Pos: pos,
				Message: fmt.Sprintf("%s: the new revision rejects values the old one accepted (existing objects may fail validation on their next write)", c.what)})
		}
		for _, req := range required(nn) {
			if !slices.Contains(required(on), req) {
				child := pointerOf(append(append([]string{}, segs...), req))
				r.Add(Finding{Check: CheckNewRequiredField, From: pv.Name, To: nv.Name, Path: child, FromConstraint: "optional", ToConstraint: "required", Pos: pos,
					Message: "new required field: existing objects without it fail validation on their next write"})
			}
		}
	}
	// Required fields of the root's direct children (e.g. spec itself).
	for _, req := range required(nv.Structural) {
		if !slices.Contains(required(pv.Structural), req) {
			r.Add(Finding{Check: CheckNewRequiredField, From: pv.Name, To: nv.Name, Path: "/" + req, FromConstraint: "optional", ToConstraint: "required",
				Message: "new required field: existing objects without it fail validation on their next write"})
		}
	}
}

// ruleNaming returns the name of a rule of version v (spoke side) or of
// any spoke (when v is the hub) naming path p, or "".
func ruleNaming(rules *convrules.File, v string, p []string) string {
	if rules == nil {
		return ""
	}
	for _, sp := range rules.Spokes {
		for _, r := range rulesOf(sp) {
			side := r.To
			if sp.Version == v {
				side = r.From
			} else if v != rules.Hub {
				continue
			}
			if side != nil && (hasPrefix(p, side) || hasPrefix(side, p)) {
				return r.Name()
			}
		}
	}
	return ""
}
