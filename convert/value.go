package convert

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hubspoke/hubspoke/apirules"
)

// valueRule converts a scalar between the spoke field from and the hub field
// to (the same path converts in place). Conversions that would lose
// something on the way back (rounding, a non-canonical spelling) keep the
// exact value in the preserved annotation, restored only while the converted
// value is left as it was: an edit made through the other version since wins
// over the kept value.
type valueRule struct {
	kind     string
	from, to Path
	detail   string
	// toHub and fromHub append the converted raw value to dst (the
	// conversion's scratch memory, so that converting a value allocates
	// nothing of its own) and report whether it is exact (converting it
	// back gives the input again). An *asideError says the value has no
	// form in the destination: with aside set, it is kept in the preserved
	// annotation instead of failing.
	toHub, fromHub valueFunc
	aside          bool
}

// valueFunc converts the value n, appending the result to dst.
type valueFunc func(dst []byte, n node) ([]byte, bool, error)

func (r *valueRule) String() string {
	s := fmt.Sprintf("%s %s", r.kind, r.from)
	if !r.from.Equal(r.to) {
		s += " -> " + r.to.String()
	}
	if r.detail != "" {
		s += " (" + r.detail + ")"
	}
	return s
}

// paths include the annotations: a value rule reads the preserved
// annotation for a kept exact value, so it is expanded in the first scan.
func (r *valueRule) paths() []Path { return []Path{r.from, r.to, annotationsPath} }

func (r *valueRule) ToHub(o *Object) error   { return r.run(o, r.from, r.to, r.toHub) }
func (r *valueRule) FromHub(o *Object) error { return r.run(o, r.to, r.from, r.fromHub) }

func (r *valueRule) run(o *Object, src, dst Path, fn valueFunc) error {
	if r.aside {
		if done, err := r.keptAside(o, src, dst, fn); done || err != nil {
			return err
		}
	}
	return move(o, r, src, dst, func(n node) (node, error) {
		return r.apply(o, n, src, dst, fn)
	})
}

// keptAside handles values that have no form in the other version: one
// the destination version kept aside earlier is restored when the source
// is still missing (an edit made since wins), and a source value fn cannot
// convert is removed and kept aside under the source version.
func (r *valueRule) keptAside(o *Object, src, dst Path, fn valueFunc) (bool, error) {
	kept, ok, err := o.takeField(o.to, dst)
	if err != nil {
		return true, wrapRuleErr(r, dst, err)
	}
	n, err := o.lookup(src)
	if err != nil {
		return true, wrapRuleErr(r, src, err)
	}
	if n == nil {
		if !ok {
			return true, nil
		}
		if cur, err := o.lookup(dst); err != nil || cur != nil {
			return true, wrapRuleErr(r, dst, err)
		}
		return true, wrapRuleErr(r, dst, o.set(dst, node{raw: o.st.keep(kept)}))
	}
	if n.isNull() {
		return false, nil
	}
	raw := o.rawOf(n)
	var ae *asideError
	if _, _, err := fn(o.st.scratch, readAs(*n, raw)); !errors.As(err, &ae) {
		return false, nil
	}
	if err := o.keepField(o.from, src, raw); err != nil {
		return true, wrapRuleErr(r, src, err)
	}
	if _, _, err := o.del(src); err != nil {
		return true, wrapRuleErr(r, src, err)
	}
	return true, wrapRuleErr(r, src, o.pruneEmpty(src, commonPrefixLen(src, dst)))
}

// asideError says why a value has no form in the destination version:
// under otherwise: fail that is the conversion's error, under otherwise:
// keep the value is kept in the preserved annotation.
type asideError struct{ msg string }

func (e *asideError) Error() string { return e.msg }

func asideErr(format string, args ...any) error {
	return &asideError{msg: fmt.Sprintf(format, args...)}
}

// readAs returns n, whose JSON is raw, as a valueFunc reads it: a list
// changed in place as that JSON (they read a list's bytes), anything else
// as it is.
func readAs(n node, raw []byte) node {
	if n.list != nil && n.list.modified {
		return node{raw: raw}
	}
	return n
}

// apply converts n read at src for dst, honouring a kept exact value.
func (r *valueRule) apply(o *Object, n node, src, dst Path, fn valueFunc) (node, error) {
	raw := o.rawOf(&n)
	// The destination version owns an exact value if an earlier conversion
	// out of it lost something.
	if v, ok, err := o.takeExact(o.to, dst, raw); err != nil {
		return node{}, wrapRuleErr(r, dst, err)
	} else if ok {
		return node{raw: o.st.keep(v)}, nil
	}
	in := readAs(n, raw)
	start := len(o.st.scratch)
	out, exact, err := fn(o.st.scratch, in)
	if err != nil {
		var ae *asideError
		if errors.As(err, &ae) {
			return node{}, ruleErr(r, src, "%s (otherwise: fail; otherwise: keep would keep it in the preserved annotation)", ae.msg)
		}
		return node{}, ruleErr(r, src, "%v", err)
	}
	o.st.scratch = out
	v := out[start:len(out):len(out)]
	if !exact {
		if err := o.keepExact(o.from, src, raw, v); err != nil {
			return node{}, wrapRuleErr(r, src, err)
		}
	}
	return node{raw: v}, nil
}

// --- enum -------------------------------------------------------------------

// EnumPair is one spoke value and one hub value of an enum.
type EnumPair struct{ Spoke, Hub string }

// EnumValues is the mapping of an enum rule.
type EnumValues struct {
	// Pairs maps spoke values to hub values. Several spoke values may map
	// to one hub value: the first of them in Pairs is the one that hub
	// value converts back to; a later one is kept in the preserved
	// annotation and restored on the way back (unless the hub value was
	// edited since).
	Pairs []EnumPair
	// HubOnly lists hub values no spoke value maps to, each with the spoke
	// value it is shown as. The hub value is kept in the preserved
	// annotation and comes back unchanged (unless the spoke value was
	// edited since).
	HubOnly []EnumPair
}

// Enum maps the string values of the spoke field from to those of the hub
// field to, one to one. A value outside the mapping fails the conversion,
// naming the field, the value and the allowed values. EnumWith also takes
// many-to-one mappings and hub-only values.
func Enum(from, to Path, values map[string]string) (Rule, error) {
	var v EnumValues
	seen := map[string]string{}
	for _, k := range sortedKeys(values) {
		if prev, dup := seen[values[k]]; dup {
			return nil, fmt.Errorf("enum %s: spoke values %q and %q both map to hub value %q; the mapping must be one-to-one to be inverted (EnumWith takes an ordered mapping whose first value is the one the hub value converts back to)", from, prev, k, values[k])
		}
		seen[values[k]] = k
		v.Pairs = append(v.Pairs, EnumPair{Spoke: k, Hub: values[k]})
	}
	return EnumWith(from, to, v)
}

// EnumWith maps the string values of the spoke field from to those of the
// hub field to by v (see EnumValues).
func EnumWith(from, to Path, v EnumValues) (Rule, error) {
	f, t, err := checkPair("enum", from, to)
	if err != nil {
		return nil, err
	}
	if len(v.Pairs) == 0 {
		return nil, fmt.Errorf("enum %s: no values", from)
	}
	fwd := map[string]string{}
	inv := map[string]string{} // hub -> canonical spoke
	for _, p := range v.Pairs {
		if h, dup := fwd[p.Spoke]; dup {
			return nil, fmt.Errorf("enum %s: spoke value %q is mapped twice (to %q and %q)", from, p.Spoke, h, p.Hub)
		}
		fwd[p.Spoke] = p.Hub
		if _, ok := inv[p.Hub]; !ok {
			inv[p.Hub] = p.Spoke
		}
	}
	shown := map[string]string{} // hub-only value -> spoke value
	for _, p := range v.HubOnly {
		if s, ok := inv[p.Hub]; ok {
			return nil, fmt.Errorf("enum %s: hub value %q is not hub-only: spoke value %q maps to it", from, p.Hub, s)
		}
		if _, dup := shown[p.Hub]; dup {
			return nil, fmt.Errorf("enum %s: hub-only value %q is listed twice", from, p.Hub)
		}
		if _, ok := fwd[p.Spoke]; !ok {
			return nil, fmt.Errorf("enum %s: hub-only value %q is shown as %q, which is not a spoke value of the mapping", from, p.Hub, p.Spoke)
		}
		shown[p.Hub] = p.Spoke
	}
	spokeList, hubList := quotedList(fwd), quotedList(inv, shown)
	toHub := func(dst []byte, n node) ([]byte, bool, error) {
		s, ok := stringBytes(n)
		if !ok {
			return nil, false, fmt.Errorf("value %s is %s, not a string; allowed values: %s", n.raw, describe(n), spokeList)
		}
		h, ok := fwd[string(s)]
		if !ok {
			return nil, false, fmt.Errorf("value %q is not mapped; allowed values: %s", s, spokeList)
		}
		return appendQuoted(dst, h), inv[h] == string(s), nil
	}
	fromHub := func(dst []byte, n node) ([]byte, bool, error) {
		h, ok := stringBytes(n)
		if !ok {
			return nil, false, fmt.Errorf("value %s is %s, not a string; allowed values: %s", n.raw, describe(n), hubList)
		}
		if s, ok := inv[string(h)]; ok {
			return appendQuoted(dst, s), true, nil
		}
		if s, ok := shown[string(h)]; ok {
			return appendQuoted(dst, s), false, nil
		}
		return nil, false, fmt.Errorf("value %q is not mapped; allowed values: %s", h, hubList)
	}
	return scoped(&valueRule{kind: "enum", from: f, to: t, toHub: toHub, fromHub: fromHub}, from), nil
}

// quotedList lists the keys of the maps, sorted and quoted, for messages.
func quotedList(ms ...map[string]string) string {
	var keys []string
	for _, m := range ms {
		keys = append(keys, sortedKeys(m)...)
	}
	sort.Strings(keys)
	quoted := make([]string, len(keys))
	for i, a := range keys {
		quoted[i] = strconv.Quote(a)
	}
	return strings.Join(quoted, ", ")
}

// --- durations ----------------------------------------------------------------

// Rounding says how a duration that is not a whole number of units becomes an
// integer.
type Rounding string

// Rounding policies.
const (
	RoundReject Rounding = "reject" // fail the conversion
	RoundFloor  Rounding = "floor"  // toward negative infinity
	RoundCeil   Rounding = "ceil"   // toward positive infinity
	RoundHalf   Rounding = "round"  // to the nearest, halves away from zero
)

var units = map[string]time.Duration{
	"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond,
	"s": time.Second, "m": time.Minute, "h": time.Hour,
}

// unitNames for messages.
var unitNames = map[time.Duration]string{
	time.Nanosecond: "nanoseconds", time.Microsecond: "microseconds", time.Millisecond: "milliseconds",
	time.Second: "seconds", time.Minute: "minutes", time.Hour: "hours",
}

// ParseUnit parses a duration unit: ns, us, ms, s, m or h.
func ParseUnit(s string) (time.Duration, error) {
	u, ok := units[s]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (want one of ns, us, ms, s, m, h)", s)
	}
	return u, nil
}

// Duration converts an integer count of unit in the spoke field from to a
// duration string in the hub field to, written as Go's time.Duration and
// metav1.Duration write it (30 -> "30s", 90 -> "1m30s"). The inverse parses
// the string (Go duration syntax) and applies round when it is not a whole
// number of units.
func Duration(from, to Path, unit time.Duration, round Rounding) (Rule, error) {
	return duration(from, to, unit, round, false)
}

// DurationToInt is Duration the other way round: the spoke holds the
// duration string and the hub the integer count of unit; round applies on
// the way to the hub.
func DurationToInt(from, to Path, unit time.Duration, round Rounding) (Rule, error) {
	return duration(from, to, unit, round, true)
}

func duration(from, to Path, unit time.Duration, round Rounding, spokeString bool) (Rule, error) {
	f, t, err := checkPair("duration", from, to)
	if err != nil {
		return nil, err
	}
	name, ok := unitNames[unit]
	if !ok {
		return nil, fmt.Errorf("duration %s: unit must be one of ns, us, ms, s, m, h", from)
	}
	switch round {
	case RoundReject, RoundFloor, RoundCeil, RoundHalf:
	case "":
		round = RoundReject
	default:
		return nil, fmt.Errorf("duration %s: round must be one of reject, floor, ceil, round; got %q", from, round)
	}
	toHub := func(dst []byte, n node) ([]byte, bool, error) {
		v, canonical, err := intOf(n)
		if err != nil {
			return nil, false, err
		}
		if v > math.MaxInt64/int64(unit) || v < math.MinInt64/int64(unit) {
			return nil, false, fmt.Errorf("%d %s is too long for a duration (at most %d)", v, name, math.MaxInt64/int64(unit))
		}
		return appendQuoted(dst, time.Duration(v*int64(unit)).String()), canonical, nil
	}
	fromHub := func(dst []byte, n node) ([]byte, bool, error) {
		s, ok := stringOf(n)
		if !ok {
			return nil, false, fmt.Errorf("value %s is %s, not a duration string", n.raw, describe(n))
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, false, fmt.Errorf("value %q is not a duration: %w", s, err)
		}
		q, rem := int64(d)/int64(unit), int64(d)%int64(unit)
		if rem != 0 {
			switch round {
			case RoundReject:
				return nil, false, fmt.Errorf("duration %q is not a whole number of %s (round: reject; choose floor, ceil or round to allow it)", s, name)
			case RoundFloor:
				if rem < 0 {
					q--
				}
			case RoundCeil:
				if rem > 0 {
					q++
				}
			case RoundHalf:
				if rem < 0 && -rem*2 >= int64(unit) {
					q--
				} else if rem > 0 && rem*2 >= int64(unit) {
					q++
				}
			}
		}
		exact := rem == 0 && time.Duration(q*int64(unit)).String() == s
		return strconv.AppendInt(dst, q, 10), exact, nil
	}
	r := &valueRule{kind: "duration", from: f, to: t, detail: fmt.Sprintf("unit %s, round %s", unitShort(unit), round), toHub: toHub, fromHub: fromHub}
	if spokeString {
		r.detail += ", spoke string"
		r.toHub, r.fromHub = fromHub, toHub
	}
	return scoped(r, from), nil
}

func unitShort(u time.Duration) string {
	for k, v := range units {
		if v == u {
			return k
		}
	}
	return u.String()
}

// --- integers and strings --------------------------------------------------------

var canonicalInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func intToStringFunc(dst []byte, n node) ([]byte, bool, error) {
	if n.kind() != '-' && (n.kind() < '0' || n.kind() > '9') {
		return nil, false, fmt.Errorf("value %s is %s, not an integer", n.raw, describe(n))
	}
	if !canonicalInt.Match(n.raw) {
		return nil, false, fmt.Errorf("value %s is not an integer", n.raw)
	}
	dst = append(dst, '"')
	dst = append(dst, n.raw...) // digits: nothing to escape
	return append(dst, '"'), true, nil
}

func stringToIntFunc(dst []byte, n node) ([]byte, bool, error) {
	s, ok := stringOf(n)
	if !ok {
		return nil, false, fmt.Errorf("value %s is %s, not a string", n.raw, describe(n))
	}
	if canonicalInt.MatchString(s) {
		if err := apirules.Number([]byte(s)); err != nil {
			return nil, false, fmt.Errorf("the string cannot become a number: %v", err)
		}
		return append(dst, s...), true, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return nil, false, fmt.Errorf("value %q is not an integer", s)
	}
	return strconv.AppendInt(dst, v, 10), false, nil
}

// IntToString converts an integer in the spoke field from to its decimal
// string in the hub field to (8080 -> "8080"). The inverse parses the string;
// a string that is not an integer fails the conversion. Integers are carried
// digit for digit, however large, up to what the API server can decode (a
// finite float64, about 309 digits): a longer one fails the conversion.
func IntToString(from, to Path) (Rule, error) {
	f, t, err := checkPair("intToString", from, to)
	if err != nil {
		return nil, err
	}
	return scoped(&valueRule{kind: "intToString", from: f, to: t, toHub: intToStringFunc, fromHub: stringToIntFunc}, from), nil
}

// StringToInt is IntToString the other way round: a decimal string in the
// spoke becomes an integer in the hub.
func StringToInt(from, to Path) (Rule, error) {
	f, t, err := checkPair("stringToInt", from, to)
	if err != nil {
		return nil, err
	}
	return scoped(&valueRule{kind: "stringToInt", from: f, to: t, toHub: stringToIntFunc, fromHub: intToStringFunc}, from), nil
}

// --- scale --------------------------------------------------------------------

// Scale converts an integer between units: the hub value is the spoke value
// multiplied by multiply, or divided by divide (exactly one of them is set).
// A division that is not exact fails the conversion, as does an overflow of
// int64.
func Scale(from, to Path, multiply, divide int64) (Rule, error) {
	f, t, err := checkPair("scale", from, to)
	if err != nil {
		return nil, err
	}
	if (multiply == 0) == (divide == 0) {
		return nil, fmt.Errorf("scale %s: set exactly one of multiply and divide", from)
	}
	if multiply < 0 || divide < 0 {
		return nil, fmt.Errorf("scale %s: the factor must be positive", from)
	}
	mul := func(f int64) valueFunc {
		return func(dst []byte, n node) ([]byte, bool, error) {
			v, canonical, err := intOf(n)
			if err != nil {
				return nil, false, err
			}
			if v > math.MaxInt64/f || v < math.MinInt64/f {
				return nil, false, fmt.Errorf("%d × %d overflows int64", v, f)
			}
			return strconv.AppendInt(dst, v*f, 10), canonical, nil
		}
	}
	div := func(f int64) valueFunc {
		return func(dst []byte, n node) ([]byte, bool, error) {
			v, canonical, err := intOf(n)
			if err != nil {
				return nil, false, err
			}
			if v%f != 0 {
				return nil, false, fmt.Errorf("%d is not a multiple of %d, so it cannot be converted exactly", v, f)
			}
			return strconv.AppendInt(dst, v/f, 10), canonical, nil
		}
	}
	r := &valueRule{kind: "scale", from: f, to: t}
	if multiply != 0 {
		r.detail = fmt.Sprintf("multiply %d", multiply)
		r.toHub, r.fromHub = mul(multiply), div(multiply)
	} else {
		r.detail = fmt.Sprintf("divide %d", divide)
		r.toHub, r.fromHub = div(divide), mul(divide)
	}
	return scoped(r, from), nil
}

// intOf reads n as an int64 integer literal. canonical reports whether v
// written back is that literal: true for every integer JSON allows but
// -0, which comes back as 0 (so a rule keeps -0 in the preserved
// annotation, as any value it cannot write back exactly).
func intOf(n node) (v int64, canonical bool, err error) {
	k := n.kind()
	if k != '-' && (k < '0' || k > '9') {
		return 0, false, fmt.Errorf("value %s is %s, not an integer", n.raw, describe(n))
	}
	v, err = strconv.ParseInt(string(n.raw), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, false, fmt.Errorf("value %s is out of the int64 range", n.raw)
		}
		return 0, false, fmt.Errorf("value %s is not an integer", n.raw)
	}
	return v, string(n.raw) != "-0", nil
}
