package apirules

import (
	"math"
	"strconv"
)

// AppendFloat appends f as the API server writes a number it holds as a
// float64: encoding/json's spelling (the ES6 number-to-string rule: 'f'
// format for magnitudes in [1e-6, 1e21), else 'e' format with the
// exponent's leading zero removed, "1e-7" not "1e-07"), the shortest that
// reads back as f. The API server decodes an object's numbers into int64
// (integer literals) or float64 and encodes them with encoding/json, so a
// value written any other way ("-6.8e-07", "3.0") comes back from it
// re-spelled. -0 is written 0: the API server decodes the literal -0 as the
// integer 0. f must be finite.
//
// It is hubspoke's one spelling of a computed number: cel results and the
// numbers other rules compute go through it, so the API server stores them
// byte for byte.
func AppendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json cleans it up.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// CanonicalNumber appends the number literal lit (valid JSON) as the API
// server writes it back after decoding it: an integer literal that fits an
// int64 as that integer, any other number as its float64 (AppendFloat). ok
// is false when the API server could not decode lit (out of float64's
// range).
func CanonicalNumber(dst, lit []byte) ([]byte, bool) {
	if i, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
		return strconv.AppendInt(dst, i, 10), true
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return dst, false
	}
	return AppendFloat(dst, f), true
}

// SameNumber reports whether the API server writes the number literals a
// and b (valid JSON) back the same (CanonicalNumber): 1.0 and 1, 1e2 and
// 100, 0.1 and 0.10 are the same number; 9007199254740993 (an int64) and
// 9007199254740992.0 (a float64) are not.
func SameNumber(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	var ba, bb [32]byte
	ca, oka := CanonicalNumber(ba[:0], a)
	cb, okb := CanonicalNumber(bb[:0], b)
	return oka && okb && string(ca) == string(cb)
}
