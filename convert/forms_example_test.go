package convert_test

import (
	"fmt"

	"github.com/hubspoke/hubspoke/convert"
)

// A rule on a path through a list runs on every item; a pattern splits a
// string into the fields of an object.
func ExampleSplit() {
	rename, _ := convert.Rename(convert.MustPath("spec.containers[name=*].img"), convert.MustPath("spec.containers[name=*].image"))
	cron, _ := convert.ParsePattern("{minute} {hour} {dayOfMonth} {month} {dayOfWeek}")
	schedule, _ := convert.Split(convert.MustPath("spec.schedule"), convert.MustPath("spec.schedule"), cron, nil, convert.OtherwiseKeep)
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Job", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{rename, schedule}}}})
	hub, err := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Job","metadata":{},"spec":{"containers":[{"name":"app","img":"nginx"}],"schedule":"30 2 * * 1-5"}}`), "example.com/v1")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(hub))
	// A string the pattern does not match is kept aside, and comes back.
	hub, _ = c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Job","metadata":{},"spec":{"schedule":"@daily"}}`), "example.com/v1")
	fmt.Println(string(hub))
	back, _ := c.Convert(nil, hub, "example.com/v1alpha1")
	fmt.Println(string(back))
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Job","metadata":{},"spec":{"containers":[{"name":"app","image":"nginx"}],"schedule":{"minute":"30","hour":"2","dayOfMonth":"*","month":"*","dayOfWeek":"1-5"}}}
	// {"apiVersion":"example.com/v1","kind":"Job","metadata":{"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"fields\":{\"/spec/schedule\":\"@daily\"}}}"}},"spec":{}}
	// {"apiVersion":"example.com/v1alpha1","kind":"Job","metadata":{},"spec":{"schedule":"@daily"}}
}

// Several spoke values may map to one hub value: the others are kept and
// come back.
func ExampleEnumWith() {
	engine, _ := convert.EnumWith(convert.MustPath("spec.engine"), convert.MustPath("spec.engine"), convert.EnumValues{
		Pairs:   []convert.EnumPair{{Spoke: "Diesel", Hub: "Combustion"}, {Spoke: "Petrol", Hub: "Combustion"}, {Spoke: "Electric", Hub: "Electric"}},
		HubOnly: []convert.EnumPair{{Hub: "Hybrid", Spoke: "Electric"}},
	})
	c, _ := convert.New(convert.Definition{Group: "example.com", Kind: "Ship", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{engine}}}})
	hub, _ := c.Convert(nil, []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Ship","metadata":{},"spec":{"engine":"Petrol"}}`), "example.com/v1")
	fmt.Println(string(hub))
	back, _ := c.Convert(nil, hub, "example.com/v1alpha1")
	fmt.Println(string(back))
	// Output:
	// {"apiVersion":"example.com/v1","kind":"Ship","metadata":{"annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{\"exact\":{\"/spec/engine\":{\"value\":\"Petrol\",\"as\":\"Combustion\"}}}}"}},"spec":{"engine":"Combustion"}}
	// {"apiVersion":"example.com/v1alpha1","kind":"Ship","metadata":{},"spec":{"engine":"Petrol"}}
}
