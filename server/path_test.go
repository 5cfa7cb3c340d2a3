// This test holds a rule to the API server's own code, and checks no
// concurrency: make test runs it once, without the race detector, which
// would otherwise compile the API server's webhook libraries with its
// instrumentation for it alone (see review/apiserver_test.go).

//go:build !race

package server

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookvalidation "k8s.io/apiserver/pkg/util/webhook"
)

// TestCheckConvertPath holds CheckConvertPath to the API server's own
// validation of a webhook Service's path, and to the server's endpoints.
func TestCheckConvertPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want string // in the error; "" for a valid path
	}{
		{path: "/convert"},
		{path: "/"},
		{path: "/a/b.c/d-e"},
		{path: "/convert/"},
		{path: "convert", want: "want an absolute path"},
		{path: "", want: "want an absolute path"},
		{path: "GET /x", want: "want an absolute path"},
		{path: "/healthz", want: "the server's own endpoint"},
		{path: "/readyz", want: "the server's own endpoint"},
		{path: "/metrics", want: "the server's own endpoint"},
		{path: "/Convert", want: `segment "Convert"`},
		{path: "/con vert", want: `segment "con vert"`},
		{path: "/{name}", want: `segment "{name}"`},
		{path: "//", want: "segment 0 is empty"},
		{path: "/a//b", want: "segment 1 is empty"},
		{path: "/x?y=1", want: `segment "x?y=1"`},
		{path: "/" + strings.Repeat("a", 254), want: "must be no more than 253"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := CheckConvertPath(tc.path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
			// The API server's verdict on the path in a CRD agrees,
			// except for the server's own endpoints (valid paths it
			// cannot serve conversions at) and the empty path (which a
			// CRD may leave out).
			if tc.path == "" || strings.Contains(tc.want, "own endpoint") {
				return
			}
			p := tc.path
			apiErrs := webhookvalidation.ValidateWebhookService(field.NewPath("service"), "ns", "name", &p, 443)
			if (len(apiErrs) == 0) != (err == nil) {
				t.Errorf("CheckConvertPath: %v; the API server: %v", err, apiErrs)
			}
		})
	}
}
