package convert_test

import (
	"testing"

	"github.com/hubspoke/hubspoke/convert"
)

// FuzzParsePath: the path parser never panics, and every path it accepts
// prints as a path that parses back to itself.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"spec.a", "spec.c[*].image", "spec.c[name=*].x", `spec.c[name="a.b"].x`, "spec.b.*.w",
		`spec.labels["app.kubernetes.io/name"]`, "/spec/a~1b", "/spec/0", "spec[", `spec["\u00e9"]`, "a[k=v][*].*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := convert.ParsePath(s)
		if err != nil {
			return
		}
		q, err := convert.ParsePath(p.String())
		if err != nil {
			t.Fatalf("%q prints as %q, which does not parse: %v", s, p.String(), err)
		}
		if !q.Equal(p) {
			t.Fatalf("%q prints as %q, which parses to another path", s, p.String())
		}
	})
}

// FuzzPattern: the pattern parser never panics, and a string a pattern
// splits joins back to itself.
func FuzzPattern(f *testing.F) {
	f.Add("{a} {b}", "1 2")
	f.Add("{repository}:{tag:[^:/]+}", "registry:5000/x:1.2")
	f.Add("x{{{a}}}y", "x{1}y")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		p, err := convert.ParsePattern(pattern)
		if err != nil {
			return
		}
		vals, ok := p.Split(s)
		if !ok {
			return
		}
		if got := p.Join(vals); got != s {
			t.Fatalf("pattern %q splits %q into %q, which joins as %q", pattern, s, vals, got)
		}
	})
}
