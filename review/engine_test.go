package review

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hubspoke/hubspoke/convert"
)

// engine returns the production converter: a real *convert.Converter for
// Widgets (v1 hub, v1alpha1 spoke renaming spec.replicas to spec.size), with
// an extra Funcs rule on the v1beta1 spoke that does what its object's
// spec.break asks, so tests can make the engine's output break the rules
// the API server applies.
func engine(t testing.TB) *convert.Converter {
	t.Helper()
	rename, err := convert.Rename(convert.MustPath("spec.replicas"), convert.MustPath("spec.size"))
	if err != nil {
		t.Fatal(err)
	}
	breaker := func(o *convert.Object) error {
		var what string
		if ok, err := o.Decode(convert.MustPath("spec.break"), &what); err != nil || !ok {
			return err
		}
		switch what {
		case "rename":
			return o.Set(convert.MustPath("metadata.name"), []byte(`"renamed"`))
		case "label":
			return o.Set(convert.MustPath("metadata.labels"), []byte(`{"bad key!":"v"}`))
		case "annotations":
			return o.Set(convert.MustPath("metadata.annotations"), []byte(`{"a":"`+strings.Repeat("x", 256*1024)+`"}`))
		case "uid":
			return o.Set(convert.MustPath("metadata.uid"), []byte(`"other"`))
		case "kind":
			return o.Set(convert.MustPath("kind"), []byte(`"Gadget"`))
		case "metadata":
			_, _, err := o.Delete(convert.MustPath("metadata"))
			return err
		case "apiVersion":
			_, _, err := o.Delete(convert.MustPath("apiVersion"))
			return err
		case "bignum":
			return o.Set(convert.MustPath("spec.n"), []byte(strings.Repeat("9", 400)))
		case "badutf8":
			return o.Set(convert.MustPath("spec.s"), []byte("\"\xff\""))
		case "fail":
			return errors.New("refused")
		}
		return nil
	}
	funcs, err := convert.Funcs("breaker", breaker, breaker)
	if err != nil {
		t.Fatal(err)
	}
	c, err := convert.New(convert.Definition{Group: "example.com", Kind: "Widget", Hub: "v1", Spokes: []convert.Spoke{
		{Version: "v1alpha1", Rules: []convert.Rule{rename}},
		{Version: "v1beta1", Rules: []convert.Rule{funcs}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSelfCheckEngine sends the engine's output through the self-check:
// a Funcs rule that breaks a rule the API server applies fails the review
// with the rule named, and the self-check metric counts it.
func TestSelfCheckEngine(t *testing.T) {
	obj := func(brk string) string {
		return `{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"a","namespace":"default","uid":"uid-a","labels":{"app":"x"}},"spec":{"break":"` + brk + `"}}`
	}
	const prefix = "object [0] default/a (example.com/v1beta1 -> example.com/v1): "
	rows := []struct {
		name, brk string
		wantMsg   string // "" for success
		selfCheck bool   // the self-check, not the engine, refuses it
	}{
		{name: "ok", brk: "none"},
		{name: "renames the object", brk: "rename", wantMsg: prefix + `self-check: the converted object has metadata.name "renamed", want "a"`, selfCheck: true},
		{name: "adds an invalid label", brk: "label", wantMsg: prefix + `self-check: the converted object's metadata.labels are invalid: key "bad key!": name part must consist of alphanumeric characters`, selfCheck: true},
		{name: "annotations over the limit", brk: "annotations", wantMsg: prefix + `self-check: the converted object's metadata.annotations are invalid: total size 262145 bytes exceeds the limit of 262144 bytes`, selfCheck: true},
		{name: "changes the uid", brk: "uid", wantMsg: prefix + `self-check: the converted object has metadata.uid "other", want "uid-a"`, selfCheck: true},
		{name: "changes the kind", brk: "kind", wantMsg: prefix + `self-check: the converted object has kind "Gadget", want "Widget"`, selfCheck: true},
		{name: "deletes metadata", brk: "metadata", wantMsg: prefix + `self-check: the converted object has no metadata`, selfCheck: true},
		{name: "deletes apiVersion", brk: "apiVersion"}, // the engine writes it back
		{name: "writes a number the API server cannot decode", brk: "bignum", wantMsg: prefix + "rule funcs breaker: setting /spec/n: invalid JSON at byte 0: number 99999999999999999999...9999999999 (400 characters) is out of range"},
		{name: "writes invalid UTF-8", brk: "badutf8", wantMsg: prefix + "rule funcs breaker: setting /spec/s: invalid JSON at byte 1: invalid UTF-8 in string"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, Options{Converters: []Converter{engine(t)}})
			status, b := post(t, h, reviewBody(APIVersionV1, "u", "example.com/v1", obj(tc.brk)))
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			rr := decodeResponse(t, b)
			if tc.wantMsg == "" {
				if rr.Response.Result.Status != "Success" || len(rr.Response.ConvertedObjects) != 1 {
					t.Fatalf("want one converted object, got %s", b)
				}
				return
			}
			if rr.Response.Result.Status != "Failure" || !strings.HasPrefix(rr.Response.Result.Message, tc.wantMsg) {
				t.Fatalf("message\n got %q\nwant it to start with %q", rr.Response.Result.Message, tc.wantMsg)
			}
			want := 0.0
			if tc.selfCheck {
				want = 1
			}
			if got := testutil.ToFloat64(h.metrics.selfCheckFailures.WithLabelValues("Widget.example.com")); got != want {
				t.Errorf("self-check failures = %v, want %v", got, want)
			}
		})
	}
}

// TestEngineInputUTF8 sends objects with invalid UTF-8 to the engine: the
// review is refused (400) as the decoder refuses it, never converted.
func TestEngineInputUTF8(t *testing.T) {
	h, _ := newTestHandler(t, Options{Converters: []Converter{engine(t)}})
	for _, where := range []string{`"spec":{"replicas":1,"s":"a` + "\xff" + `"}`, `"spec":{"replicas":1},"status":{"` + "\xc3" + `":1}`} {
		body := reviewBody(APIVersionV1, "u", "example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"a"},`+where+`}`)
		status, b := post(t, h, body)
		var rv review
		want := rv.decode([]byte(body))
		if status != 400 || want == nil || string(b) != want.Error()+"\n" || !strings.Contains(string(b), "invalid UTF-8 in string") {
			t.Errorf("%q: status %d %q, want 400 %v", where, status, b, want)
		}
	}
}
