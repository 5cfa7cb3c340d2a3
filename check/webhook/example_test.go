package webhook_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/check/webhook"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/schema"
)

func Example() {
	// A conversion webhook to check: here hubspoke's own, for the Widget.
	conv, err := rules.LoadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		panic(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewTLSServer(h)
	defer srv.Close()

	crd, err := schema.LoadFile("../../examples/widget/crd.yaml")
	if err != nil {
		panic(err)
	}
	client, err := webhook.New(webhook.FromCRD(crd, webhook.Options{URL: srv.URL + "/convert", HTTPClient: srv.Client()}))
	if err != nil {
		panic(err)
	}
	report := webhook.Conformance(context.Background(), client, crd)
	report.Merge(check.Laws(context.Background(), crd, client, check.Options{Objects: 20, Seed: 1}))
	fmt.Println(report.Errors(), "errors")
	// Output:
	// 0 errors
}
