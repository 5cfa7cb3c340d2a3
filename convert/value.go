package convert

import (
	"fmt"
	"math"
	"regexp"
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
	// toHub and fromHub return the converted raw value and whether it is
	// exact (converting it back gives the input again).
	toHub, fromHub func(n node) ([]byte, bool, error)
}

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

func (r *valueRule) paths() []Path { return []Path{r.from, r.to} }

func (r *valueRule) ToHub(o *Object) error {
	return move(o, r, r.from, r.to, func(n node) (node, error) {
		return r.apply(o, n, r.from, r.to, r.toHub)
	})
}

func (r *valueRule) FromHub(o *Object) error {
	return move(o, r, r.to, r.from, func(n node) (node, error) {
		return r.apply(o, n, r.to, r.from, r.fromHub)
	})
}

// apply converts n read at src for dst, honouring a kept exact value.
func (r *valueRule) apply(o *Object, n node, src, dst Path, fn func(node) ([]byte, bool, error)) (node, error) {
	raw := o.rawOf(&n)
	// The destination version owns an exact value if an earlier conversion
	// out of it lost something.
	if v, ok, err := o.takeExact(o.to, dst, raw); err != nil {
		return node{}, wrapRuleErr(r, dst, err)
	} else if ok {
		return node{raw: o.st.keep(v)}, nil
	}
	out, exact, err := fn(n)
	if err != nil {
		return node{}, ruleErr(r, src, "%v", err)
	}
	if !exact {
		if err := o.keepExact(o.from, src, raw, out); err != nil {
			return node{}, wrapRuleErr(r, src, err)
		}
	}
	return node{raw: o.st.keep(out)}, nil
}

// --- enum -------------------------------------------------------------------

// Enum maps the string values of the spoke field from to those of the hub
// field to. The mapping must be one-to-one. A value outside it fails the
// conversion, naming the field, the value and the allowed values.
func Enum(from, to Path, values map[string]string) (Rule, error) {
	if err := checkPair("enum", from, to); err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("enum %s: no values", from)
	}
	inv := make(map[string]string, len(values))
	for _, k := range sortedKeys(values) {
		v := values[k]
		if prev, dup := inv[v]; dup {
			return nil, fmt.Errorf("enum %s: spoke values %q and %q both map to hub value %q; the mapping must be one-to-one to be inverted", from, prev, k, v)
		}
		inv[v] = k
	}
	fwd := make(map[string]string, len(values))
	for k, v := range values {
		fwd[k] = v
	}
	return &valueRule{
		kind: "enum", from: from, to: to,
		toHub:   enumFunc(fwd),
		fromHub: enumFunc(inv),
	}, nil
}

func enumFunc(m map[string]string) func(node) ([]byte, bool, error) {
	allowed := sortedKeys(m)
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = strconv.Quote(a)
	}
	list := strings.Join(quoted, ", ")
	return func(n node) ([]byte, bool, error) {
		s, ok := stringOf(n)
		if !ok {
			return nil, false, fmt.Errorf("value %s is %s, not a string; allowed values: %s", n.raw, describe(n), list)
		}
		v, ok := m[s]
		if !ok {
			return nil, false, fmt.Errorf("value %q is not mapped; allowed values: %s", s, list)
		}
		return quoteKey(v), true, nil
	}
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
	if err := checkPair("duration", from, to); err != nil {
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
	toHub := func(n node) ([]byte, bool, error) {
		v, err := intOf(n)
		if err != nil {
			return nil, false, err
		}
		if v > math.MaxInt64/int64(unit) || v < math.MinInt64/int64(unit) {
			return nil, false, fmt.Errorf("%d %s is too long for a duration (at most %d)", v, name, math.MaxInt64/int64(unit))
		}
		return quoteKey(time.Duration(v * int64(unit)).String()), true, nil
	}
	fromHub := func(n node) ([]byte, bool, error) {
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
		return strconv.AppendInt(nil, q, 10), exact, nil
	}
	return &valueRule{kind: "duration", from: from, to: to, detail: fmt.Sprintf("unit %s, round %s", unitShort(unit), round), toHub: toHub, fromHub: fromHub}, nil
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

func intToStringFunc(n node) ([]byte, bool, error) {
	if n.kind() != '-' && (n.kind() < '0' || n.kind() > '9') {
		return nil, false, fmt.Errorf("value %s is %s, not an integer", n.raw, describe(n))
	}
	if !canonicalInt.Match(n.raw) {
		return nil, false, fmt.Errorf("value %s is not an integer", n.raw)
	}
	return quoteKey(string(n.raw)), true, nil
}

func stringToIntFunc(n node) ([]byte, bool, error) {
	s, ok := stringOf(n)
	if !ok {
		return nil, false, fmt.Errorf("value %s is %s, not a string", n.raw, describe(n))
	}
	if canonicalInt.MatchString(s) {
		if err := apirules.Number([]byte(s)); err != nil {
			return nil, false, fmt.Errorf("the string cannot become a number: %v", err)
		}
		return []byte(s), true, nil
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return nil, false, fmt.Errorf("value %q is not an integer", s)
	}
	return strconv.AppendInt(nil, v, 10), false, nil
}

// IntToString converts an integer in the spoke field from to its decimal
// string in the hub field to (8080 -> "8080"). The inverse parses the string;
// a string that is not an integer fails the conversion. Integers are carried
// digit for digit, however large, up to what the API server can decode (a
// finite float64, about 309 digits): a longer one fails the conversion.
func IntToString(from, to Path) (Rule, error) {
	if err := checkPair("intToString", from, to); err != nil {
		return nil, err
	}
	return &valueRule{kind: "intToString", from: from, to: to, toHub: intToStringFunc, fromHub: stringToIntFunc}, nil
}

// StringToInt is IntToString the other way round: a decimal string in the
// spoke becomes an integer in the hub.
func StringToInt(from, to Path) (Rule, error) {
	if err := checkPair("stringToInt", from, to); err != nil {
		return nil, err
	}
	return &valueRule{kind: "stringToInt", from: from, to: to, toHub: stringToIntFunc, fromHub: intToStringFunc}, nil
}

// --- scale --------------------------------------------------------------------

// Scale converts an integer between units: the hub value is the spoke value
// multiplied by multiply, or divided by divide (exactly one of them is set).
// A division that is not exact fails the conversion, as does an overflow of
// int64.
func Scale(from, to Path, multiply, divide int64) (Rule, error) {
	if err := checkPair("scale", from, to); err != nil {
		return nil, err
	}
	if (multiply == 0) == (divide == 0) {
		return nil, fmt.Errorf("scale %s: set exactly one of multiply and divide", from)
	}
	if multiply < 0 || divide < 0 {
		return nil, fmt.Errorf("scale %s: the factor must be positive", from)
	}
	mul := func(f int64) func(node) ([]byte, bool, error) {
		return func(n node) ([]byte, bool, error) {
			v, err := intOf(n)
			if err != nil {
				return nil, false, err
			}
			if v > math.MaxInt64/f || v < math.MinInt64/f {
				return nil, false, fmt.Errorf("%d × %d overflows int64", v, f)
			}
			return strconv.AppendInt(nil, v*f, 10), true, nil
		}
	}
	div := func(f int64) func(node) ([]byte, bool, error) {
		return func(n node) ([]byte, bool, error) {
			v, err := intOf(n)
			if err != nil {
				return nil, false, err
			}
			if v%f != 0 {
				return nil, false, fmt.Errorf("%d is not a multiple of %d, so it cannot be converted exactly", v, f)
			}
			return strconv.AppendInt(nil, v/f, 10), true, nil
		}
	}
	r := &valueRule{kind: "scale", from: from, to: to}
	if multiply != 0 {
		r.detail = fmt.Sprintf("multiply %d", multiply)
		r.toHub, r.fromHub = mul(multiply), div(multiply)
	} else {
		r.detail = fmt.Sprintf("divide %d", divide)
		r.toHub, r.fromHub = div(divide), mul(divide)
	}
	return r, nil
}

// intOf reads n as an int64 integer literal.
func intOf(n node) (int64, error) {
	k := n.kind()
	if k != '-' && (k < '0' || k > '9') {
		return 0, fmt.Errorf("value %s is %s, not an integer", n.raw, describe(n))
	}
	v, err := strconv.ParseInt(string(n.raw), 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("value %s is out of the int64 range", n.raw)
		}
		return 0, fmt.Errorf("value %s is not an integer", n.raw)
	}
	return v, nil
}
