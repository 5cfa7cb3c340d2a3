// Command gofuncs is a complete hubspoke binary of your own: the hubspoke
// webhook, check and convert commands with the Go funcs of package flags
// registered. Build it, ship it as the webhook's image, and run check with
// it in CI:
//
//	go build -o runner-webhook ./examples/gofuncs
//	runner-webhook check --crd crd.yaml --rules conversion.yaml --fixtures fixtures
//	runner-webhook serve --rules conversion.yaml --cert-dir /etc/hubspoke/tls
package main

import (
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/examples/gofuncs/flags"
	"github.com/hubspoke/hubspoke/webhookmain"
)

func main() {
	r, err := flags.Rule()
	if err != nil {
		panic(err)
	}
	webhookmain.Main(map[string]convert.Rule{flags.Name: r})
}
