package apirules_test

import (
	"encoding/json"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/hubspoke/hubspoke/apirules"
)

// TestAppendFloatIsEncodingJSON: AppendFloat spells every finite float64
// as encoding/json does (the API server's encoder), -0 aside.
func TestAppendFloatIsEncodingJSON(t *testing.T) {
	for _, f := range []float64{-6.854534149169922e-07, 1e-7, 1e-6, 1e21, 1e20, 123456789.125, 0.1, -1.5e300, 5e-324, math.MaxFloat64, 3} {
		want, _ := json.Marshal(f)
		if got := apirules.AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		f := math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			t.Skip()
		}
		want, _ := json.Marshal(f)
		if got := apirules.AppendFloat(nil, f); string(got) != string(want) {
			t.Fatalf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	})
	if got := apirules.AppendFloat(nil, math.Copysign(0, -1)); string(got) != "0" {
		t.Errorf("AppendFloat(-0) = %s, want 0 (the API server decodes -0 as the integer 0)", got)
	}
}

func TestCanonicalNumber(t *testing.T) {
	tests := []struct{ lit, want string }{
		{"-6.854534149169922e-07", "-6.854534149169922e-7"},
		{"1.0", "1"},
		{"1e2", "100"},
		{"-0", "0"},
		{"9007199254740993", "9007199254740993"},
		{"9007199254740993.0", "9007199254740992"},
		{"123456789012345678901234567890", "1.2345678901234568e+29"},
		{"1E+400", ""},
	}
	for _, tt := range tests {
		got, ok := apirules.CanonicalNumber(nil, []byte(tt.lit))
		if !ok && tt.want != "" || ok && string(got) != tt.want {
			t.Errorf("CanonicalNumber(%s) = %s, %v; want %q", tt.lit, got, ok, tt.want)
		}
	}
	if !apirules.SameNumber([]byte("0.10"), []byte("1e-1")) || apirules.SameNumber([]byte("9007199254740993"), []byte("9007199254740992.0")) {
		t.Error("SameNumber compares as the API server writes back")
	}
}
