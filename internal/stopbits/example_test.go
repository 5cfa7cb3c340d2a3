package stopbits_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/internal/stopbits"
)

// A scanner at the opening quote of a string finds where to look next.
func Example() {
	doc := []byte(`{"name":"a\"b"}`)
	marks := stopbits.Append(nil, doc)
	i := stopbits.Next(marks, 9) // inside the string "a\"b"
	fmt.Printf("%d %q\n", i, doc[i])
	i = stopbits.Next(marks, i+2) // after the escape
	fmt.Printf("%d %q\n", i, doc[i])
	// Output:
	// 10 '\\'
	// 13 '"'
}
