package crwidget_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/internal/crwidget"
)

func ExampleConverter_Convert() {
	s, err := crwidget.NewScheme()
	if err != nil {
		panic(err)
	}
	c := crwidget.NewConverter(s)
	in := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","creationTimestamp":"2025-01-02T03:04:05Z"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"app","image":"app:1"}]}}}}`)
	out, err := c.Convert(nil, in, "example.com/v1")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output:
	// {"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","creationTimestamp":"2025-01-02T03:04:05Z"},"spec":{"size":3,"template":{"metadata":{},"spec":{"containers":[{"name":"app","image":"app:1","resources":{}}]}}},"status":{}}
}
