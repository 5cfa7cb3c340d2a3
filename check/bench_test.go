package check

import (
	"context"
	"testing"

	"github.com/hubspoke/hubspoke/convert/rules"
)

// BenchmarkLawsEvolvingWidget runs every law on 1,000 generated objects per
// version pair for examples/evolving-widget with the real engine (16 law
// runs, 16,000 objects, each converted two to four times and every output
// validated). Violations are ignored so that every run goes through all its
// objects.
func BenchmarkLawsEvolvingWidget(b *testing.B) {
	const dir = "../examples/evolving-widget/"
	crd := loadCRD(b, dir+"crd.yaml")
	conv, err := rules.LoadFile(dir + "conversion.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r := Laws(context.Background(), crd, conv, Options{Objects: 1000, Seed: 1, measure: true})
		if r.Laws != 16 {
			b.Fatalf("ran %d laws, want 16", r.Laws)
		}
		b.ReportMetric(float64(r.Objects), "objects/op")
	}
}

// BenchmarkLawsFake is the same on the hand-written Gadget converter.
func BenchmarkLawsFake(b *testing.B) {
	crd := loadCRD(b, "testdata/crd.yaml")
	for b.Loop() {
		r := Laws(context.Background(), crd, &fakeConverter{}, Options{Objects: 1000, Seed: 1})
		if r.Errors() > 0 {
			b.Fatalf("unexpected findings:\n%s", textOf(r))
		}
	}
}
