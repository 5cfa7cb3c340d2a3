package examples_test

import (
	"github.com/hubspoke/hubspoke/convert"
	_ "github.com/hubspoke/hubspoke/convert/celenv" // cel rules, as the hubspoke binaries run them
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/examples/gofuncs/flags"
)

// The gofuncs example's rule file names Go funcs; register them as its own
// binary (examples/gofuncs) does, so every example is tested alike.
func init() {
	r, err := flags.Rule()
	if err != nil {
		panic(err)
	}
	rules.RegisterFuncs(map[string]convert.Rule{flags.Name: r})
}
