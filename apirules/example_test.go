package apirules_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/apirules"
)

// A converted object is checked against the object sent, as the API
// server checks a conversion webhook's answer.
func ExampleObject() {
	original := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","uid":"1"},"spec":{"replicas":3}}`)
	good := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","uid":"1"},"spec":{"size":3}}`)
	renamed := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2","uid":"1"},"spec":{"size":3}}`)
	huge := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","uid":"1"},"spec":{"size":1e400}}`)

	fmt.Println(apirules.Object(original, good, "example.com/v1"))
	fmt.Println(apirules.Object(original, renamed, "example.com/v1"))
	fmt.Println(apirules.Object(original, huge, "example.com/v1"))
	// Output:
	// <nil>
	// the converted object has metadata.name "w2", want "w"
	// the converted object is not JSON the API server decodes: invalid JSON at byte 96: number 1e400 is out of range: the API server decodes numbers as int64 or float64 and fails on it
}

// A whole answer is checked against the request: kind, uid, status, count,
// then every object.
func ExampleResponse() {
	req := apirules.Request{
		APIVersion:        apirules.ReviewV1,
		UID:               "42",
		DesiredAPIVersion: "example.com/v1",
		Objects:           [][]byte{[]byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"}}`)},
	}
	answer := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"42","result":{"status":"Success"},
		"convertedObjects":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"bad key":"x"}}}]}}`)
	_, err := apirules.Response(req, answer)
	fmt.Println(err)
	// Output:
	// converted object 0: the converted object's metadata.labels are invalid: key "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')
}
