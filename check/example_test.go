package check_test

import (
	"context"
	"os"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

func Example() {
	crd, err := schema.LoadFile("../examples/widget/crd.yaml")
	if err != nil {
		panic(err)
	}
	rs, err := rules.ParseFile("../examples/widget/conversion.yaml")
	if err != nil {
		panic(err)
	}
	conv, err := rs.Converter()
	if err != nil {
		panic(err)
	}
	report := check.Static(crd, rs)
	report.Merge(check.Laws(context.Background(), crd, conv, check.Options{Objects: 50, Seed: 1}))
	_ = report.WriteText(os.Stdout)
	// Output:
	// ok: 0 errors, 0 warnings (14 static checks, 4 law runs on 200 generated objects, seed 1, v1 objects valid 50/50 (100.0%), v1alpha1 objects valid 50/50 (100.0%))
}
