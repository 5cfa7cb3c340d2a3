package review

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubspoke/hubspoke/convert"
)

// fakeConverter rewrites the top-level apiVersion of an object and nothing
// else, unless fn is set.
type fakeConverter struct {
	group, kind string
	versions    []string
	fn          func(dst, obj []byte, to string) ([]byte, error)
}

func (f *fakeConverter) Group() string      { return f.group }
func (f *fakeConverter) Kind() string       { return f.kind }
func (f *fakeConverter) Versions() []string { return f.versions }
func (f *fakeConverter) Convert(dst, obj []byte, to string) ([]byte, error) {
	if f.fn != nil {
		return f.fn(dst, obj, to)
	}
	return setAPIVersion(dst, obj, to)
}

var apiVersionRE = regexp.MustCompile(`^\{"apiVersion":"[^"]*"`)

// setAPIVersion handles objects written by the tests: apiVersion first.
func setAPIVersion(dst, obj []byte, to string) ([]byte, error) {
	loc := apiVersionRE.FindIndex(obj)
	if loc == nil {
		return dst, &convert.Error{Index: -1, Err: errors.New("test object must start with apiVersion")}
	}
	if !strings.HasPrefix(to, "example.com/") {
		return dst, &convert.Error{Index: -1, Err: fmt.Errorf("%w %q", convert.ErrUnknownVersion, to)}
	}
	dst = append(dst, `{"apiVersion":`...)
	dst = appendQuoted(dst, to)
	return append(dst, obj[loc[1]:]...), nil
}

func widgets() *fakeConverter {
	return &fakeConverter{group: "example.com", kind: "Widget", versions: []string{"v1", "v1alpha1"}}
}

// widget returns a Widget object in the given version.
func widget(version, name string, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"example.com/%s","kind":"Widget","metadata":{"name":"%s","namespace":"default","uid":"uid-%s"%s},"spec":{"size":3}}`, version, name, name, extra)
}

// reviewBody returns a ConversionReview request; the strings are inserted
// as they are, without JSON escaping.
func reviewBody(apiVersion, uid, desired string, objects ...string) string {
	return fmt.Sprintf(`{"kind":"ConversionReview","apiVersion":"%s","request":{"uid":"%s","desiredAPIVersion":"%s","objects":[%s]},"response":{"uid":"","convertedObjects":null,"result":{"metadata":{}}}}`,
		apiVersion, uid, desired, strings.Join(objects, ","))
}

// reviewResponse mirrors a ConversionReview response.
type reviewResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   *struct {
		UID              string            `json:"uid"`
		ConvertedObjects []json.RawMessage `json:"convertedObjects"`
		Result           struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"result"`
	} `json:"response"`
}

func newTestHandler(t testing.TB, opts Options) (*Handler, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	if opts.Converters == nil {
		opts.Converters = []Converter{widgets()}
	}
	opts.Registerer = reg
	h, err := NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, reg
}

// post sends body through h (no network) and returns status and body.
func post(t testing.TB, h http.Handler, body string) (int, []byte) {
	t.Helper()
	r := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/convert", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

func decodeResponse(t testing.TB, b []byte) reviewResponse {
	t.Helper()
	var rr reviewResponse
	if err := json.Unmarshal(b, &rr); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, b)
	}
	if rr.Response == nil {
		t.Fatalf("response has no response field:\n%s", b)
	}
	return rr
}

// tlsServer serves h over TLS on loopback and returns a client for it.
func tlsServer(t testing.TB, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, srv.Client()
}

func postTLS(t testing.TB, c *http.Client, url, body string) (int, []byte) {
	t.Helper()
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("response not over TLS 1.2+: %+v", resp.TLS)
	}
	return resp.StatusCode, b
}
