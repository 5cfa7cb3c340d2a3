package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hubspoke/hubspoke/internal/stopbits"
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

// FuzzDecode checks the review decoder against encoding/json: the same
// inputs are valid JSON (except invalid UTF-8, which only the decoder
// rejects), and an accepted review yields the values encoding/json finds.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var rv review
		err := rv.decode(body)
		var lazy review
		if lerr := lazy.decodeLazy(body, stopbits.Append(nil, body)); err == nil && lerr != nil {
			t.Fatalf("decodeLazy rejects what decode accepts: %v", lerr)
		} else if err == nil && !reflect.DeepEqual(lazy, rv) {
			t.Fatalf("decodeLazy found %+v, decode %+v", lazy, rv)
		}
		var re *RequestError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("error %T is not a *RequestError: %v", err, err)
		}
		valid := json.Valid(body)
		switch {
		case err == nil || !re.syntax:
			if !valid {
				t.Fatalf("accepted invalid JSON (err %v)", err)
			}
		case valid && utf8.Valid(body) && len(bytes.TrimSpace(body)) > 0:
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
			checkString(t, "apiVersion", o.apiVersion, fields["apiVersion"])
			checkString(t, "kind", o.kind, fields["kind"])
			var meta map[string]json.RawMessage
			if m := fields["metadata"]; len(m) > 0 && m[0] == '{' {
				mustUnmarshal(t, m, &meta)
			}
			checkString(t, "metadata.name", o.meta.name, meta["name"])
			checkString(t, "metadata.namespace", o.meta.namespace, meta["namespace"])
			checkString(t, "metadata.uid", o.meta.uid, meta["uid"])
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

// FuzzString checks string scanning and unquoting against encoding/json.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\"\\\/\b\f\n\r\t"`, "\"\xff\"", `"\x"`, "\"\x01\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := []byte(s)
		if len(d) == 0 || d[0] != '"' {
			d = append([]byte{'"'}, d...)
		}
		end, esc, err := scanString(d, 0)
		whole := err == nil && skipSpace(d, end) == len(d)
		valid := json.Valid(d)
		if whole && !valid {
			t.Fatalf("accepted %q, encoding/json rejects it", d)
		}
		if !whole && valid && utf8.Valid(d) {
			t.Fatalf("rejected %q (end %d, err %v), encoding/json accepts it", d, end, err)
		}
		if !whole {
			return
		}
		var want string
		mustUnmarshal(t, d[:end], &want)
		got := d[1 : end-1]
		if esc {
			got = unquote(nil, got)
		}
		if string(got) != want {
			t.Errorf("unquote(%q) = %q, encoding/json %q", d, got, want)
		}
		if esc != bytes.Contains(d[1:end-1], []byte{'\\'}) {
			t.Errorf("escaped = %v for %q", esc, d)
		}
		// appendQuoted must round-trip.
		var back string
		mustUnmarshal(t, appendQuoted(nil, want), &back)
		if back != want {
			t.Errorf("appendQuoted(%q) round-trips to %q", want, back)
		}
	})
}

// FuzzSkipTrusted checks that the trusted skipper finds the same end as the
// validating scanner on every valid value.
func FuzzSkipTrusted(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\"}"}],"c":"\\"}`, `"x\\\""`, `-1.5e3,`, `[]`, `{"a":"]"}`, `true}`, `null `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		end, err := skipValue(d, 0, 0)
		if err != nil || end < len(d) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(d[end])) {
			return // invalid, or not followed by what may follow a value
		}
		if got, err := skipTrusted(d, stopbits.Append(nil, d), 0, 0); got != end || err != nil {
			t.Errorf("skipTrusted(%q) = %d, %v; skipValue ends at %d", d, got, err, end)
		}
	})
}

// FuzzHandler sends arbitrary bodies through the handler: the answer is a
// 400 or a well-formed review response, and nothing panics.
func FuzzHandler(f *testing.F) {
	fuzzSeeds(f)
	h, _ := newTestHandler(f, Options{Converters: []Converter{widgets(), &fakeConverter{group: "other.io", kind: "Gadget", versions: []string{"v1"}}}})
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
