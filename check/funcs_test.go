package check

import (
	"os"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/convert"
	convrules "github.com/hubspoke/hubspoke/convert/rules"
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
			noop := func(*convert.Object) error { return nil }
			fn, err := convert.Funcs("args-to-options", noop, noop)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := convrules.Parse("conversion.yaml", []byte(tt.rules), convrules.Options{Funcs: map[string]convert.Rule{"args-to-options": fn}})
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
