package check

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/hubspoke/hubspoke/apirules"
	convrules "github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

// Static runs the static checks of a CRD and its rule file. rules may be
// nil (a black-box webhook): then only the CRD-wide checks run, since
// fields cannot be paired without the rules.
func Static(crd *schema.CRD, rules *convrules.File) *Report {
	r := &Report{}
	s := &static{crd: crd, rules: rules, r: r}
	s.crdChecks()
	if rules != nil {
		s.ruleVersions()
	}
	hub := s.hubVersion()
	if rules != nil && hub != nil && hub.Structural != nil {
		for _, v := range crd.Versions() {
			if v == hub || v.Structural == nil {
				continue
			}
			s.pair(v, hub, spokeRules(rules, v.Name))
		}
	}
	return r
}

type static struct {
	crd   *schema.CRD
	rules *convrules.File
	r     *Report
}

func (s *static) add(f Finding) { s.r.Add(f) }

func (s *static) hubVersion() *schema.Version {
	if s.rules != nil && s.rules.Hub != "" {
		return s.crd.Version(s.rules.Hub)
	}
	for _, v := range s.crd.Versions() {
		if v.Storage {
			return v
		}
	}
	return nil
}

func (s *static) crdChecks() {
	c := s.crd
	var storage []string
	for _, v := range c.Versions() {
		if v.Storage {
			storage = append(storage, v.Name)
		}
	}
	s.r.Checks++
	if len(storage) != 1 {
		s.add(Finding{Check: CheckStorage, Path: "/spec/versions", Message: fmt.Sprintf("exactly one version must have storage: true, found %d %v", len(storage), storage), Pos: c.Pos("/spec/versions")})
	}
	for _, v := range c.Versions() {
		s.r.Checks++
		if v.Served && v.Structural == nil {
			ptr := fmt.Sprintf("/spec/versions/%d/schema", v.Index)
			s.add(Finding{Check: CheckStructural, From: v.Name, Path: ptr, Message: fmt.Sprintf("served version has no structural schema: %v", v.StructuralErr), Pos: c.Pos(ptr)})
		}
	}
	s.r.Checks++
	if c.Object.Spec.PreserveUnknownFields {
		s.add(Finding{Check: CheckStrategy, Path: "/spec/preserveUnknownFields", Message: "spec.preserveUnknownFields must be false", Pos: c.Pos("/spec/preserveUnknownFields")})
	}
	if len(c.Versions()) < 2 {
		return
	}
	conv := c.Object.Spec.Conversion
	switch {
	case conv == nil || conv.Strategy != "Webhook":
		strategy := "None"
		if conv != nil && conv.Strategy != "" {
			strategy = string(conv.Strategy)
		}
		if diffs := schemaDifferences(c); len(diffs) > 0 {
			s.add(Finding{Check: CheckStrategy, Message: fmt.Sprintf("spec.conversion.strategy is %s: the API server converts by rewriting apiVersion only, and the versions' schemas differ (%s), so objects lose or break those fields when read through another version; use strategy Webhook", strategy, strings.Join(diffs, "; ")), Pos: c.Pos("/spec/conversion")})
		} else if r, line := s.firstRule(); r != "" {
			// Identical schemas are right with None, unless the rules
			// change objects: then only a webhook runs them.
			s.add(Finding{Check: CheckStrategy, Message: fmt.Sprintf("spec.conversion.strategy is %s: the API server converts by rewriting apiVersion only and never calls a webhook, but the rule file changes objects between versions (rule %s at %s, ...), which only a webhook does; use strategy Webhook, or remove the rules", strategy, r, rulePos(s.rules, line)), Pos: c.Pos("/spec/conversion")})
		}
	case conv.Webhook == nil:
		s.add(Finding{Check: CheckStrategy, Message: "spec.conversion.webhook is missing", Pos: c.Pos("/spec/conversion")})
	case !slices.Contains(conv.Webhook.ConversionReviewVersions, "v1"):
		s.add(Finding{Check: CheckStrategy, Message: fmt.Sprintf("spec.conversion.webhook.conversionReviewVersions %v does not include v1", conv.Webhook.ConversionReviewVersions), Pos: c.Pos("/spec/conversion/webhook/conversionReviewVersions")})
	}
}

// firstRule names the first rule of the rule file (and its line), or ""
// when there is no rule file or it has no rule.
func (s *static) firstRule() (string, int) {
	if s.rules == nil {
		return "", 0
	}
	for _, sp := range s.rules.Spokes {
		for _, r := range rulesOf(sp) {
			return r.Name(), r.Line
		}
	}
	return "", 0
}

// schemaDifferences lists (at most 5) the fields whose schema differs
// between the storage version and another version; none when every
// version has the same schema, which is when strategy None is correct.
func schemaDifferences(c *schema.CRD) []string {
	var base *schema.Version
	for _, v := range c.Versions() {
		if v.Storage {
			base = v
		}
	}
	if base == nil {
		return nil
	}
	var out []string
	for _, v := range c.Versions() {
		if v == base {
			continue
		}
		if reflect.DeepEqual(v.OpenAPI, base.OpenAPI) {
			continue
		}
		fa, fb := schema.Fields(base.Structural), schema.Fields(v.Structural)
		for _, f := range fa {
			if !slices.Contains(fb, f) {
				out = append(out, fmt.Sprintf("%s only in %s", f, base.Name))
			}
		}
		for _, f := range fb {
			if !slices.Contains(fa, f) {
				out = append(out, fmt.Sprintf("%s only in %s", f, v.Name))
			}
		}
		if len(fa) == len(fb) && len(out) == 0 {
			out = append(out, fmt.Sprintf("constraints differ between %s and %s", base.Name, v.Name))
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("%d more", len(out)-5))
	}
	return out
}

func (s *static) ruleVersions() {
	c, rs := s.crd, s.rules
	s.r.Checks++
	pos := rulePos(rs, 0)
	if rs.Group != "" && rs.Group != c.Group() {
		s.add(Finding{Check: CheckVersions, Message: fmt.Sprintf("rule file group %q differs from the CRD's %q", rs.Group, c.Group()), Pos: pos})
	}
	if rs.Kind != "" && rs.Kind != c.Kind() {
		s.add(Finding{Check: CheckVersions, Message: fmt.Sprintf("rule file kind %q differs from the CRD's %q", rs.Kind, c.Kind()), Pos: pos})
	}
	declared := map[string]bool{rs.Hub: true}
	hub := c.Version(rs.Hub)
	switch {
	case hub == nil:
		s.add(Finding{Check: CheckVersions, From: rs.Hub, Message: fmt.Sprintf("hub %s is not a version of the CRD (versions %v)", rs.Hub, c.VersionNames()), Pos: pos})
	case !hub.Served:
		s.add(Finding{Check: CheckHubServed, From: rs.Hub, Message: "the hub version is not served", Pos: c.Pos(fmt.Sprintf("/spec/versions/%d/served", hub.Index))})
	}
	for _, sp := range rs.Spokes {
		declared[sp.Version] = true
		if c.Version(sp.Version) == nil {
			// A revision of the CRD that drops a version still needs
			// its spoke while objects are stored in it (until a
			// migration and storedVersions say none is): a warning. A
			// misspelled spoke leaves a CRD version without one, which
			// is the error below.
			s.add(Finding{Check: CheckVersions, Severity: SeverityWarning, From: sp.Version, Pos: rulePos(rs, sp.Line),
				Message: fmt.Sprintf("spoke %s is not a version of the CRD (versions %v): it converts objects still stored in %s, if any; remove it once status.storedVersions no longer lists %s", sp.Version, c.VersionNames(), sp.Version, sp.Version)})
		}
	}
	for _, v := range c.Versions() {
		if !declared[v.Name] {
			s.add(Finding{Check: CheckVersions, From: v.Name, Message: "CRD version has no spoke in the rule file: it cannot be converted", Pos: c.Pos(fmt.Sprintf("/spec/versions/%d", v.Index))})
		}
	}
}

// mapping is where one field goes in the other version.
type mapping struct {
	path    []string // nil when a rule drops it on purpose
	rule    *rule    // the transforming rule at exactly this field, if any
	exact   bool     // rule transforms exactly this field
	covered bool     // a rule names this field or an ancestor (not lossy)
	// conditional says a rule with a when predicate mapped it: where the
	// predicate does not hold the field passes unchanged, so the static
	// checks cannot tell where it goes (the laws do).
	conditional bool
}

// toHub maps a spoke path to the hub through the rules in order; fromHub
// maps a hub path to the spoke through the rules in reverse.
func mapPath(rules []rule, p []string, toHub bool) mapping {
	m := mapping{path: p}
	n := len(rules)
	for i := 0; i < n; i++ {
		r := &rules[i]
		src, dst := r.From, r.To
		if !toHub {
			r = &rules[n-1-i]
			src, dst = r.To, r.From
		}
		if src == nil || r.Kind == "missing" {
			continue // missing keeps the field where it is
		}
		if !hasPrefix(m.path, src) {
			continue
		}
		m.covered = true
		m.conditional = m.conditional || r.Conditional
		if dst == nil { // spokeOnly (to hub) or hubOnly (to spoke): dropped on purpose, kept by preservation
			m.path = nil
			m.rule = r
			return m
		}
		rest := m.path[len(src):]
		np := append(append([]string{}, dst...), rest...)
		if r.Kind == "listToMap" && len(rest) > 0 {
			key, _ := r.Params["key"].(string)
			if len(rest) > 1 && rest[1] == key {
				// The key field of an item becomes (or comes from) the map key.
				m.path, m.rule, m.exact = nil, r, false
				return m
			}
			item := "{}"
			if !toHub {
				item = "*"
			}
			np = append(append(append([]string{}, dst...), item), rest[1:]...)
		}
		switch {
		case len(rest) == 0 && r.Kind != "rename":
			m.rule, m.exact = r, true
		case len(rest) > 0 && r.Kind != "rename" && r.Kind != "listToMap":
			// Inside a value another rule rewrites as a whole: its shape is
			// the rule's business.
			m.rule, m.exact = r, false
		}
		m.path = np
	}
	return m
}

func skipRoot(seg string) bool {
	return seg == "metadata" || seg == "apiVersion" || seg == "kind"
}

// preservedBy reports whether some ancestor of p in root keeps unknown
// fields (so a missing field there is not lost).
func preservedBy(root *schema.Node, p []string) bool {
	n := root
	for _, seg := range p {
		if n == nil {
			return false
		}
		if n.XPreserveUnknownFields {
			return true
		}
		next, err := schema.LookupSegments(n, []string{seg})
		if err != nil {
			return false
		}
		n = next
	}
	return n != nil && n.XPreserveUnknownFields
}

func (s *static) pair(spoke, hub *schema.Version, rules []rule) {
	// Rule paths exist.
	for i := range rules {
		r := &rules[i]
		if r.Unrolled {
			continue
		}
		s.r.Checks++
		pos := ""
		if s.rules != nil {
			pos = rulePos(s.rules, r.Line)
		}
		if r.From != nil {
			if err := fromExists(spoke.Structural, rules, i); err != nil {
				s.add(Finding{Check: CheckRulePath, From: spoke.Name, Path: pointerOf(r.From), Message: fmt.Sprintf("rule %s names a field that does not exist in %s: %v", r.Name(), spoke.Name, err), Pos: pos})
			}
		}
		if r.To != nil {
			if err := toExists(hub.Structural, rules, i); err != nil {
				s.add(Finding{Check: CheckRulePath, From: hub.Name, Path: pointerOf(r.To), Message: fmt.Sprintf("rule %s names a field that does not exist in %s: %v", r.Name(), hub.Name, err), Pos: pos})
			}
		}
	}
	s.direction(spoke, hub, rules, true)
	s.direction(hub, spoke, rules, false)
	s.accepted(spoke, hub, rules)
}

// accepted lists the fields drop rules give up on purpose, with their
// reasons: accepted losses, not lossy-field errors.
func (s *static) accepted(spoke, hub *schema.Version, rules []rule) {
	for _, r := range rules {
		if r.Kind != "drop" || r.Unrolled {
			continue
		}
		a := Accepted{From: spoke.Name, To: hub.Name, Pointer: pointerOf(r.From)}
		if r.From == nil {
			a.From, a.To, a.Pointer = hub.Name, spoke.Name, pointerOf(r.To)
		}
		a.Reason, _ = r.Params["acknowledgeLoss"].(string)
		if s.rules != nil {
			a.Pos = rulePos(s.rules, r.Line)
		}
		s.r.Accepted = append(s.r.Accepted, a)
	}
}

// A rule names its fields in the shape the object has when the rule runs:
// the spoke's after the rules before it, the hub's before the inverses of
// the rules after it. A field may exist only between rules (parts gathered
// into one object before a join or a cel, a singleton list unwrapped in
// two steps): fromExists and toExists check a rule's paths against that
// shape, never against the final schemas alone.

// fromExists reports why the spoke path of rules[i] names no field of the
// object at that point of the chain, or nil: the path maps back through
// the rules before it to a field of the spoke schema, or lies in what one
// of them writes (a container it creates, a value it rewrites).
func fromExists(spoke *schema.Node, rules []rule, i int) error {
	p := rules[i].From
	for j := i - 1; j >= 0; j-- {
		if hasPrefix(rules[j].To, p) { // a container rule j writes into
			return nil
		}
	}
	m := mapPath(rules[:i], p, false)
	if m.path == nil || m.rule != nil && !m.exact {
		return nil // made by a rule from nothing (hubOnly), or inside its output
	}
	return existsIn(spoke, m.path)
}

// toExists is fromExists for the hub path of rules[i]: it maps forward
// through the rules after it to a field of the hub schema, or lies in what
// one of them reads (a container it takes apart, a value it rewrites).
func toExists(hub *schema.Node, rules []rule, i int) error {
	p := rules[i].To
	for j := i + 1; j < len(rules); j++ {
		if hasPrefix(rules[j].From, p) {
			return nil
		}
	}
	m := mapPath(rules[i+1:], p, true)
	if m.path == nil || m.rule != nil {
		return nil // dropped on purpose (spokeOnly), or read by a later rule
	}
	return existsIn(hub, m.path)
}

// existsIn reports why p names no field of root, or nil. Labels and
// annotations exist in every version.
func existsIn(root *schema.Node, p []string) error {
	if len(p) == 3 && p[0] == "metadata" && (p[1] == "labels" || p[1] == "annotations") {
		return nil
	}
	_, err := schema.LookupSegments(root, p)
	if err != nil && preservedBy(root, p) {
		return nil
	}
	return err
}

// direction walks every field of from, finds its counterpart in to, and
// reports lossy fields and values from accepts that to cannot hold.
func (s *static) direction(from, to *schema.Version, rules []rule, toHub bool) {
	c := s.crd
	var lostPrefixes [][]string
	for _, fp := range schema.Fields(from.Structural) {
		segs := pointerSegments(fp)
		if len(segs) == 0 || skipRoot(segs[0]) {
			continue
		}
		if slices.ContainsFunc(lostPrefixes, func(p []string) bool { return hasPrefix(segs, p) }) {
			continue
		}
		fn, err := schema.LookupSegments(from.Structural, segs)
		if err != nil {
			continue
		}
		m := mapPath(rules, segs, toHub)
		s.r.Checks++
		if m.path == nil {
			continue // dropped on purpose by spokeOnly/hubOnly: preserved
		}
		if m.conditional {
			continue // moved only where a when predicate holds: the laws judge it
		}
		if isMetaEntry(m.path) {
			s.metaEntry(from, to, fn, m, segs, fp)
			continue
		}
		tn, err := schema.LookupSegments(to.Structural, m.path)
		if err != nil && ancestorOfRule(rules, segs, toHub) {
			continue // a container some rule maps into: its children are checked
		}
		if err != nil {
			if preservedBy(to.Structural, m.path) || (m.rule != nil && !m.exact) {
				continue // kept as unknown fields, or inside a value a rule rewrites
			}
			lostPrefixes = append(lostPrefixes, segs)
			f := Finding{Check: CheckLossy, From: from.Name, To: to.Name, Path: fp, ToPath: pointerOf(m.path),
				Message: fmt.Sprintf("field exists in %s only and no rule maps or preserves it: its value is lost converting to %s", from.Name, to.Name),
				Pos:     c.Pos(c.SchemaPointer(from, segs))}
			s.add(f)
			continue
		}
		base := Finding{From: from.Name, To: to.Name, Path: fp, ToPath: pointerOf(m.path), Pos: c.Pos(c.SchemaPointer(from, segs))}
		if m.rule != nil {
			if m.exact {
				s.transform(base, fn, tn, m.rule, toHub)
			}
			continue
		}
		for _, cf := range contain(fn, tn) {
			f := base
			f.Check = CheckDomain
			f.Severity = cf.severity
			f.FromConstraint, f.ToConstraint = cf.a, cf.b
			f.Message = fmt.Sprintf("%s: %s accepts values %s cannot hold", cf.what, from.Name, to.Name)
			if cf.severity == SeverityWarning {
				f.Message = fmt.Sprintf("%s differs: %s may accept values %s rejects", cf.what, from.Name, to.Name)
			}
			s.add(f)
		}
		// Required children of to that from does not require.
		for _, req := range required(tn) {
			back := mapPath(rules, append(append([]string{}, m.path...), req), !toHub)
			if back.path == nil || len(back.path) != len(segs)+1 || !hasPrefix(back.path, segs) {
				continue
			}
			if !slices.Contains(required(fn), back.path[len(segs)]) {
				f := base
				f.Check = CheckDomain
				f.Path = pointerOf(back.path)
				f.ToPath = pointerOf(append(append([]string{}, m.path...), req))
				f.FromConstraint = "optional"
				f.ToConstraint = "required"
				f.Message = fmt.Sprintf("required: %s accepts objects without the field, %s requires it", from.Name, to.Name)
				s.add(f)
			}
		}
		if toHub && !namedByMissing(rules, segs, m.path) {
			da, oka := schema.Default(fn)
			db, okb := schema.Default(tn)
			if (oka || okb) && (oka != okb || !Equal(da, db)) {
				f := base
				f.Check = CheckDefault
				f.Severity = SeverityWarning
				f.FromConstraint, f.ToConstraint = defaultDesc(da, oka), defaultDesc(db, okb)
				f.Message = "defaults differ: an object written without the field reads back differently in each version"
				s.add(f)
			}
		}
	}
}

func defaultDesc(v any, ok bool) string {
	if !ok {
		return "no default"
	}
	return "default " + jsonStr(v)
}

// transform checks a field rewritten by a rule other than rename, in the
// direction given (from's node fn into to's node tn).
func (s *static) transform(base Finding, fn, tn *schema.Node, r *rule, toHub bool) {
	base.Check = CheckDomain
	add := func(fc, tc, msg string, sev Severity) {
		f := base
		f.FromConstraint, f.ToConstraint, f.Message, f.Severity = fc, tc, fmt.Sprintf("rule %s: %s", r.Name(), msg), sev
		s.add(f)
	}
	ft, tt := typeOf(fn), typeOf(tn)
	want := func(fromType, toType string) bool {
		if !toHub {
			fromType, toType = toType, fromType
		}
		ok := true
		if ft != fromType && ft != "any" && !(fromType == "integer" && ft == "int-or-string") && !(fromType == "number" && ft == "integer") {
			add("type "+ft, "type "+tt, fmt.Sprintf("expects type %s in %s", fromType, base.From), SeverityError)
			ok = false
		}
		if tt != toType && tt != "any" && !(toType == "number" && tt == "integer") && tt != "int-or-string" {
			add("type "+ft, "type "+tt, fmt.Sprintf("produces type %s, %s holds type %s", toType, base.To, tt), SeverityError)
			ok = false
		}
		return ok
	}
	switch r.Kind {
	case "enum":
		if pairs, ok := r.Params["pairs"].([][2]string); ok {
			s.typedEnum(base, fn, tn, r, pairs, toHub, add)
			return
		}
		values, _ := r.Params["values"].(map[string]any)
		fromVals := enumValues(fn)
		if !toHub {
			// Many spoke values may share a hub value: any of them is an
			// equivalent (the engine restores the original from its
			// annotation). Hub-only values map to their chosen spoke value.
			inv := map[string]any{}
			for k, v := range values {
				inv[fmt.Sprint(v)] = k
			}
			hubValues, _ := r.Params["hubValues"].(map[string]any)
			for k, v := range hubValues {
				inv[k] = v
			}
			values = inv
		}
		if len(fromVals) == 0 {
			add("any string", "enum mapping of "+jsonStr(keys(values)), "values outside the mapping have no equivalent", SeverityWarning)
		}
		toVals := enumValues(tn)
		for _, v := range fromVals {
			mv, ok := values[fmt.Sprint(v)]
			switch {
			case !ok:
				add(enumDesc(fromVals), "enum mapping of "+jsonStr(keys(values)), fmt.Sprintf("value %s has no mapping", jsonStr(v)), SeverityError)
			case len(toVals) > 0 && !containsValue(toVals, mv):
				add(enumDesc(fromVals), enumDesc(toVals), fmt.Sprintf("value %s maps to %s, which %s does not accept", jsonStr(v), jsonStr(mv), base.To), SeverityError)
			}
		}
	case "duration":
		// The spoke holds integer seconds and the hub the string, or
		// (spoke: string) the other way round.
		spokeString := r.Params["spoke"] == "string"
		if spokeString {
			want("string", "integer")
		} else {
			want("integer", "string")
		}
		if toHub != spokeString { // from the integer side
			if lo, _, loD, _ := intBounds(fn); lo < 0 {
				add(loD, "a duration", "negative durations", SeverityWarning)
			}
		}
	case "intToString":
		want("integer", "string")
	case "stringToInt":
		want("string", "integer")
	case "scale":
		if !want("integer", "integer") {
			return
		}
		factor := 1.0
		if m, ok := toFloat(r.Params["multiply"]); ok {
			factor = m
		} else if d, ok := toFloat(r.Params["divide"]); ok && d != 0 {
			factor = 1 / d
		}
		if !toHub {
			factor = 1 / factor
		}
		lo, hi, loD, hiD := intBounds(fn)
		tlo, thi, tloD, thiD := intBounds(tn)
		if thi == math.Inf(1) {
			thi, thiD = math.MaxInt64, "int64 (maximum 9223372036854775807)"
		}
		if tlo == math.Inf(-1) {
			tlo, tloD = math.MinInt64, "int64 (minimum -9223372036854775808)"
		}
		if hi*factor > thi {
			add(hiD+fmt.Sprintf(" (x%s)", num(factor)), thiD, "scaled maximum overflows", SeverityError)
		}
		if lo*factor < tlo {
			add(loD+fmt.Sprintf(" (x%s)", num(factor)), tloD, "scaled minimum underflows", SeverityError)
		}
		if round, _ := r.Params["round"].(string); factor < 1 && (round == "" || round == "reject") {
			div := 1 / factor
			mult := 0.0
			if fn.ValueValidation != nil && fn.ValueValidation.MultipleOf != nil {
				mult = *fn.ValueValidation.MultipleOf
			}
			if mult == 0 || math.Mod(mult, div) != 0 {
				add("any integer", "multiples of "+num(div), fmt.Sprintf("values that are not multiples of %s cannot be held exactly", num(div)), SeverityWarning)
			}
		}
	case "quantity":
		forms := map[string]string{"string": "string", "integer": "integer", "object": "object"}
		spokeForm, _ := r.Params["spoke"].(string)
		hubForm, _ := r.Params["hub"].(string)
		from, to := forms[spokeForm], forms[hubForm]
		if !toHub {
			from, to = to, from
		}
		// A quantity string is often declared int-or-string (as
		// resource.Quantity is); want accepts that for integer, and a
		// string side may hold one too.
		if from == "string" && ft == "int-or-string" {
			from = "int-or-string"
		}
		if to == "string" && tt == "int-or-string" {
			to = "int-or-string"
		}
		fs, ts := from, to
		if !toHub {
			fs, ts = to, from
		}
		if !want(fs, ts) {
			return
		}
		if otherwise, _ := r.Params["otherwise"].(string); from != "integer" && to == "integer" && otherwise != "keep" {
			add("any quantity", "whole numbers of the base unit", "a quantity that is not a whole number of base units (1500m) has no integer form: converting it fails (otherwise: keep would keep it aside)", SeverityWarning)
		}
	case "listToMap":
		key, _ := r.Params["key"].(string)
		list, obj := fn, tn
		if !toHub {
			list, obj = tn, fn
		}
		if typeOf(list) != "array" {
			add("type "+typeOf(list), "type "+typeOf(obj), "expects a list on the spoke side", SeverityError)
			return
		}
		if typeOf(obj) != "object" || obj.AdditionalProperties == nil {
			add("list", "type "+typeOf(obj), "expects a map (object with additionalProperties) on the hub side", SeverityError)
			return
		}
		if toHub {
			lt, ks := schema.ListType(list)
			if lt != "map" || !sameStrings(ks, []string{key}) {
				add(listDesc(lt, ks)+" (duplicate "+key+" values accepted)", "map keyed by "+key, "a list with two items of the same "+key+" cannot be held by the map: converting it fails", SeverityWarning)
			}
			if list.Items == nil || !slices.Contains(required(list.Items), key) {
				add(key+" optional", key+" is the map key", "items without "+key+" cannot be held by the map", SeverityError)
			}
		}
		if !toHub && list.Items != nil {
			// Map keys carry no schema: any string is a valid hub key.
			if kn, ok := list.Items.Properties[key]; ok && typeOf(&kn) == "string" {
				anyString := &schema.Node{}
				anyString.Type = "string"
				for _, c := range contain(anyString, &kn) {
					add("map key: any string", c.b, fmt.Sprintf("hub map keys are unconstrained, but %s items need %s with %s", base.To, key, c.b), c.severity)
				}
			}
		}
	}
}

// typedEnum checks an enum whose values are typed (numbers, booleans,
// strings), from the JSON pairs the loader read.
func (s *static) typedEnum(base Finding, fn, tn *schema.Node, r *rule, pairs [][2]string, toHub bool, add func(fc, tc, msg string, sev Severity)) {
	values := map[string]any{} // canonical JSON of a source value -> target value
	var names []string
	decode := func(raw string) any {
		v, err := decodeJSON([]byte(raw))
		if err != nil {
			return raw
		}
		return unstructured(v)
	}
	put := func(k, v string) {
		key := jsonStr(decode(k))
		if _, ok := values[key]; !ok {
			values[key] = decode(v)
			names = append(names, key)
		}
	}
	if toHub {
		for _, p := range pairs {
			put(p[0], p[1])
		}
	} else {
		// Back from the hub: any spoke value of a hub value is an
		// equivalent (the engine restores the original from its
		// annotation); a hub-only value maps to the spoke value it is
		// shown as.
		for _, p := range pairs {
			put(p[1], p[0])
		}
		hubPairs, _ := r.Params["hubPairs"].([][2]string)
		for _, p := range hubPairs {
			put(p[0], p[1])
		}
	}
	slices.Sort(names)
	mapping := "enum mapping of [" + strings.Join(names, ",") + "]"
	fromVals, toVals := enumValues(fn), enumValues(tn)
	if len(fromVals) == 0 {
		add("any value", mapping, "values outside the mapping have no equivalent", SeverityWarning)
	}
	for _, v := range fromVals {
		mv, ok := values[jsonStr(v)]
		switch {
		case !ok:
			add(enumDesc(fromVals), mapping, fmt.Sprintf("value %s has no mapping", jsonStr(v)), SeverityError)
		case len(toVals) > 0 && !containsValue(toVals, mv):
			add(enumDesc(fromVals), enumDesc(toVals), fmt.Sprintf("value %s maps to %s, which %s does not accept", jsonStr(v), jsonStr(mv), base.To), SeverityError)
		}
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// namedByMissing reports whether a missing rule names the field (at a or
// b): it says what the field's absence is on the other side, which is what
// differing defaults would otherwise leave unsaid.
func namedByMissing(rules []rule, a, b []string) bool {
	for _, r := range rules {
		if r.Kind == "missing" && (slices.Equal(r.From, a) || slices.Equal(r.From, b)) {
			return true
		}
	}
	return false
}

// isMetaEntry reports whether p names one label or annotation.
func isMetaEntry(p []string) bool {
	return len(p) == 3 && p[0] == "metadata" && (p[1] == "labels" || p[1] == "annotations")
}

// metaEntry checks a field a rule maps to or from a label or an
// annotation: those hold strings, and a label only label values.
func (s *static) metaEntry(from, to *schema.Version, fn *schema.Node, m mapping, segs []string, fp string) {
	c := s.crd
	f := Finding{Check: CheckDomain, From: from.Name, To: to.Name, Path: fp, ToPath: pointerOf(m.path), Pos: c.Pos(c.SchemaPointer(from, segs))}
	if m.rule != nil && m.rule.Kind != "rename" {
		return // a rule converts the value: its business
	}
	switch t := typeOf(fn); {
	case t != "string" && t != "any":
		f.FromConstraint, f.ToConstraint = "type "+t, m.path[1]+" hold strings"
		f.Message = fmt.Sprintf("%s accepts values %s cannot hold: %s hold strings (convert the value, say with intToString)", from.Name, to.Name, m.path[1])
		s.add(f)
	case m.path[1] == "labels" && !labelSafe(fn):
		f.Severity = SeverityWarning
		f.FromConstraint, f.ToConstraint = "any string", "label value (at most 63 characters, alphanumeric at both ends)"
		f.Message = fmt.Sprintf("%s accepts strings that are not label values: converting them to %s fails", from.Name, to.Name)
		s.add(f)
	}
}

// labelSafe reports whether every string n accepts is a label value, as
// far as its length and enum tell.
func labelSafe(n *schema.Node) bool {
	if n == nil || n.ValueValidation == nil {
		return false
	}
	vv := n.ValueValidation
	if len(vv.Enum) > 0 {
		for _, e := range vv.Enum {
			if str, ok := e.Object.(string); !ok || apirules.LabelValue(str) != nil {
				return false
			}
		}
		return true
	}
	return vv.MaxLength != nil && *vv.MaxLength <= 63 && vv.Pattern != ""
}

// ancestorOfRule reports whether p is a proper ancestor of a path a rule
// maps (on the side p lives on).
func ancestorOfRule(rules []rule, p []string, toHub bool) bool {
	for _, r := range rules {
		src := r.From
		if !toHub {
			src = r.To
		}
		if len(src) > len(p) && hasPrefix(src, p) {
			return true
		}
	}
	return false
}
