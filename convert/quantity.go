package convert

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hubspoke/hubspoke/apirules"
)

// QuantityForm is how a version holds a Kubernetes quantity
// (k8s.io/apimachinery's resource.Quantity).
type QuantityForm string

// Quantity forms.
const (
	// QuantityString is the quantity's string, as a Quantity field holds
	// it: "50Gi", "1500m", "1e3".
	QuantityString QuantityForm = "string"
	// QuantityInteger is an integer count of the quantity's base unit
	// (bytes, cores): "50Gi" is 53687091200. A quantity that is not a
	// whole number of base units ("1500m") has no integer form.
	QuantityInteger QuantityForm = "integer"
	// QuantityObject is the quantity's number and its suffix as an
	// object: "50Gi" is {"value": 50, "unit": "Gi"}, "1.5" is
	// {"value": 1.5}.
	QuantityObject QuantityForm = "object"
)

// QuantitySpec is a quantity rule as written.
type QuantitySpec struct {
	From, To Path
	// Spoke and Hub are the forms each side holds (they differ).
	Spoke, Hub QuantityForm
	// Format is how an integer is written as a quantity string:
	// BinarySI (the default: 53687091200 is "50Gi", and a count that is
	// no whole binary multiple is written plain, "1000000000"), DecimalSI
	// (1000 is "1k") or DecimalExponent ("1e3"), as resource.Quantity
	// writes them.
	Format resource.Format
	// Otherwise is the policy for a value with no form on the other side
	// (a fraction of a base unit for an integer, a value that is not a
	// quantity).
	Otherwise Otherwise
}

// Quantity converts a Kubernetes quantity between the forms of
// QuantitySpec, with apimachinery's resource.Quantity. A value whose
// spelling does not come back (a non-canonical "1024Mi" that the integer
// form writes back as "1Gi", "050Gi", "1.50Gi") converts, and its exact
// spelling is kept in the preserved annotation and restored on the way
// back while the converted value is unchanged.
func Quantity(spec QuantitySpec) (Rule, error) {
	f, t, err := checkPair("quantity", spec.From, spec.To)
	if err != nil {
		return nil, err
	}
	for _, form := range []QuantityForm{spec.Spoke, spec.Hub} {
		switch form {
		case QuantityString, QuantityInteger, QuantityObject:
		default:
			return nil, fmt.Errorf("quantity %s: form must be string, integer or object, got %q", spec.From, form)
		}
	}
	if spec.Spoke == spec.Hub {
		return nil, fmt.Errorf("quantity %s: the spoke and the hub both hold the %s form; nothing to convert", spec.From, spec.Spoke)
	}
	switch spec.Format {
	case "":
		spec.Format = resource.BinarySI
	case resource.BinarySI, resource.DecimalSI, resource.DecimalExponent:
	default:
		return nil, fmt.Errorf("quantity %s: format must be BinarySI, DecimalSI or DecimalExponent, got %q", spec.From, spec.Format)
	}
	keep, err := checkOtherwise("quantity", spec.From, spec.Otherwise)
	if err != nil {
		return nil, err
	}
	q := quantityConv{format: spec.Format}
	r := &valueRule{kind: "quantity", from: f, to: t, aside: keep,
		detail: fmt.Sprintf("spoke %s, hub %s", spec.Spoke, spec.Hub)}
	r.toHub = q.fn(spec.Spoke, spec.Hub)
	r.fromHub = q.fn(spec.Hub, spec.Spoke)
	return scoped(r, spec.From), nil
}

type quantityConv struct{ format resource.Format }

// fn converts from one form to another; the value is exact when
// converting it back gives it again.
func (q quantityConv) fn(from, to QuantityForm) valueFunc {
	return func(dst []byte, n node) ([]byte, bool, error) {
		s, err := q.text(from, n)
		if err != nil {
			return nil, false, err
		}
		start := len(dst)
		dst, err = q.write(dst, to, s)
		if err != nil {
			return nil, false, err
		}
		out := dst[start:]
		back, err := q.text(to, node{raw: out})
		exact := err == nil
		if exact {
			var again []byte
			again, err = q.write(nil, from, back)
			exact = err == nil && (bytes.Equal(again, n.raw) || jsonEqual(again, n.raw))
		}
		return dst, exact, nil
	}
}

// text reads n, in form, as a quantity string (valid).
func (q quantityConv) text(form QuantityForm, n node) (string, error) {
	switch form {
	case QuantityString:
		s, ok := stringOf(n)
		if k := n.kind(); !ok && (k == '-' || k >= '0' && k <= '9') {
			// A Quantity field is int-or-string: a number is the
			// quantity its literal spells (written back as a string,
			// so kept exact).
			s, ok = string(n.raw), true
		}
		if !ok {
			return "", fmt.Errorf("value %s is %s, not a quantity string", compact(n.raw), describe(n))
		}
		if _, err := resource.ParseQuantity(s); err != nil {
			return "", asideErr("value %q is not a quantity: %v", s, err)
		}
		return s, nil
	case QuantityInteger:
		v, _, err := intOf(n)
		if err != nil {
			return "", err
		}
		return resource.NewQuantity(v, q.format).String(), nil
	}
	// QuantityObject
	if n.kind() != '{' {
		return "", fmt.Errorf("value %s is %s, not an object with value and unit", compact(n.raw), describe(n))
	}
	var value, unit []byte
	st := getState()
	defer putState(st)
	m := node{raw: n.write(nil)}
	if _, err := st.expand(&m); err != nil {
		return "", err
	}
	for _, mem := range m.obj.members {
		switch k := decodeKey(mem.rawKey); k {
		case "value":
			if c := mem.val.kind(); c != '-' && (c < '0' || c > '9') {
				return "", asideErr("value %s is %s, not a number", compact(mem.val.raw), describe(mem.val))
			}
			value = mem.val.raw
		case "unit":
			u, ok := stringOf(mem.val)
			if !ok {
				return "", asideErr("unit %s is %s, not a string", compact(mem.val.raw), describe(mem.val))
			}
			unit = []byte(u)
		default:
			return "", asideErr("member %q is not value or unit", k)
		}
	}
	if value == nil {
		return "", asideErr("the object has no value")
	}
	num, ok := apirules.CanonicalNumber(nil, value)
	if !ok {
		return "", asideErr("value %s is out of range", value)
	}
	s := string(num) + string(unit)
	if _, err := resource.ParseQuantity(s); err != nil {
		return "", asideErr("value %s with unit %q is not a quantity (%q: %v)", num, unit, s, err)
	}
	return s, nil
}

// write appends the quantity string s (valid) in form.
func (q quantityConv) write(dst []byte, form QuantityForm, s string) ([]byte, error) {
	switch form {
	case QuantityString:
		return appendQuoted(dst, s), nil
	case QuantityInteger:
		qty, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, asideErr("value %q is not a quantity: %v", s, err)
		}
		v, ok := qty.AsInt64()
		if !ok {
			return nil, asideErr("quantity %q is not a whole number of base units within int64", s)
		}
		return strconv.AppendInt(dst, v, 10), nil
	}
	// QuantityObject: the number as the API server writes it, and the
	// suffix.
	i := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune("+-0123456789.", r) })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], s[i:]
	dst = append(dst, `{"value":`...)
	if v, err := strconv.ParseInt(num, 10, 64); err == nil {
		dst = strconv.AppendInt(dst, v, 10)
	} else if f, err := strconv.ParseFloat(num, 64); err == nil {
		dst = apirules.AppendFloat(dst, f)
	} else {
		return nil, asideErr("the number of %q has no JSON form", s)
	}
	if unit != "" {
		dst = append(dst, `,"unit":`...)
		dst = appendQuoted(dst, unit)
	}
	return append(dst, '}'), nil
}
