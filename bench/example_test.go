package bench_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/bench"
)

func ExampleReviewBody() {
	body := bench.ReviewBody("705ab4f5", "example.com/v1", [][]byte{
		[]byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3}}`),
	})
	fmt.Println(string(body))
	// Output:
	// {"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"705ab4f5","desiredAPIVersion":"example.com/v1","objects":[{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":3}}]}}
}
