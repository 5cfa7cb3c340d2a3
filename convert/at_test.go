package convert_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// FuzzConvertAt holds ConvertAt, which converts an object where it lies in
// a larger document, to Convert on the object alone: the same output, an
// error exactly when Convert fails, the object's end, and the heads
// apirules reads from the input and from the output, whether rules
// changed metadata (a label a Funcs rule adds, the preserved annotation)
// or not. Two objects share one scanner, as in a review.
func FuzzConvertAt(f *testing.F) {
	for _, o := range []string{
		`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","namespace":"n","uid":"u","labels":{"a":"b"}},"spec":{"replicas":1}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","annotations":{"k":"v"}},"spec":{"size":1,"paused":true}}`,
		`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a\u0041"},"metadata":{"name":"b","uid":"x"},"spec":{"label":1}}`,
		`{"kind":"Widget","metadata":null,"apiVersion":"example.com\/v1alpha1","kind":"Widget"}`,
		`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":[],"spec":{"replicas":1e400}}`,
		`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"labels":"x","name":1}}`,
		`{"apiVersion":"example.com/v1alpha1","kind":"Gadget"}`, `{"apiVersion":"example.com/v1alpha1"} `, `[]`, `{"a":"` + "\xff" + `"}`,
	} {
		f.Add(o, "example.com/v1")
		f.Add(o, "example.com/v1alpha1")
	}
	renameOnly, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: []convert.Rule{atRename(f)}}}})
	if err != nil {
		f.Fatal(err)
	}
	// Metadata is read while it is validated (renameOnly), or from the
	// tree when a rule has the scan expand it (atConverter).
	cs := []*convert.Converter{renameOnly, atConverter(f)}
	f.Fuzz(func(t *testing.T, obj, to string) {
		for _, c := range cs {
			convertAt(t, c, obj, to)
		}
	})
}

// convertAt checks ConvertAt against Convert on one object.
func convertAt(t *testing.T, c *convert.Converter, obj, to string) {
	t.Helper()
	if obj == "" || obj[0] != '{' {
		return // ConvertAt starts at the opening brace
	}
	size := len(strings.TrimRight(obj, " \t\r\n")) // the object without the space after it
	{
		want, werr := c.Convert(nil, []byte(obj), to)
		const prefix = `{"objects":[`
		doc := []byte(prefix + obj + `,` + obj + `]}`)
		var s jsonscan.Scanner
		s.Reset(doc)
		var in, out apirules.Head
		dst := []byte("x")
		at := len(prefix)
		for k := 0; k < 2; k++ {
			got, end, err := c.ConvertAt(dst, &s, at, to, &in, &out)
			if werr != nil {
				if err == nil && end == at+size {
					t.Fatalf("ConvertAt converted %s, Convert fails: %v", obj, werr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ConvertAt fails on %s: %v", obj, err)
			}
			if end != at+size {
				t.Fatalf("ConvertAt ends at %d, want %d", end, at+size)
			}
			if string(got[:1]) != "x" || !bytes.Equal(got[1:], want) {
				t.Fatalf("ConvertAt wrote %s, Convert %s", got, want)
			}
			if wantIn, err := apirules.ReadHead([]byte(obj)); err != nil {
				t.Fatalf("the input: %v", err)
			} else if !reflect.DeepEqual(in, wantIn) {
				t.Fatalf("%s: head as read\n%+v, apirules reads\n%+v", obj, in, wantIn)
			}
			if wantOut, err := apirules.ReadHead(want); err != nil {
				t.Fatalf("the output: %v", err)
			} else if !reflect.DeepEqual(out, wantOut) {
				t.Fatalf("%s -> %s: head as written\n%+v, apirules reads\n%+v", obj, want, out, wantOut)
			}
			at += len(obj) + 1
		}
	}
}

func atRename(tb testing.TB) convert.Rule {
	rename, err := convert.Rename(convert.MustPath("spec.replicas"), convert.MustPath("spec.size"))
	if err != nil {
		tb.Fatal(err)
	}
	return rename
}

// atConverter converts Widgets with rules that leave metadata alone
// (rename), write the preserved annotation (hubOnly) and change labels
// (a Funcs rule, when spec.label is set).
func atConverter(tb testing.TB) *convert.Converter {
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1",
		Spokes: []convert.Spoke{{Version: "v1alpha1", Rules: append([]convert.Rule{atRename(tb)}, metadataRules(tb)...)}}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
