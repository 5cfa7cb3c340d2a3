package convert

import (
	"encoding/json"
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
		if cur, err := o.lookup(dst); err != nil || cur != nil && !o.keptWins {
			return true, wrapRuleErr(r, dst, err)
		}
		return true, wrapRuleErr(r, dst, o.set(dst, node{raw: o.st.keep(kept)}))
	}
	if ok && o.keptWins {
		// The kept value wins over the value set since.
		keep := func(node) (node, error) { return node{raw: o.st.keep(kept)}, nil }
		return true, wrapRuleErr(r, src, move(o, r, src, dst, keep))
	}
	if n.isNull() {
		return false, nil
	}
	raw := o.rawOf(n)
	// An exact value the destination version kept against this value
	// comes back first (see celRule.aside).
	if v, ok, err := o.takeExact(o.to, dst, raw); err != nil {
		return true, wrapRuleErr(r, dst, err)
	} else if ok {
		return true, move(o, r, src, dst, func(node) (node, error) { return node{raw: o.st.keep(v)}, nil })
	}
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
	// Typed says the values of Pairs and HubOnly are JSON values, each a
	// string, a number or a boolean (`"Fast"`, `1`, `2.5`, `true`), not
	// strings: an enum over integers (a Go iota), numbers or booleans,
	// or between them and strings. A number matches by value (1.0 is 1);
	// one spelled otherwise than the API server writes it is kept exact.
	Typed bool
}

// Enum maps the string values of the spoke field from to those of the hub
// field to, one to one. A value outside the mapping fails the conversion,
// naming the field, the value and the allowed values. EnumWith also takes
// many-to-one mappings, hub-only values and values other than strings.
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

// enumSide is one side's values of an enum, by their JSON: strings by
// their content, numbers and booleans by the API server's spelling.
type enumSide struct {
	str, other map[string]int // -> index in values
	values     [][]byte       // each value as JSON, as the API server writes it
	names      []string       // each value for messages
}

func (e *enumSide) add(v []byte, label string) (int, bool) {
	if e.str == nil {
		e.str, e.other = map[string]int{}, map[string]int{}
	}
	m, k := e.keyOf(v)
	if i, dup := m[k]; dup {
		return i, false
	}
	m[k] = len(e.values)
	e.values = append(e.values, v)
	e.names = append(e.names, label)
	return len(e.values) - 1, true
}

// keyOf returns the map and key of the value v (canonical JSON).
func (e *enumSide) keyOf(v []byte) (map[string]int, string) {
	if v[0] == '"' {
		s, _ := stringOf(node{raw: v})
		return e.str, s
	}
	return e.other, string(v)
}

// find looks n up: its index, whether n is spelled as the value is
// written back (a number such as 1.0 is not), and whether it is there.
func (e *enumSide) find(n node) (int, bool, bool) {
	switch k := n.kind(); {
	case k == '"':
		s, _ := stringBytes(n)
		i, ok := e.str[string(s)]
		return i, true, ok
	case k == 't' || k == 'f':
		i, ok := e.other[string(n.raw)]
		return i, true, ok
	case k == '-' || k >= '0' && k <= '9':
		if i, ok := e.other[string(n.raw)]; ok {
			return i, true, true
		}
		var buf [32]byte
		c, ok := apirules.CanonicalNumber(buf[:0], n.raw)
		if !ok {
			return 0, false, false
		}
		i, ok := e.other[string(c)]
		return i, false, ok
	}
	return 0, false, false
}

func (e *enumSide) list(extra ...*enumSide) string {
	var names []string
	for _, s := range append([]*enumSide{e}, extra...) {
		names = append(names, s.names...)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// enumJSON returns v, a value of an enum, as canonical JSON and its name
// for messages.
func enumJSON(v string, typed bool) ([]byte, string, error) {
	if !typed {
		return quoteKey(v), strconv.Quote(v), nil
	}
	raw := []byte(strings.TrimSpace(v))
	if !json.Valid(raw) || len(raw) == 0 {
		return nil, "", fmt.Errorf("value %s is not JSON", v)
	}
	switch k := raw[0]; {
	case k == '"':
		s, _ := stringOf(node{raw: raw})
		return quoteKey(s), strconv.Quote(s), nil
	case k == 't' || k == 'f':
		return raw, string(raw), nil
	case k == '-' || k >= '0' && k <= '9':
		c, ok := apirules.CanonicalNumber(nil, raw)
		if !ok {
			return nil, "", fmt.Errorf("value %s is a number the API server cannot hold", raw)
		}
		return c, string(c), nil
	}
	return nil, "", fmt.Errorf("value %s is not a string, a number or a boolean", raw)
}

// EnumWith maps the values of the spoke field from to those of the hub
// field to by v (see EnumValues).
func EnumWith(from, to Path, v EnumValues) (Rule, error) {
	f, t, err := checkPair("enum", from, to)
	if err != nil {
		return nil, err
	}
	if len(v.Pairs) == 0 {
		return nil, fmt.Errorf("enum %s: no values", from)
	}
	var spoke, hub, shown enumSide
	fwd := []int{} // spoke index -> hub index
	inv := []int{} // hub index -> canonical spoke index
	var show []int // shown (hub-only) index -> spoke index
	for _, p := range v.Pairs {
		sv, sn, err := enumJSON(p.Spoke, v.Typed)
		if err != nil {
			return nil, fmt.Errorf("enum %s: spoke %w", from, err)
		}
		hv, hn, err := enumJSON(p.Hub, v.Typed)
		if err != nil {
			return nil, fmt.Errorf("enum %s: hub %w", from, err)
		}
		si, isNew := spoke.add(sv, sn)
		if !isNew {
			return nil, fmt.Errorf("enum %s: spoke value %s is mapped twice (to %s and %s)", from, sn, hub.names[fwd[si]], hn)
		}
		hi, isNew := hub.add(hv, hn)
		if isNew {
			inv = append(inv, si)
		}
		fwd = append(fwd, hi)
	}
	for _, p := range v.HubOnly {
		hv, hn, err := enumJSON(p.Hub, v.Typed)
		if err != nil {
			return nil, fmt.Errorf("enum %s: hub-only %w", from, err)
		}
		sv, sn, err := enumJSON(p.Spoke, v.Typed)
		if err != nil {
			return nil, fmt.Errorf("enum %s: hub-only value %s: %w", from, hn, err)
		}
		if hi, _, ok := hub.find(node{raw: hv}); ok {
			return nil, fmt.Errorf("enum %s: hub value %s is not hub-only: spoke value %s maps to it", from, hn, spoke.names[inv[hi]])
		}
		if _, isNew := shown.add(hv, hn); !isNew {
			return nil, fmt.Errorf("enum %s: hub-only value %s is listed twice", from, hn)
		}
		si, _, ok := spoke.find(node{raw: sv})
		if !ok {
			return nil, fmt.Errorf("enum %s: hub-only value %s is shown as %s, which is not a spoke value of the mapping", from, hn, sn)
		}
		show = append(show, si)
	}
	spokeList, hubList := spoke.list(), hub.list(&shown)
	toHub := func(dst []byte, n node) ([]byte, bool, error) {
		si, canonical, ok := spoke.find(n)
		if !ok {
			return nil, false, enumMiss(n, spokeList, v.Typed)
		}
		hi := fwd[si]
		return append(dst, hub.values[hi]...), canonical && inv[hi] == si, nil
	}
	fromHub := func(dst []byte, n node) ([]byte, bool, error) {
		if hi, canonical, ok := hub.find(n); ok {
			return append(dst, spoke.values[inv[hi]]...), canonical, nil
		}
		if i, _, ok := shown.find(n); ok {
			return append(dst, spoke.values[show[i]]...), false, nil
		}
		return nil, false, enumMiss(n, hubList, v.Typed)
	}
	return scoped(&valueRule{kind: "enum", from: f, to: t, toHub: toHub, fromHub: fromHub}, from), nil
}

// enumMiss says why n is not a value of an enum.
func enumMiss(n node, allowed string, typed bool) error {
	switch k := n.kind(); {
	case k == '"':
		s, _ := stringOf(n)
		return fmt.Errorf("value %q is not mapped; allowed values: %s", s, allowed)
	case typed && (k == 't' || k == 'f' || k == '-' || k >= '0' && k <= '9'):
		return fmt.Errorf("value %s is not mapped; allowed values: %s", n.raw, allowed)
	case typed:
		return fmt.Errorf("value %s is %s, not a string, a number or a boolean; allowed values: %s", compact(n.raw), describe(n), allowed)
	}
	return fmt.Errorf("value %s is %s, not a string; allowed values: %s", compact(n.raw), describe(n), allowed)
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
			if round == RoundReject {
				return nil, false, fmt.Errorf("duration %q is not a whole number of %s (round: reject; choose floor, ceil or round to allow it)", s, name)
			}
			q = roundQuotient(q, rem, int64(unit), round)
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
// int64 (ScaleRound rounds it instead).
func Scale(from, to Path, multiply, divide int64) (Rule, error) {
	return ScaleRound(from, to, multiply, divide, RoundReject)
}

// ScaleRound is Scale with a rounding policy for a division that is not
// exact (RoundReject fails, as Scale does): the quotient is rounded, and
// the exact value kept in the preserved annotation and restored on the way
// back while the rounded value is unchanged.
func ScaleRound(from, to Path, multiply, divide int64, round Rounding) (Rule, error) {
	f, t, err := checkPair("scale", from, to)
	if err != nil {
		return nil, err
	}
	switch round {
	case "":
		round = RoundReject
	case RoundReject, RoundFloor, RoundCeil, RoundHalf:
	default:
		return nil, fmt.Errorf("scale %s: round must be one of reject, floor, ceil, round; got %q", from, round)
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
			if q, rem := v/f, v%f; rem != 0 {
				if round == RoundReject {
					return nil, false, fmt.Errorf("%d is not a multiple of %d, so it cannot be converted exactly (round: reject; choose floor, ceil or round to keep the exact value)", v, f)
				}
				return strconv.AppendInt(dst, roundQuotient(q, rem, f, round), 10), false, nil
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
	if round != RoundReject {
		r.detail += ", round " + string(round)
	}
	return scoped(r, from), nil
}

// roundQuotient rounds q, the truncated quotient of a division by f > 0
// with remainder rem != 0, by round.
func roundQuotient(q, rem, f int64, round Rounding) int64 {
	switch round {
	case RoundFloor:
		if rem < 0 {
			q--
		}
	case RoundCeil:
		if rem > 0 {
			q++
		}
	case RoundHalf: // halves away from zero; |rem| < f, so f-|rem| cannot overflow
		if rem < 0 && -rem >= f+rem {
			q--
		} else if rem > 0 && rem >= f-rem {
			q++
		}
	}
	return q
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
