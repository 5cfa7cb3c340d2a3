// Command build builds the helm binary of package helmbin, if it is
// missing, and prints its path: `make test` runs it before go test, so
// that the build never runs under a test's timeout.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hubspoke/hubspoke/internal/helmbin"
)

func main() {
	path, err := helmbin.Path(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(path)
}
