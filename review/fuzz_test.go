package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kjson "sigs.k8s.io/json"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

func fuzzSeeds(f *testing.F) {
	ok := widget("v1alpha1", "a", `,"labels":{"x":"y"},"annotations":{"a":"b"}`)
	for _, s := range []string{
		reviewBody(APIVersionV1, "u", "example.com/v1", ok, widget("v1", "b", "")),
		reviewBody(APIVersionV1beta1, `u\u00e9\ud83d\ude00`, "example.com/v1", ok),
		reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"a\/b","kind":"K","metadata":{"name":"\ud800x","name":"n"}}`),
		reviewBody(APIVersionV1, "u", "example.com/v1", `{"metadata":null,"x":[1,-0.5e+3,true,false,null,{"":""}]}`),
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"a/b","objects":[{},[],1]}}`,
		`{"request":null}`, `[[[[]]]]`, `"\u12"`, `1.5e`, `-`, `{"a":1,}`, `{"a" 1}`, "\"\xff\"", `{"kind":"ConversionReview"} `,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","uid":"v","desiredAPIVersion":"a/b","objects":[]}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecode checks the review decoder against the API server's decoder:
// it rejects exactly the bodies that are not JSON the API server decodes
// unchanged (see internal/jsonscan), and an accepted review yields the
// values encoding/json finds.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var rv review
		err := rv.decode(body)
		var lazy review
		var s jsonscan.Scanner
		s.Reset(body)
		if lerr := lazy.decodeLazy(&s); err == nil && lerr != nil {
			t.Fatalf("decodeLazy rejects what decode accepts: %v", lerr)
		} else if err == nil && !reflect.DeepEqual(lazy, rv) {
			t.Fatalf("decodeLazy found %+v, decode %+v", lazy, rv)
		}
		var re *RequestError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("error %T is not a *RequestError: %v", err, err)
		}
		var v any
		valid := json.Valid(body) && utf8.Valid(body) && kjson.UnmarshalCaseSensitivePreserveInts(body, &v) == nil
		switch {
		case err == nil || !re.syntax:
			if !valid {
				t.Fatalf("accepted invalid JSON (err %v)", err)
			}
		case valid:
			t.Fatalf("rejected valid JSON: %v", err)
		}
		if err != nil {
			return
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		var apiVersion string
		var req map[string]json.RawMessage
		mustUnmarshal(t, top["apiVersion"], &apiVersion)
		mustUnmarshal(t, top["request"], &req)
		if apiVersion != rv.apiVersion {
			t.Errorf("apiVersion %q, encoding/json %q", rv.apiVersion, apiVersion)
		}
		var uid, desired string
		var objects []json.RawMessage
		mustUnmarshal(t, req["uid"], &uid)
		mustUnmarshal(t, req["desiredAPIVersion"], &desired)
		mustUnmarshal(t, req["objects"], &objects)
		if string(rv.uid) != uid || string(rv.desired) != desired {
			t.Errorf("uid %q desired %q, encoding/json %q %q", rv.uid, rv.desired, uid, desired)
		}
		if !bytes.Equal(rv.uidRaw, bytes.TrimSpace(req["uid"])) {
			t.Errorf("raw uid %q, encoding/json %q", rv.uidRaw, req["uid"])
		}
		if len(objects) != len(rv.objects) {
			t.Fatalf("%d objects, encoding/json %d", len(rv.objects), len(objects))
		}
		for i, raw := range objects {
			o := &rv.objects[i]
			if !bytes.Equal(o.raw, raw) {
				t.Errorf("object %d raw %q, encoding/json %q", i, o.raw, raw)
			}
			var fields map[string]json.RawMessage
			mustUnmarshal(t, raw, &fields)
			checkString(t, "apiVersion", o.APIVersion, fields["apiVersion"])
			checkString(t, "kind", o.Kind, fields["kind"])
			var meta map[string]json.RawMessage
			if m := fields["metadata"]; len(m) > 0 && m[0] == '{' {
				mustUnmarshal(t, m, &meta)
			}
			checkString(t, "metadata.name", o.Name, meta["name"])
			checkString(t, "metadata.namespace", o.Namespace, meta["namespace"])
			checkString(t, "metadata.uid", o.UID, meta["uid"])
		}
	})
}

func mustUnmarshal(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("encoding/json on %q: %v", raw, err)
	}
}

// checkString compares a decoded string field (nil when absent or not a
// string) with the raw value encoding/json found.
func checkString(t *testing.T, name string, got []byte, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 || raw[0] != '"' {
		if got != nil {
			t.Errorf("%s = %q, encoding/json has %q", name, got, raw)
		}
		return
	}
	var want string
	mustUnmarshal(t, raw, &want)
	if got == nil || string(got) != want {
		t.Errorf("%s = %q, encoding/json %q", name, got, want)
	}
}

// FuzzAppendQuoted checks that the failure messages the handler quotes
// round-trip through encoding/json.
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"a", "é😀", "\"\\\b\f\n\r\t\x01", "\xff", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		mustUnmarshal(t, appendQuoted(nil, s), &back)
		var want string
		enc, _ := json.Marshal(s) // invalid UTF-8: one U+FFFD a byte, as appendQuoted
		mustUnmarshal(t, enc, &want)
		if back != want {
			t.Errorf("appendQuoted(%q) round-trips to %q", s, back)
		}
	})
}

// FuzzHandler sends arbitrary bodies through the handler: the answer is a
// 400 or a well-formed review response, and nothing panics.
func FuzzHandler(f *testing.F) {
	fuzzSeeds(f)
	// The real engine serves Widgets, as in production; a fake serves Gadgets.
	h, _ := newTestHandler(f, Options{Converters: []Converter{engine(f), &fakeConverter{group: "other.io", kind: "Gadget", versions: []string{"v1"}}}})
	f.Fuzz(func(t *testing.T, body []byte) {
		status, b := post(t, h, string(body))
		switch status {
		case 400:
			// The handler validates lazily; it must still say what a
			// full validation says.
			var rv review
			if err := rv.decode(body); err == nil {
				t.Fatalf("400 for a body the decoder accepts: %s", b)
			} else if want := err.Error() + "\n"; string(b) != want {
				t.Fatalf("400 says %q, the decoder %q", b, want)
			}
			return
		case 200:
		default:
			t.Fatalf("status %d: %s", status, b)
		}
		var rr reviewResponse
		if err := json.Unmarshal(b, &rr); err != nil || rr.Response == nil {
			t.Fatalf("response is not a review (%v): %s", err, b)
		}
		var rv review
		if err := rv.decode(body); err != nil {
			t.Fatalf("200 for a body the decoder rejects: %v", err)
		}
		if rr.APIVersion != rv.apiVersion || rr.Response.UID != string(rv.uid) {
			t.Errorf("answered %s uid %q to %s uid %q", rr.APIVersion, rr.Response.UID, rv.apiVersion, rv.uid)
		}
		switch rr.Response.Result.Status {
		case "Success":
			if len(rr.Response.ConvertedObjects) != len(rv.objects) {
				t.Errorf("%d converted objects for %d", len(rr.Response.ConvertedObjects), len(rv.objects))
			}
		case "Failure":
			if rr.Response.ConvertedObjects != nil || rr.Response.Result.Message == "" {
				t.Errorf("failure with objects or without a message: %s", b)
			}
		default:
			t.Errorf("result status %q", rr.Response.Result.Status)
		}
		if n := testutil.ToFloat64(h.metrics.panics); n != 0 {
			t.Fatalf("%v panics recovered", n)
		}
	})
}
