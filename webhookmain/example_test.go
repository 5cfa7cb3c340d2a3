package webhookmain_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/webhookmain"
)

// Run is Main without the process: here the convert subcommand, with a Go
// rule registered under the name a rule file's funcs entry would use.
func ExampleRun() {
	double, err := convert.Funcs("double", func(o *convert.Object) error { return nil }, func(o *convert.Object) error { return nil })
	if err != nil {
		panic(err)
	}
	code := webhookmain.Run(context.Background(), map[string]convert.Rule{"double": double},
		[]string{"convert", "-f", "../examples/widget/widget-v1alpha1.yaml", "--to", "example.com/v1", "--rules", "../examples/widget/conversion.yaml"},
		strings.NewReader(""), os.Stdout, os.Stderr)
	fmt.Println("exit code", code)
	// Output:
	// apiVersion: example.com/v1
	// kind: Widget
	// metadata:
	//   labels:
	//     app: demo
	//   name: my-widget
	//   namespace: default
	// spec:
	//   size: 3
	// status:
	//   availableReplicas: 2
	// exit code 0
}
