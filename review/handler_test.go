package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/hubspoke/hubspoke/apirules"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hubspoke/hubspoke/convert"
)

const v1 = APIVersionV1

// TestMalformedRequests sends requests that are not ConversionReviews over
// TLS and checks each status and message.
func TestMalformedRequests(t *testing.T) {
	h, reg := newTestHandler(t, Options{MaxRequestBytes: 64 << 10})
	srv, client := tlsServer(t, h)
	ok := widget("v1alpha1", "a", "")
	good := reviewBody(v1, "u1", "example.com/v1", ok)
	big := reviewBody(v1, "u", "example.com/v1", strings.Repeat(ok+",", 600)+ok)
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	// at returns the message of a JSON syntax error at the offset of
	// marker in body plus delta.
	at := func(body, marker string, delta int, msg string) string {
		i := strings.Index(body, marker)
		if i < 0 {
			t.Fatalf("%q not in %s", marker, body)
		}
		return fmt.Sprintf("request body is not valid JSON: invalid JSON at byte %d: %s", i+delta, msg)
	}
	badUTF8UID := reviewBody(v1, "u\xff", "example.com/v1", ok)
	badUTF8Obj := reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "a\xc3", ""))
	ctrl := reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "a\x01", ""))
	badEscape := reviewBody(v1, `u\x`, "example.com/v1", ok)
	leadingZero := reviewBody(v1, "u", "example.com/v1", strings.Replace(ok, `"size":3`, `"size":03`, 1))
	nan := reviewBody(v1, "u", "example.com/v1", strings.Replace(ok, `"size":3`, `"size":NaN`, 1))
	bareExp := reviewBody(v1, "u", "example.com/v1", strings.Replace(ok, `"size":3`, `"size":3e`, 1))
	deepBody := reviewBody(v1, "u", "example.com/v1", strings.Replace(ok, `"size":3`, `"size":`+deep, 1))
	type row struct {
		name        string
		method      string // default POST
		contentType string // default application/json; "-" for none
		encoding    string
		body        string
		chunked     bool // send without Content-Length
		wantStatus  int
		wantMsg     string
	}
	rows := []row{
		{name: "GET", method: http.MethodGet, wantStatus: 405, wantMsg: "method GET is not allowed: send a ConversionReview with POST"},
		{name: "PUT", method: http.MethodPut, body: good, wantStatus: 405, wantMsg: "method PUT is not allowed: send a ConversionReview with POST"},
		{name: "no content type", contentType: "-", body: good, wantStatus: 415, wantMsg: "missing Content-Type: want application/json"},
		{name: "text/plain", contentType: "text/plain", body: good, wantStatus: 415, wantMsg: `unsupported Content-Type "text/plain": want application/json`},
		{name: "yaml", contentType: "application/yaml", body: good, wantStatus: 415, wantMsg: `unsupported Content-Type "application/yaml": want application/json`},
		{name: "bad media type", contentType: "application/json;;", body: good, wantStatus: 415, wantMsg: `invalid Content-Type "application/json;;": want application/json`},
		{name: "latin1", contentType: "application/json; charset=latin1", body: good, wantStatus: 415, wantMsg: `unsupported charset "latin1": want utf-8`},
		{name: "gzip", encoding: "gzip", body: good, wantStatus: 415, wantMsg: `unsupported Content-Encoding "gzip"`},
		{name: "too large", body: big, wantStatus: 413, wantMsg: fmt.Sprintf("request body of %d bytes exceeds the limit of 65536 bytes", len(big))},
		{name: "too large chunked", chunked: true, body: big, wantStatus: 413, wantMsg: "request body exceeds the limit of 65536 bytes"},
		{name: "empty", wantStatus: 400, wantMsg: "request body is empty"},
		{name: "only space", body: " \n\t ", wantStatus: 400, wantMsg: "request body is empty"},
		{name: "truncated", body: good[:50], wantStatus: 400, wantMsg: "request body is not valid JSON: invalid JSON at byte 50: unexpected end of JSON input in string"},
		{name: "truncated after value", body: good[:len(good)-1], wantStatus: 400, wantMsg: at(good, "", len(good)-1, "unexpected end of JSON input in object")},
		{name: "array", body: `[]`, wantStatus: 400, wantMsg: "request body is an array, not a ConversionReview object"},
		{name: "string", body: `"ConversionReview"`, wantStatus: 400, wantMsg: "request body is a string, not a ConversionReview object"},
		{name: "null", body: `null`, wantStatus: 400, wantMsg: "request body is null, not a ConversionReview object"},
		{name: "trailing data", body: good + " x", wantStatus: 400, wantMsg: at(good, "", len(good)+1, "unexpected data after the top-level value")},
		{name: "two reviews", body: good + good, wantStatus: 400, wantMsg: at(good, "", len(good), "unexpected data after the top-level value")},
		{name: "single quotes", body: `{'kind':'ConversionReview'}`, wantStatus: 400, wantMsg: `request body is not valid JSON: invalid JSON at byte 1: invalid character '\'' looking for beginning of object key string`},
		{name: "trailing comma", body: `{"kind":"ConversionReview",}`, wantStatus: 400, wantMsg: `request body is not valid JSON: invalid JSON at byte 27: invalid character '}' looking for beginning of object key string`},
		{name: "missing apiVersion", body: `{"kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":[]}}`, wantStatus: 400, wantMsg: "missing apiVersion: want apiextensions.k8s.io/v1 or apiextensions.k8s.io/v1beta1"},
		{name: "apiVersion number", body: `{"apiVersion":1,"kind":"ConversionReview"}`, wantStatus: 400, wantMsg: "apiVersion is a number, want a string"},
		{name: "wrong apiVersion", body: reviewBody("admission.k8s.io/v1", "u", "example.com/v1", ok), wantStatus: 400, wantMsg: `unsupported apiVersion "admission.k8s.io/v1": want apiextensions.k8s.io/v1 or apiextensions.k8s.io/v1beta1`},
		{name: "wrong kind", body: strings.Replace(good, `"kind":"ConversionReview"`, `"kind":"AdmissionReview"`, 1), wantStatus: 400, wantMsg: `kind is "AdmissionReview", want ConversionReview`},
		{name: "missing kind", body: strings.Replace(good, `"kind":"ConversionReview",`, ``, 1), wantStatus: 400, wantMsg: "missing kind: want ConversionReview"},
		{name: "kind object", body: strings.Replace(good, `"kind":"ConversionReview"`, `"kind":{}`, 1), wantStatus: 400, wantMsg: "kind is an object, want a string"},
		{name: "missing request", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{}}`, wantStatus: 400, wantMsg: "missing request"},
		{name: "request null", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":null}`, wantStatus: 400, wantMsg: "missing request"},
		{name: "request array", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":[]}`, wantStatus: 400, wantMsg: "request is an array, want an object"},
		{name: "duplicate request", body: strings.Replace(good, `"request":`, `"request":{"uid":"x","desiredAPIVersion":"a/b","objects":[]},"request":`, 1), wantStatus: 400, wantMsg: "duplicate field request"},
		{name: "duplicate uid", body: strings.Replace(good, `"uid":"u1"`, `"uid":"u1","uid":"u2"`, 1), wantStatus: 400, wantMsg: "duplicate field request.uid"},
		{name: "missing uid", body: strings.Replace(good, `"uid":"u1",`, ``, 1), wantStatus: 400, wantMsg: "missing request.uid"},
		{name: "empty uid", body: reviewBody(v1, "", "example.com/v1", ok), wantStatus: 400, wantMsg: "request.uid is empty"},
		{name: "huge number uid", body: strings.Replace(good, `"uid":"u1"`, `"uid":1e999999999999`, 1), wantStatus: 400, wantMsg: "request body is not valid JSON: invalid JSON at byte 83: number 1e999999999999 is out of range: the API server decodes numbers as int64 or float64 and fails on it"},
		{name: "number uid", body: strings.Replace(good, `"uid":"u1"`, `"uid":1e99`, 1), wantStatus: 400, wantMsg: "request.uid is a number, want a string"},
		{name: "invalid UTF-8 in uid", body: badUTF8UID, wantStatus: 400, wantMsg: at(badUTF8UID, "\xff", 0, "invalid UTF-8 in string (the API server would replace it with U+FFFD)")},
		{name: "missing desiredAPIVersion", body: strings.Replace(good, `"desiredAPIVersion":"example.com/v1",`, ``, 1), wantStatus: 400, wantMsg: "missing request.desiredAPIVersion"},
		{name: "empty desiredAPIVersion", body: reviewBody(v1, "u", "", ok), wantStatus: 400, wantMsg: "request.desiredAPIVersion is empty"},
		{name: "desiredAPIVersion boolean", body: strings.Replace(good, `"desiredAPIVersion":"example.com/v1"`, `"desiredAPIVersion":true`, 1), wantStatus: 400, wantMsg: "request.desiredAPIVersion is a boolean, want a string"},
		{name: "missing objects", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1"}}`, wantStatus: 400, wantMsg: "missing request.objects"},
		{name: "objects object", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":{}}}`, wantStatus: 400, wantMsg: "request.objects is an object, want an array"},
		{name: "object is a number", body: reviewBody(v1, "u", "example.com/v1", ok, "42"), wantStatus: 400, wantMsg: "request.objects[1] is a number, want an object"},
		{name: "object is null", body: reviewBody(v1, "u", "example.com/v1", "null"), wantStatus: 400, wantMsg: "request.objects[0] is null, want an object"},
		{name: "object is a string", body: reviewBody(v1, "u", "example.com/v1", `"{}"`), wantStatus: 400, wantMsg: "request.objects[0] is a string, want an object"},
		{name: "invalid UTF-8 in object", body: badUTF8Obj, wantStatus: 400, wantMsg: at(badUTF8Obj, "\xc3", 0, "invalid UTF-8 in string (the API server would replace it with U+FFFD)")},
		{name: "control character", body: ctrl, wantStatus: 400, wantMsg: at(ctrl, "\x01", 0, "invalid control character 0x01 in string")},
		{name: "bad escape", body: badEscape, wantStatus: 400, wantMsg: at(badEscape, `\x`, 1, `invalid escape character 'x' in string`)},
		{name: "leading zero", body: leadingZero, wantStatus: 400, wantMsg: at(leadingZero, "03", 1, "invalid character '3' after object key:value pair")},
		{name: "NaN", body: nan, wantStatus: 400, wantMsg: at(nan, "NaN", 0, "invalid character 'N' looking for beginning of value")},
		{name: "bare exponent", body: bareExp, wantStatus: 400, wantMsg: at(bareExp, "3e}", 2, "number 3e has no digits in its exponent")},
		{name: "deep nesting", body: deepBody, wantStatus: 400, wantMsg: at(deepBody, "[[", 9995, "exceeded maximum nesting depth 10000 (the API server's limit, counting the 3 levels of a ConversionReview around an object)")},
	}
	if len(rows) < 30 {
		t.Fatalf("only %d rows", len(rows))
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+"/convert", body)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSuffix(string(b), "\n")
			if resp.StatusCode != tc.wantStatus || got != tc.wantMsg {
				t.Errorf("got %d %q\nwant %d %q", resp.StatusCode, got, tc.wantStatus, tc.wantMsg)
			}
			if tc.wantStatus == 405 && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", resp.Header.Get("Allow"))
			}
		})
	}
	want400 := 0
	for _, tc := range rows {
		if tc.wantStatus == 400 {
			want400++
		}
	}
	if got := testutil.ToFloat64(h.metrics.badRequests.WithLabelValues("400")); got != float64(want400) {
		t.Errorf("%s{code=400} = %v, want %d (one per 400 row)", MetricBadRequests, got, want400)
	}
	_ = reg
}

// TestReviewAnsweredInKind checks v1 and v1beta1 requests over TLS: the
// response's apiVersion, uid (escapes kept), order and conversion.
func TestReviewAnsweredInKind(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	srv, client := tlsServer(t, h)
	objs := []string{widget("v1alpha1", "a", ""), widget("v1", "b", ""), widget("v1alpha1", "c", `,"labels":{"x":"y"}`)}
	for _, apiVersion := range []string{APIVersionV1, APIVersionV1beta1} {
		t.Run(apiVersion, func(t *testing.T) {
			body := reviewBody(apiVersion, `3f0c-\u00e9-\"`, "example.com/v1", objs...)
			status, b := postTLS(t, client, srv.URL, body)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			rr := decodeResponse(t, b)
			if rr.APIVersion != apiVersion || rr.Kind != "ConversionReview" {
				t.Errorf("answered as %s %s, want %s ConversionReview", rr.APIVersion, rr.Kind, apiVersion)
			}
			if want := "3f0c-\u00e9-\""; rr.Response.UID != want {
				t.Errorf("uid = %q, want %q", rr.Response.UID, want)
			}
			if !strings.Contains(string(b), `"uid":"3f0c-\u00e9-\""`) {
				t.Errorf("uid not echoed byte for byte: %s", b)
			}
			if rr.Response.Result.Status != "Success" {
				t.Fatalf("result %+v", rr.Response.Result)
			}
			var got []string
			for _, o := range rr.Response.ConvertedObjects {
				got = append(got, string(o))
			}
			want := []string{widget("v1", "a", ""), widget("v1", "b", ""), widget("v1", "c", `,"labels":{"x":"y"}`)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("converted objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmptyObjects(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	status, b := post(t, h, reviewBody(v1, "u", "example.com/v1"))
	want := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","convertedObjects":[],"result":{"status":"Success"}}}`
	if status != 200 || string(b) != want {
		t.Errorf("got %d %s\nwant 200 %s", status, b, want)
	}
}

// TestReviewFailures checks reviews that fail: HTTP 200, status Failure,
// no convertedObjects, and a message naming each failing object.
func TestReviewFailures(t *testing.T) {
	failing := &fakeConverter{group: "example.com", kind: "Widget", versions: []string{"v1", "v1alpha1"},
		fn: func(dst, obj []byte, to string) ([]byte, error) {
			switch {
			case strings.Contains(string(obj), `"fail"`):
				return dst, &convert.Error{Index: -1, Name: "ignored", Namespace: "default", From: "example.com/v1alpha1", To: "example.com/v1", Pointer: "/spec/mode", Rule: "enum spec.mode", Err: errors.New(`value "Turbo" has no mapping`)}
			case strings.Contains(string(obj), `"plain"`):
				return dst, errors.New("plain error")
			case strings.Contains(string(obj), `"panic"`):
				panic("converter bug")
			}
			return setAPIVersion(dst, obj, to)
		}}
	gadgets := &fakeConverter{group: "other.io", kind: "Gadget", versions: []string{"v1"}}
	h, reg := newTestHandler(t, Options{Converters: []Converter{failing, gadgets}, MaxListedFailures: 3})
	ok := widget("v1alpha1", "ok", "")
	rows := []struct {
		name    string
		body    string
		wantMsg string
	}{
		{
			name:    "engine error",
			body:    reviewBody(v1, "u", "example.com/v1", ok, widget("v1alpha1", "w", `,"fail":1`)),
			wantMsg: `object [1] default/ignored (example.com/v1alpha1 -> example.com/v1) at /spec/mode: rule enum spec.mode: value "Turbo" has no mapping`,
		},
		{
			name:    "plain error gets index and name",
			body:    reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "p", `,"plain":1`)),
			wantMsg: `object [0] default/p (example.com/v1alpha1 -> example.com/v1): plain error`,
		},
		{
			name:    "unknown version",
			body:    reviewBody(v1, "u", "other.com/v1", ok),
			wantMsg: `object [0] default/ok: unknown version "other.com/v1"`,
		},
		{
			name: "every failure named",
			body: reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "p1", `,"plain":1`), ok, widget("v1alpha1", "p2", `,"plain":1`)),
			wantMsg: `2 objects failed to convert: object [0] default/p1 (example.com/v1alpha1 -> example.com/v1): plain error; ` +
				`object [2] default/p2 (example.com/v1alpha1 -> example.com/v1): plain error`,
		},
		{
			name: "listed failures capped",
			body: reviewBody(v1, "u", "example.com/v1", strings.Repeat(widget("v1alpha1", "p", `,"plain":1`)+",", 4)+widget("v1alpha1", "p", `,"plain":1`)),
			wantMsg: `5 objects failed to convert (the first 3 are named): object [0] default/p (example.com/v1alpha1 -> example.com/v1): plain error; ` +
				`object [1] default/p (example.com/v1alpha1 -> example.com/v1): plain error; object [2] default/p (example.com/v1alpha1 -> example.com/v1): plain error`,
		},
		{
			name:    "panic",
			body:    reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "boom", `,"panic":1`)),
			wantMsg: `object [0] default/boom (example.com/v1alpha1 -> example.com/v1): internal error: the converter panicked (see the webhook's log)`,
		},
		{
			name:    "unknown kind",
			body:    reviewBody(v1, "u", "example.com/v1", strings.Replace(ok, `"Widget"`, `"Gizmo"`, 1)),
			wantMsg: `object [0] default/ok (example.com/v1alpha1 -> example.com/v1): no converter for kind Gizmo in group example.com: this webhook converts Gadget.other.io, Widget.example.com`,
		},
		{
			name:    "no apiVersion",
			body:    reviewBody(v1, "u", "example.com/v1", `{"kind":"Widget","metadata":{"name":"x"}}`),
			wantMsg: `object [0] x: the object has no apiVersion string`,
		},
		{
			name:    "kind not a string",
			body:    reviewBody(v1, "u", "example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":7}`),
			wantMsg: `object [0] (example.com/v1alpha1 -> example.com/v1): the object has no kind string`,
		},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			status, b := post(t, h, tc.body)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			rr := decodeResponse(t, b)
			if rr.Response.UID != "u" || rr.Response.Result.Status != "Failure" || rr.Response.ConvertedObjects != nil {
				t.Errorf("want uid u, Failure, no convertedObjects; got %s", b)
			}
			if got := rr.Response.Result.Message; got != tc.wantMsg {
				t.Errorf("message:\n got %s\nwant %s", got, tc.wantMsg)
			}
		})
	}
	if got := testutil.ToFloat64(h.metrics.panics); got != 1 {
		t.Errorf("%s = %v, want 1", MetricPanics, got)
	}
	// Five rows fail Widgets from v1alpha1 to v1: engine error, plain
	// error, every failure named, listed failures capped, panic. The others
	// ask for another group or fail before a converter is found.
	if got := testutil.ToFloat64(h.metrics.reviews.WithLabelValues("Widget.example.com", "v1alpha1", "v1", "failure")); got != 5 {
		t.Errorf("failed reviews = %v, want 5", got)
	}
	_ = reg
}

// TestSelfCheck gives the handler converters that break each rule the API
// server checks, and expects a Failure naming the rule, and the metric.
func TestSelfCheck(t *testing.T) {
	bigValue := strings.Repeat("x", apirules.MaxAnnotationsBytes)
	rows := []struct {
		name    string
		extra   string // metadata members of the input
		convert func(obj string, to string) string
		wantMsg string // "" for success
	}{
		{name: "ok", convert: func(o, to string) string { return o }},
		{name: "not JSON", convert: func(o, to string) string { return o[:len(o)-1] }, wantMsg: "the converted object is not JSON the API server decodes: invalid JSON at byte 124: unexpected end of JSON input in object"},
		{name: "trailing data", convert: func(o, to string) string { return o + "{}" }, wantMsg: "the converted object is not JSON the API server decodes: invalid JSON at byte 125: unexpected data after the object"},
		{name: "not an object", convert: func(o, to string) string { return `[` + o + `]` }, wantMsg: "the converted object is an array, not a JSON object"},
		{name: "empty", convert: func(o, to string) string { return `` }, wantMsg: "the converted object is empty"},
		{name: "wrong apiVersion", convert: func(o, to string) string { return strings.Replace(o, `example.com/v1"`, `example.com/v2"`, 1) }, wantMsg: `the converted object has apiVersion "example.com/v2", want "example.com/v1"`},
		{name: "kind changed", convert: func(o, to string) string { return strings.Replace(o, `"Widget"`, `"Gadget"`, 1) }, wantMsg: `the converted object has kind "Gadget", want "Widget"`},
		{name: "name changed", convert: func(o, to string) string { return strings.Replace(o, `"name":"a"`, `"name":"b"`, 1) }, wantMsg: `the converted object has metadata.name "b", want "a"`},
		{name: "namespace dropped", convert: func(o, to string) string { return strings.Replace(o, `"namespace":"default",`, ``, 1) }, wantMsg: `the converted object has metadata.namespace "", want "default"`},
		{name: "uid changed", convert: func(o, to string) string { return strings.Replace(o, `"uid-a"`, `"uid-b"`, 1) }, wantMsg: `the converted object has metadata.uid "uid-b", want "uid-a"`},
		{name: "metadata dropped", convert: func(o, to string) string {
			return `{"apiVersion":"example.com/v1","kind":"Widget"}`
		}, wantMsg: `the converted object has no metadata`},
		{name: "metadata not object", convert: func(o, to string) string {
			return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":[]}`
		}, wantMsg: `the converted object's metadata is not an object`},
		{name: "escaped name same", convert: func(o, to string) string { return strings.Replace(o, `"name":"a"`, `"name":"\u0061"`, 1) }},
		{name: "invalid label added", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","labels":{"bad key!":"v"}`, 1)
		}, wantMsg: `the converted object's metadata.labels are invalid: key "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{name: "invalid label value", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","labels":{"k":"`+strings.Repeat("v", 64)+`"}`, 1)
		}, wantMsg: `the converted object's metadata.labels are invalid: value "` + strings.Repeat("v", 64) + `" of key "k": must be no more than 63 bytes`},
		{name: "label not a string", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","labels":{"k":1}`, 1)
		}, wantMsg: `the converted object's metadata.labels: the value of "k" is a number, want a string`},
		{name: "labels not an object", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","labels":"k=v"`, 1)
		}, wantMsg: `the converted object's metadata.labels is a string, want an object of strings`},
		{name: "labels null", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","labels":null`, 1)
		}},
		{name: "unchanged invalid labels pass", extra: `,"labels":{"bad key!":"v"}`, convert: func(o, to string) string {
			return strings.Replace(o, `{"bad key!":"v"}`, `{ "bad key!" : "v" }`, 1)
		}},
		{name: "annotation added", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","annotations":{"hubspoke.dev/preserved":"{\"v1alpha1\":{}}"}`, 1)
		}},
		{name: "annotations too large", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","annotations":{"a":"`+bigValue+`"}`, 1)
		}, wantMsg: `the converted object's metadata.annotations are invalid: total size 262145 bytes exceeds the limit of 262144 bytes`},
		{name: "annotation key invalid", convert: func(o, to string) string {
			return strings.Replace(o, `"uid":"uid-a"`, `"uid":"uid-a","annotations":{"a/b/c":""}`, 1)
		}, wantMsg: `the converted object's metadata.annotations are invalid: key "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			conv := &fakeConverter{group: "example.com", kind: "Widget", versions: []string{"v1", "v1alpha1"},
				fn: func(dst, obj []byte, to string) ([]byte, error) {
					out, err := setAPIVersion(nil, obj, to)
					if err != nil {
						return dst, err
					}
					return append(dst, tc.convert(string(out), to)...), nil
				}}
			h, _ := newTestHandler(t, Options{Converters: []Converter{conv}})
			status, b := post(t, h, reviewBody(v1, "u", "example.com/v1", widget("v1alpha1", "a", tc.extra)))
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			rr := decodeResponse(t, b)
			if tc.wantMsg == "" {
				if rr.Response.Result.Status != "Success" {
					t.Fatalf("want Success, got %+v", rr.Response.Result)
				}
				return
			}
			want := `object [0] default/a (example.com/v1alpha1 -> example.com/v1): self-check: ` + tc.wantMsg
			if rr.Response.Result.Status != "Failure" || rr.Response.Result.Message != want || rr.Response.ConvertedObjects != nil {
				t.Errorf("got %s %q\nwant Failure %q", rr.Response.Result.Status, rr.Response.Result.Message, want)
			}
			if got := testutil.ToFloat64(h.metrics.selfCheckFailures.WithLabelValues("Widget.example.com")); got != 1 {
				t.Errorf("%s = %v, want 1", MetricSelfCheckFailures, got)
			}
			if got := testutil.ToFloat64(h.metrics.reviews.WithLabelValues("Widget.example.com", "v1alpha1", "v1", "self_check_failure")); got != 1 {
				t.Errorf("self-check failed reviews = %v, want 1", got)
			}
		})
	}
}

func TestNewHandlerErrors(t *testing.T) {
	rows := []struct {
		name string
		opts Options
		want string
	}{
		{name: "none", opts: Options{}, want: "review: no converters given"},
		{name: "nil", opts: Options{Converters: []Converter{nil}}, want: "review: converter 0 is nil"},
		{name: "duplicate", opts: Options{Converters: []Converter{widgets(), widgets()}}, want: "review: two converters for kind Widget in group example.com"},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHandler(tc.opts)
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
		})
	}
}

// TestMetrics checks the labels of a successful mixed-version review.
func TestMetrics(t *testing.T) {
	h, reg := newTestHandler(t, Options{})
	body := reviewBody(v1, "u", "example.com/v1alpha1", widget("v1", "a", ""), widget("v1", "b", ""), strings.Replace(widget("v1", "c", ""), "example.com/v1", "example.com/v9", 1))
	if status, b := post(t, h, body); status != 200 || decodeResponse(t, b).Response.Result.Status != "Success" {
		t.Fatalf("status %d: %s", status, b)
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue()
			if m.Histogram != nil {
				v = float64(m.GetHistogram().GetSampleCount())
			}
			got[fmt.Sprintf("%s%v", mf.GetName(), labels)] = v
		}
	}
	want := map[string]float64{
		"hubspoke_conversion_reviews_total[crd=Widget.example.com from_version=mixed result=success to_version=v1alpha1]":   1,
		"hubspoke_conversion_objects_total[crd=Widget.example.com from_version=v1 result=success to_version=v1alpha1]":      2,
		"hubspoke_conversion_objects_total[crd=Widget.example.com from_version=unknown result=success to_version=v1alpha1]": 1,
		"hubspoke_conversion_review_duration_seconds[crd=Widget.example.com]":                                               1,
		"hubspoke_conversion_panics_recovered_total[]":                                                                      0,
		"hubspoke_conversion_request_size_bytes[]":                                                                          1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// TestDeclaredLengthDoesNotAllocate sends requests that declare a large
// Content-Length and send little: the handler's memory follows the bytes
// that arrive, not the declared length.
func TestDeclaredLengthDoesNotAllocate(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	good := reviewBody(APIVersionV1, "u", "example.com/v1", widget("v1alpha1", "a", ""))
	for _, tc := range []struct {
		name, body string
		wantStatus int
	}{
		{name: "short body", body: good[:20], wantStatus: 400},
		{name: "empty body", body: "", wantStatus: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const declared = 100 << 20
			r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/convert", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			r.ContentLength = declared
			w := httptest.NewRecorder()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			h.ServeHTTP(w, r)
			runtime.ReadMemStats(&after)
			if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("allocated %d bytes for %d sent (%d declared), want under 1 MiB", got, len(tc.body), declared)
			}
		})
	}
}

// TestReadBodyGrowth holds readBody's bound: its buffer is never more than
// four times the bytes read (or minRead), whatever length is declared, and
// it reads bodies of every size around its growth steps exactly.
func TestReadBodyGrowth(t *testing.T) {
	for _, size := range []int{0, 1, minRead - 1, minRead, minRead + 1, 4*minRead + 7, 1 << 20} {
		body := bytes.Repeat([]byte{'x'}, size)
		for _, declared := range []int64{-1, int64(size), 1 << 30} {
			got, err := readBody(bytes.NewReader(body), declared, nil)
			if declared > int64(size) {
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("size %d declared %d: err %v, want unexpected EOF", size, declared, err)
				}
			} else if err != nil || !bytes.Equal(got, body) {
				t.Errorf("size %d declared %d: %d bytes, err %v", size, declared, len(got), err)
			}
			if limit := max(4*len(got), minRead); cap(got) > limit {
				t.Errorf("size %d declared %d: buffer of %d bytes, over %d", size, declared, cap(got), limit)
			}
		}
	}
}

// TestRequestSizeLimit: a body of exactly Options.MaxRequestBytes is
// converted, one byte more is refused with 413, whether the request
// declares its length or not.
func TestRequestSizeLimit(t *testing.T) {
	const limit = 64 << 10
	h, _ := newTestHandler(t, Options{MaxRequestBytes: limit})
	srv, client := tlsServer(t, h)
	good := reviewBody(v1, "u1", "example.com/v1", widget("v1alpha1", "a", ""))
	pad := func(n int) string { return good + strings.Repeat(" ", n-len(good)) } // space after the review is valid JSON
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"exactly the limit", limit, false, 200},
		{"exactly the limit, chunked", limit, true, 200},
		{"one byte over", limit + 1, false, 413},
		{"one byte over, chunked", limit + 1, true, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(pad(tc.size))
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/convert", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%d bytes: status %d, want %d: %s", tc.size, resp.StatusCode, tc.want, b)
			}
			if tc.want == 200 && !bytes.Contains(b, []byte(`"status":"Success"`)) {
				t.Fatalf("%d bytes: not converted: %s", tc.size, b)
			}
		})
	}
}
