package review

import (
	"bytes"
	"strings"
	"testing"
)

// TestObjectsWithoutMetadata: the API server's field manager sends objects
// without metadata (server-side apply across versions), and refuses an
// answer without metadata all the same. Such an object is answered with
// metadata {} added after what the converter wrote, by the engine (on the
// fast and the general path alike) and by any other converter; an object
// whose original has metadata gets no such help.
func TestObjectsWithoutMetadata(t *testing.T) {
	// gadget answers with the object its Gadget's spec.out names.
	gadget := &fakeConverter{group: "other.io", kind: "Gadget", versions: []string{"v1", "v2"}, fn: func(dst, obj []byte, to string) ([]byte, error) {
		for _, out := range []string{"bare", "null", "newline", "spaces", "dropped"} {
			if bytes.Contains(obj, []byte(`"out":"`+out+`"`)) {
				return append(dst, gadgetOut[out]...), nil
			}
		}
		return setAPIVersion(dst, obj, to)
	}}
	h, _ := newTestHandler(t, Options{Converters: []Converter{engine(t), gadget}})
	g := func(out string) string {
		return `{"apiVersion":"other.io/v1","kind":"Gadget","spec":{"out":"` + out + `"}}`
	}
	rows := []struct {
		name, desired, in string
		want              string // the converted object, or the failure message
		fast              bool   // the fast path answers it
	}{
		{name: "engine", desired: "example.com/v1", fast: true,
			in:   `{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"replicas":1},"status":{"ready":true}}`,
			want: `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":1},"status":{"ready":true},"metadata":{}}`},
		{name: "engine, spaced out", desired: "example.com/v1alpha1", fast: true,
			in:   "{ \"apiVersion\": \"example.com/v1\",\n \"kind\": \"Widget\", \"spec\": {\"size\": 2}\n }",
			want: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","spec":{"replicas":2},"metadata":{}}`},
		{name: "engine, nothing to convert", desired: "example.com/v1", fast: true,
			in:   `{"apiVersion":"example.com/v1","kind":"Widget"}`,
			want: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{}}`},
		{name: "engine, a rule writes metadata", desired: "example.com/v1",
			in:   `{"apiVersion":"example.com/v1beta1","kind":"Widget","spec":{"break":"label"}}`,
			want: `object [0] (example.com/v1beta1 -> example.com/v1): self-check: the converted object's metadata.labels are invalid: key "bad key!"`},
		{name: "engine, metadata deleted", desired: "example.com/v1",
			in:   `{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"a"},"spec":{"break":"metadata"}}`,
			want: `object [0] a (example.com/v1beta1 -> example.com/v1): self-check: the converted object has no metadata`},
		{name: "converter", desired: "other.io/v2", in: g("bare"),
			want: `{"apiVersion":"other.io/v2","kind":"Gadget","spec":{},"metadata":{}}`},
		{name: "converter writes null", desired: "other.io/v2", in: g("null"),
			want: `{"apiVersion":"other.io/v2","kind":"Gadget","metadata":null,"metadata":{}}`},
		{name: "converter ends with a newline", desired: "other.io/v2", in: g("newline"),
			want: `{"apiVersion":"other.io/v2","kind":"Gadget","metadata":{}}`},
		{name: "converter writes spaces", desired: "other.io/v2", in: g("spaces"),
			want: `{ "apiVersion":"other.io/v2", "kind":"Gadget" ,"metadata":{}}`},
		{name: "converter drops metadata the original has", desired: "other.io/v2",
			in:   `{"apiVersion":"other.io/v1","kind":"Gadget","metadata":{"name":"a"},"spec":{"out":"dropped"}}`,
			want: `object [0] a (other.io/v1 -> other.io/v2): self-check: the converted object has no metadata`},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			body := reviewBody(APIVersionV1, "u", tc.desired, tc.in)
			fast, slow := serveBoth(t, h, []byte(body))
			if (fast != nil) != tc.fast {
				t.Fatalf("fast path answered: %v, want %v", fast != nil, tc.fast)
			}
			if fast != nil && !bytes.Equal(fast, slow) {
				t.Fatalf("fast path answered\n%s\ngeneral path\n%s", fast, slow)
			}
			status, b := post(t, h, body)
			if status != 200 {
				t.Fatalf("status %d: %s", status, b)
			}
			rr := decodeResponse(t, b)
			if strings.HasPrefix(tc.want, "{") {
				if rr.Response.Result.Status != "Success" || len(rr.Response.ConvertedObjects) != 1 {
					t.Fatalf("want one converted object, got %s", b)
				}
				if got := string(rr.Response.ConvertedObjects[0]); got != tc.want {
					t.Errorf("converted object\n got %s\nwant %s", got, tc.want)
				}
				return
			}
			if rr.Response.Result.Status != "Failure" || !strings.HasPrefix(rr.Response.Result.Message, tc.want) {
				t.Errorf("message\n got %q\nwant it to start with %q", rr.Response.Result.Message, tc.want)
			}
		})
	}
}

var gadgetOut = map[string]string{
	"bare":    `{"apiVersion":"other.io/v2","kind":"Gadget","spec":{}}`,
	"null":    `{"apiVersion":"other.io/v2","kind":"Gadget","metadata":null}`,
	"newline": "{\"apiVersion\":\"other.io/v2\",\"kind\":\"Gadget\"}\n",
	"spaces":  `{ "apiVersion":"other.io/v2", "kind":"Gadget" }`,
	"dropped": `{"apiVersion":"other.io/v2","kind":"Gadget"}`,
}
