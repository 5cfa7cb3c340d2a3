package explain_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/explain"
)

// A message as kubectl prints it nests several errors; the root cause comes
// first, with the doctor check that confirms it.
func ExampleExplain() {
	msg := `Error from server: conversion webhook for example.com/v1alpha1, Kind=Widget failed: ` +
		`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": ` +
		`no endpoints available for service "widget-webhook"`
	for _, x := range explain.Explain(msg) {
		fmt.Printf("%s (doctor check %s)\n", x.ID, x.Check)
	}
	fmt.Println(explain.Explain(msg)[0].Fields["service"])
	// Output:
	// no-endpoints (doctor check endpoints)
	// webhook-call-failed (doctor check webhook.reachable)
	// widget-webhook
}
