package apirules_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hubspoke/hubspoke/apirules"
)

const orig = `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","namespace":"ns","uid":"u1","labels":{"app":"x"},"annotations":{"a":"b"}},"spec":{"replicas":1}}`

func conv(meta, rest string) string {
	return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{` + meta + `}` + rest + `}`
}

const idMeta = `"name":"w","namespace":"ns","uid":"u1"`

func TestObject(t *testing.T) {
	tests := []struct {
		name, out string
		want      string // "" for no violation, else in the message
	}{
		{name: "valid", out: conv(idMeta+`,"labels":{"app":"x"}`, `,"spec":{"size":1}`)},
		{name: "same labels, other order and spelling", out: conv(idMeta+`,"labels":{"app":"\u0078"}`, "")},
		{name: "labels dropped", out: conv(idMeta, "")},
		{name: "apiVersion", out: strings.Replace(conv(idMeta, ""), "example.com/v1", "example.com/v2", 1), want: `apiVersion "example.com/v2", want "example.com/v1"`},
		{name: "no apiVersion", out: `{"kind":"Widget","metadata":{` + idMeta + `}}`, want: "no apiVersion string"},
		{name: "kind", out: strings.Replace(conv(idMeta, ""), "Widget", "Gadget", 1), want: `kind "Gadget", want "Widget"`},
		{name: "name", out: conv(`"name":"v","namespace":"ns","uid":"u1"`, ""), want: `metadata.name "v", want "w"`},
		{name: "namespace", out: conv(`"name":"w","uid":"u1"`, ""), want: `metadata.namespace "", want "ns"`},
		{name: "uid", out: conv(`"name":"w","namespace":"ns","uid":"u2"`, ""), want: `metadata.uid "u2", want "u1"`},
		{name: "no metadata", out: `{"apiVersion":"example.com/v1","kind":"Widget"}`, want: "has no metadata"},
		{name: "null metadata", out: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":null}`, want: "has no metadata"},
		{name: "metadata not an object", out: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":[]}`, want: "metadata is not an object"},
		{name: "invalid label key", out: conv(idMeta+`,"labels":{"bad key":"x"}`, ""), want: `metadata.labels are invalid: key "bad key"`},
		{name: "invalid label value", out: conv(idMeta+`,"labels":{"app":"-x-"}`, ""), want: `value "-x-" of key "app"`},
		{name: "label not a string", out: conv(idMeta+`,"labels":{"app":1}`, ""), want: `metadata.labels: the value of "app" is a number`},
		{name: "labels not an object", out: conv(idMeta+`,"labels":"x"`, ""), want: "metadata.labels is a string"},
		{name: "invalid annotation key", out: conv(idMeta+`,"annotations":{"a b":"x"}`, ""), want: `metadata.annotations are invalid: key "a b"`},
		{name: "annotations too large", out: conv(idMeta+`,"annotations":{"a":"`+strings.Repeat("x", apirules.MaxAnnotationsBytes)+`"}`, ""), want: "total size 262145 bytes exceeds the limit of 262144 bytes"},
		{name: "annotations at the limit", out: conv(idMeta+`,"annotations":{"a":"`+strings.Repeat("x", apirules.MaxAnnotationsBytes-1)+`"}`, "")},
		{name: "number too large", out: conv(idMeta, `,"spec":{"size":`+strings.Repeat("9", 400)+`}`), want: "number 99999999999999999999...9999999999 (400 characters) is out of range"},
		{name: "number 1e400", out: conv(idMeta, `,"spec":{"size":1e400}`), want: "number 1e400 is out of range"},
		{name: "big integer kept as float", out: conv(idMeta, `,"spec":{"size":123456789012345678901234567890}`)},
		{name: "invalid utf-8", out: conv(idMeta, `,"spec":{"s":"`+"\xff"+`"}`), want: "invalid UTF-8 in string"},
		{name: "deepest", out: conv(idMeta, `,"spec":`+nest(apirules.MaxObjectDepth-1))},
		{name: "too deep", out: conv(idMeta, `,"spec":`+nest(apirules.MaxObjectDepth)), want: "exceeded maximum nesting depth 10000"},
		{name: "not JSON", out: `{"apiVersion":`, want: "the converted object is not JSON the API server decodes"},
		{name: "not an object", out: `[]`, want: "the converted object is an array, not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := apirules.Object([]byte(orig), []byte(tc.out), "example.com/v1")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("violation: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no violation, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("violation %q, want it to say %q", err, tc.want)
			}
		})
	}
}

// nest returns n nested arrays (n levels).
func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestLabelsAndAnnotationsMatchAPIMachinery holds Labels and Annotations to
// the validation functions the API server calls.
func TestLabelsAndAnnotationsMatchAPIMachinery(t *testing.T) {
	maps := []map[string]string{
		{"app": "x"},
		{"example.com/tier": "backend", "a": ""},
		{"bad key": "x"},
		{"app": "-x"},
		{"app": strings.Repeat("x", 64)},
		{"a/b/c": "x"},
		{"UPPER.example.com/Key": "v"},
		{"": "v"},
		{"k": strings.Repeat("x", apirules.MaxAnnotationsBytes)},
		{"k": strings.Repeat("x", apirules.MaxAnnotationsBytes-1)},
	}
	for i, m := range maps {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			wantL := len(metav1validation.ValidateLabels(m, field.NewPath("metadata", "labels"))) > 0
			if got := apirules.Labels(m) != nil; got != wantL {
				t.Errorf("Labels(%.60v) error = %v, apimachinery %v", m, got, wantL)
			}
			wantA := len(apivalidation.ValidateAnnotations(m, field.NewPath("metadata", "annotations"))) > 0
			if got := apirules.Annotations(m) != nil; got != wantA {
				t.Errorf("Annotations(%.60v) error = %v, apimachinery %v", m, got, wantA)
			}
		})
	}
	if apirules.MaxAnnotationsBytes != apivalidation.TotalAnnotationSizeLimitB {
		t.Errorf("MaxAnnotationsBytes %d, apimachinery %d", apirules.MaxAnnotationsBytes, apivalidation.TotalAnnotationSizeLimitB)
	}
}

func TestNumber(t *testing.T) {
	for lit, ok := range map[string]bool{
		"0": true, "-1.5e3": true, "9223372036854775808": true, "1e308": true, "1e-400": true,
		"1e309": false, strings.Repeat("9", 309): false, "": false, "1x": false, "01": false,
	} {
		if err := apirules.Number([]byte(lit)); (err == nil) != ok {
			t.Errorf("Number(%.20q) = %v, want ok=%v", lit, err, ok)
		}
	}
}

func response(apiVersion, uid, status, objects string) []byte {
	return []byte(`{"apiVersion":"` + apiVersion + `","kind":"ConversionReview","response":{"uid":"` + uid + `","convertedObjects":[` + objects + `],"result":{"status":"` + status + `","message":"boom"}}}`)
}

func TestResponse(t *testing.T) {
	req := apirules.Request{APIVersion: apirules.ReviewV1, UID: "r1", DesiredAPIVersion: "example.com/v1", Objects: [][]byte{[]byte(orig)}}
	good := conv(idMeta, `,"spec":{"size":1}`)
	orig2 := strings.Replace(orig, `"name":"w"`, `"name":"w2"`, 1)
	good2 := conv(`"name":"w2","namespace":"ns","uid":"u1"`, `,"spec":{"size":2}`)
	two := apirules.Request{APIVersion: apirules.ReviewV1, UID: "r1", DesiredAPIVersion: "example.com/v1", Objects: [][]byte{[]byte(orig), []byte(orig2)}}
	tests := []struct {
		name string
		req  apirules.Request
		body []byte
		want string
	}{
		{name: "valid", req: req, body: response(apirules.ReviewV1, "r1", "Success", good)},
		{name: "v1beta1 answer to v1", req: req, body: response(apirules.ReviewV1beta1, "r1", "Success", good), want: "want apiextensions.k8s.io/v1, ConversionReview"},
		{name: "uid", req: req, body: response(apirules.ReviewV1, "r2", "Success", good), want: `response.uid is "r2", want "r1"`},
		{name: "failure", req: req, body: response(apirules.ReviewV1, "r1", "Failure", good), want: "the conversion failed: boom"},
		{name: "count", req: req, body: response(apirules.ReviewV1, "r1", "Success", good+","+good), want: "2 converted objects, want 1"},
		{name: "object rule", req: req, body: response(apirules.ReviewV1, "r1", "Success", conv(`"name":"x","namespace":"ns","uid":"u1"`, "")), want: `converted object 0: the converted object has metadata.name "x"`},
		{name: "not an object", req: req, body: response(apirules.ReviewV1, "r1", "Success", `1`), want: "converted object 0 is a number"},
		{name: "no response", req: req, body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`), want: "no response"},
		{name: "not JSON", req: req, body: []byte(`{`), want: "not valid JSON"},
		{name: "depth counted from the envelope", req: req, body: response(apirules.ReviewV1, "r1", "Success", conv(idMeta, `,"spec":`+nest(apirules.MaxObjectDepth))), want: "exceeded maximum nesting depth"},
		{name: "no result", req: req, body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"r1","convertedObjects":[` + good + `]}}`), want: "has no response.result"},
		{name: "empty result", req: req, body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"r1","convertedObjects":[` + good + `],"result":{}}}`), want: `response.result.status is "", not "Success"`},
		{name: "UID is not uid", req: req, body: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"UID":"r1","convertedObjects":[` + good + `],"result":{"status":"Success"}}}`), want: `response.uid is "", want "r1"`},
		{name: "two objects, each its own", req: two, body: response(apirules.ReviewV1, "r1", "Success", good+","+good2)},
		{name: "two objects, swapped", req: two, body: response(apirules.ReviewV1, "r1", "Success", good2+","+good), want: `converted object 0: the converted object has metadata.name "w2", want "w"`},
		{name: "second object checked against its own", req: two, body: response(apirules.ReviewV1, "r1", "Success", good+","+good), want: `converted object 1: the converted object has metadata.name "w", want "w2"`},
		{name: "v1 answer to v1beta1", req: apirules.Request{APIVersion: apirules.ReviewV1beta1, UID: "r1", DesiredAPIVersion: "example.com/v1", Objects: req.Objects},
			body: response(apirules.ReviewV1, "r1", "Success", good), want: "want apiextensions.k8s.io/v1beta1, ConversionReview"},
		{name: "v1beta1 uid not checked", req: apirules.Request{APIVersion: apirules.ReviewV1beta1, UID: "r1", DesiredAPIVersion: "example.com/v1", Objects: req.Objects},
			body: response(apirules.ReviewV1beta1, "other", "Success", good)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := apirules.Response(tc.req, tc.body)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("violation: %v", err)
			case tc.want == "" && (len(objs) != len(tc.req.Objects) || string(objs[0]) != good):
				t.Fatalf("objects %q, want [%s, ...]", objs, good)
			case tc.want != "" && err == nil:
				t.Fatalf("no violation, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("violation %q, want it to say %q", err, tc.want)
			}
			var re *apirules.ResponseError
			if err != nil && !errors.As(err, &re) {
				t.Errorf("%v is not a *apirules.ResponseError", err)
			}
		})
	}
}

func TestAnnotationsSize(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
		err  string
	}{
		{raw: `{}`, want: 0},
		{raw: `null`, want: 0},
		{raw: `{"a":"bc"}`, want: 3},
		{raw: `{"example.com/k":"v","x":""}`, want: 15},
		{raw: `{"\u00e9":"\u00e9"}`, want: 4}, // decoded: two bytes each
		{raw: `{"a":"x","a":"yy"}`, want: 3},  // the last of duplicates, once
		{raw: `{"a":1}`, err: `the value of "a" is a number`},
		{raw: `[]`, err: "metadata.annotations is an array"},
	} {
		got, err := apirules.AnnotationsSize([]byte(tc.raw))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err %v, want %q", tc.raw, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %d, %v; want %d", tc.raw, got, err, tc.want)
		}
	}
}

// TestNeedsMetadata: only an object converted from an original without
// metadata, and written without, is completed.
func TestNeedsMetadata(t *testing.T) {
	tests := []struct {
		name, orig, out string
		want            bool
	}{
		{"original without, converted without", bare, bareConv(""), true},
		{"original without, converted with null", bare, bareConv(`,"metadata":null`), true},
		{"original without, converted with an empty one", bare, bareConv(`,"metadata":{}`), false},
		{"original without, converted with annotations", bare, bareConv(`,"metadata":{"annotations":{"a":"b"}}`), false},
		{"original without, converted with an array", bare, bareConv(`,"metadata":[]`), false},
		{"original with, converted without", orig, bareConv(""), false},
		{"original with an array, converted without", `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":[]}`, bareConv(""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := apirules.ReadHead([]byte(tc.orig))
			if err != nil {
				t.Fatal(err)
			}
			out, err := apirules.ReadHead([]byte(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			if got := apirules.NeedsMetadata(&in, &out); got != tc.want {
				t.Errorf("NeedsMetadata = %v, want %v", got, tc.want)
			}
		})
	}
}
