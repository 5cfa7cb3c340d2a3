package check

import (
	"os"
	"strings"
	"testing"
)

// TestFuncsOwnedFieldsAreNotLost: the fields a funcs rule declares (from,
// to) are handled by Go; without the declaration they are reported lost.
func TestFuncsOwnedFieldsAreNotLost(t *testing.T) {
	crd := loadCRD(t, "../examples/gofuncs/crd.yaml")
	data, err := os.ReadFile("../examples/gofuncs/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, rules string
		lossy       int
	}{
		{"declared", string(data), 0},
		{"undeclared", strings.Replace(string(data), ", from: spec.args, to: spec.options}", "}", 1), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := LoadRules("conversion.yaml", []byte(tt.rules))
			if err != nil {
				t.Fatal(err)
			}
			r := Static(crd, rs)
			n := 0
			for _, f := range r.Findings {
				if f.Check == CheckLossy {
					n++
				}
			}
			if n != tt.lossy || r.Errors() != tt.lossy {
				t.Errorf("%d lossy findings, %d errors, want %d:\n%s", n, r.Errors(), tt.lossy, textOf(r))
			}
		})
	}
}
