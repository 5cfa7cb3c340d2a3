package review_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubspoke/hubspoke/review"
)

// versionSetter is a stand-in for *convert.Converter: it only rewrites the
// apiVersion, which it expects first in the object.
type versionSetter struct{}

func (versionSetter) Group() string      { return "example.com" }
func (versionSetter) Kind() string       { return "Widget" }
func (versionSetter) Versions() []string { return []string{"v1", "v1alpha1"} }
func (versionSetter) Convert(dst, obj []byte, to string) ([]byte, error) {
	_, rest, _ := bytes.Cut(obj, []byte(`",`))
	dst = append(dst, `{"apiVersion":"`+to+`",`...)
	return append(dst, rest...), nil
}

// The handler is a plain http.Handler: mount it in any server (here an
// httptest TLS server), or register it on a controller-runtime webhook
// server with mgr.GetWebhookServer().Register("/convert", h).
func ExampleNewHandler() {
	h, err := review.NewHandler(review.Options{
		Converters: []review.Converter{versionSetter{}}, // e.g. from rules.LoadFile
		Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewTLSServer(h)
	defer srv.Close()

	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{
		"uid":"705ab4f5","desiredAPIVersion":"example.com/v1",
		"objects":[{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"}}]}}`
	resp, err := srv.Client().Post(srv.URL+"/convert", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode)
	fmt.Println(string(out))
	// Output:
	// 200
	// {"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"705ab4f5","convertedObjects":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}],"result":{"status":"Success"}}}
}

var _ http.Handler = (*review.Handler)(nil)
