package celenv_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/convert/celenv"
)

// An expression of a cel rule takes the JSON of one field as self and
// gives the JSON of the other; the Kubernetes libraries are there
// (quantity() here), as in x-kubernetes-validations.
func ExampleCompiler() {
	x, err := celenv.Compiler().Compile(`quantity(self).asInteger() / 1048576`)
	if err != nil {
		panic(err)
	}
	out, err := x.Eval([]byte(`"256Mi"`))
	fmt.Println(string(out), err)
	_, err = x.Eval([]byte(`"lots"`))
	fmt.Println(err)
	// Output:
	// 256 <nil>
	// quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
}
