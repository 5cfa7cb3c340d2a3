package convert_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

func fuzzConverter(t testing.TB) *convert.Converter {
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1", Spokes: []convert.Spoke{
		{Version: "v1alpha1", Rules: []convert.Rule{
			must(convert.Rename(p("spec.replicas"), p("spec.size"))),
			must(convert.Duration(p("spec.timeoutSeconds"), p("spec.timeout"), time.Second, convert.RoundReject)),
			must(convert.ListToMap(p("spec.endpoints"), p("spec.endpointMap"), "name", convert.KeyString, convert.OrderKeep)),
			must(convert.Enum(p("spec.mode"), p("spec.mode"), map[string]string{"Fast": "Performance", "Slow": "Economy"})),
			must(convert.Rename(p("spec.zone"), p("spec.placement.zone"))),
			must(convert.HubOnly(p("spec.paused"), nil)),
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hubNames are fields that exist only on the hub side of fuzzConverter's
// rules; a spoke object holding them is outside the rules' domain.
var hubNames = []string{"size", "timeout", "endpointMap", "placement", "paused"}

// FuzzConvert: any input gives valid JSON or an error, never a panic; and
// spoke -> hub -> spoke is the identity for objects inside the domain.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{
		`{"replicas":3}`, `{"replicas":null,"timeoutSeconds":30}`, `{"endpoints":[{"name":"b","port":1},{"name":"a"}]}`,
		`{"mode":"Fast","zone":"z"}`, `{}`, `null`, `{"x":{"y":[1,2,{"z":1e400}]},"replicas":-0}`, `{"endpoints":[]}`,
		`{"timeoutSeconds":9223372036}`, `{"mode":"Turbo"}`, `[]`, `{"replicas":1,"replicas":2}`,
	} {
		f.Add(s)
	}
	c := fuzzConverter(f)
	f.Fuzz(func(t *testing.T, spec string) {
		in := `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"f"},"spec":` + spec + `}`
		var head apirules.Head
		hub, err := c.ConvertHead(nil, []byte(in), "example.com/v1", &head)
		if err != nil {
			// An error about an object the scanner accepts names it.
			var ce *convert.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *convert.Error: %v", err, err)
			}
			var se *jsonscan.SyntaxError
			if !errors.As(err, &se) && ce.Name != "f" {
				t.Fatalf("error does not name object f: %v", err)
			}
			return
		}
		if !json.Valid(hub) {
			t.Fatalf("invalid JSON out: %s", hub)
		}
		// The head ConvertHead reports is the head of what it wrote.
		if want, err := apirules.ReadHead(hub); err != nil {
			t.Fatalf("output the API server cannot decode: %v: %s", err, hub)
		} else if !reflect.DeepEqual(head, want) {
			t.Fatalf("ConvertHead reported %+v, the output holds %+v", head, want)
		}
		var s any
		if json.Unmarshal([]byte(spec), &s) != nil {
			return
		}
		if m, ok := s.(map[string]any); ok {
			for _, k := range hubNames {
				if _, ok := m[k]; ok {
					return
				}
			}
		}
		back, err := c.Convert(nil, hub, "example.com/v1alpha1")
		if err != nil {
			t.Fatalf("hub -> spoke failed: %v\nin:  %s\nhub: %s", err, in, hub)
		}
		if !semEqual(t, []byte(in), back) {
			t.Fatalf("spoke -> hub -> spoke is not the identity\nin:   %s\nhub:  %s\nback: %s", in, hub, back)
		}
	})
}

// semEqual compares JSON ignoring key order; numbers compare as literals.
func semEqual(t *testing.T, a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(strings.NewReader(string(a)))
	da.UseNumber()
	db := json.NewDecoder(strings.NewReader(string(b)))
	db.UseNumber()
	if err := da.Decode(&x); err != nil {
		t.Fatal(err)
	}
	if err := db.Decode(&y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// FuzzConvertForms is FuzzConvert for formsConverter, which uses every
// form of the rule language at once (selectors, map values, both
// orientations, reshaping, many-to-one enums): any spec gives valid JSON or
// a *convert.Error, and a spoke object with no hub-only field comes back
// from the hub as it was, numbers literal for literal.
func FuzzConvertForms(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"name":"a","img":"x","mode":"Quick"},{"name":"b","mode":"Slow"}]}`,
		`{"timeout":"1.5s","ports":{"http":{"port":80}},"backends":{"a":{"weight":-0}}}`,
		`{"volumes":[1,2],"schedule":"30 2 * * 1-5","image":{"repository":"nginx"}}`,
		`{"schedule":"@daily","image":{"repository":"r:5000/n","tag":"1.2"},"volumes":[]}`,
		`{"items":[{"name":"a\u0062","img":"\u0078"}],"timeout":"90s"}`, `{}`, `[]`,
		`{"ports":{"http":{"port":80},"h\u0074tp":{"port":81}}}`, `{"items":[{"name":"a","img":"x"},{"name":"\u0061"}]}`,
	} {
		f.Add(s)
	}
	c := formsConverter(f)
	f.Fuzz(func(t *testing.T, spec string) {
		formsRoundTrip(t, c, spec, "example.com/v1alpha1", "example.com/v1", []string{"timeoutSeconds", "volume"}, []string{"image", "paused"})
	})
}

// FuzzConvertFormsFromHub is FuzzConvertForms the other way: a hub object
// with no spoke-only field comes back from the spoke as it was.
func FuzzConvertFormsFromHub(f *testing.F) {
	for _, s := range []string{
		`{"items":[{"name":"a","image":"x","mode":"Balanced","paused":true},{"name":"b","mode":"Economy"}]}`,
		`{"timeoutSeconds":-0,"ports":[{"name":"http","port":80}],"backends":{"a":{"weight":200}}}`,
		`{"volume":{"size":1},"schedule":{"minute":"30","hour":"2","dayOfMonth":"*","month":"*","dayOfWeek":"1-5"},"image":"nginx:1.2"}`,
		`{"schedule":{"minute":"30"},"image":"nginx","timeoutSeconds":2}`, `{}`, `[]`,
		`{"items":[{"name":"a","paused":true},{"name":"a","paused":false}]}`,
	} {
		f.Add(s)
	}
	c := formsConverter(f)
	f.Fuzz(func(t *testing.T, spec string) {
		formsRoundTrip(t, c, spec, "example.com/v1", "example.com/v1alpha1", []string{"timeout", "volumes"}, []string{"img"})
	})
}

// formsRoundTrip converts the object of spec from version from to version
// to and, for an object holding none of the other version's fields
// (others in spec, otherItem in its items), back.
func formsRoundTrip(t *testing.T, c *convert.Converter, spec, from, to string, others, otherItem []string) {
	in := `{"apiVersion":"` + from + `","kind":"Widget","metadata":{"name":"f"},"spec":` + spec + `}`
	out, err := c.Convert(nil, []byte(in), to)
	if err != nil {
		var ce *convert.Error
		if !errors.As(err, &ce) {
			t.Fatalf("error %T is not a *convert.Error: %v", err, err)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("invalid JSON out: %s", out)
	}
	var s map[string]any
	if json.Unmarshal([]byte(spec), &s) != nil {
		return
	}
	for _, k := range others {
		if _, ok := s[k]; ok {
			return
		}
	}
	if items, ok := s["items"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				for _, k := range otherItem {
					if _, ok := m[k]; ok {
						return
					}
				}
			}
		}
	}
	back, err := c.Convert(nil, out, from)
	if err != nil {
		t.Fatalf("%s -> %s -> %s failed: %v\nin:  %s\nout: %s", from, to, from, err, in, out)
	}
	if !semEqual(t, []byte(in), back) {
		t.Fatalf("%s -> %s -> %s is not the identity\nin:   %s\nout:  %s\nback: %s", from, to, from, in, out, back)
	}
}
