package explain_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/hubspoke/hubspoke/explain"
	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/pki"
)

// Each row produces a message by running the code that writes it — the API
// server's conversion webhook client against a real HTTPS handler, its
// service resolver, the CRD validation, Go's TLS — and names the
// explanation that must come first.
func TestExplainRealMessages(t *testing.T) {
	ca := testcert.CA(t, "webhook-ca")
	otherCA := testcert.CA(t, "another-ca")
	svcName := svcDNS
	rows := []struct {
		name    string
		message func(t *testing.T) string
		want    string            // ID of the first explanation
		fields  map[string]string // fields it must carry
	}{
		// --- the webhook's answers (webhook_converter.go) ---
		{"uid mismatch", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { r.Response.UID = "not-the-request-uid" })})
		}, "response-uid-mismatch", map[string]string{"got": "not-the-request-uid"}},
		{"v1beta1 answer to a v1 request", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { r.APIVersion = "apiextensions.k8s.io/v1beta1" })})
		}, "response-other-version", map[string]string{"got": "v1beta1.ConversionReview", "want": "v1.ConversionReview"}},
		{"answer without apiVersion and kind", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { r.APIVersion, r.Kind = "", "" })})
		}, "response-wrong-kind", map[string]string{"got": "/, Kind="}},
		{"no response", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { r.Response = nil })})
		}, "response-missing", nil},
		{"failure without message", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { r.Response.Result = metav1.Status{Status: "Failure"} })})
		}, "result-not-success", map[string]string{"status": "Failure"}},
		{"failure with message (one-way webhook)", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) {
				r.Response.Result = metav1.Status{Status: "Failure", Message: "cannot convert to example.com/v1alpha1"}
			})})
		}, "conversion-webhook-failed", map[string]string{"reason": "cannot convert to example.com/v1alpha1", "gvk": "example.com/v1, Kind=Widget"}},
		{"wrong count", func(t *testing.T) string {
			return convertErr(t, conv{list: true, handler: respond(func(r *review) { r.Response.ConvertedObjects = r.Response.ConvertedObjects[:1] })})
		}, "object-count", map[string]string{"got": "1", "want": "2"}},
		{"wrong apiVersion, one object", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { setAll(r, "apiVersion", "example.com/v2") })})
		}, "object-wrong-version", map[string]string{"want": "example.com/v1alpha1", "got": "example.com/v2", "index": "0"}},
		{"wrong apiVersion, list", func(t *testing.T) string {
			return convertErr(t, conv{list: true, handler: respond(func(r *review) { setAll(r, "apiVersion", "example.com/v2") })})
		}, "object-wrong-version", map[string]string{"want": "example.com/v1alpha1", "got": "example.com/v2"}},
		{"wrong kind", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { setAll(r, "kind", "Gadget") })})
		}, "object-wrong-kind", map[string]string{"want": "Widget", "got": "Gadget"}},
		{"wrong kind, list", func(t *testing.T) string {
			return convertErr(t, conv{list: true, handler: respond(func(r *review) { setAll(r, "kind", "Gadget") })})
		}, "object-wrong-kind", map[string]string{"want": "Widget", "got": "Gadget"}},
		{"name changed", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { setMeta(r, "name", "renamed") })})
		}, "object-changed-name", map[string]string{"want": "w0", "got": "renamed"}},
		{"objects reordered", func(t *testing.T) string {
			return convertErr(t, conv{list: true, handler: respond(func(r *review) {
				o := r.Response.ConvertedObjects
				o[0], o[1] = o[1], o[0]
			})})
		}, "object-changed-name", map[string]string{"want": "w0", "got": "w1"}},
		{"namespace changed", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { setMeta(r, "namespace", "other") })})
		}, "object-changed-namespace", map[string]string{"want": "default", "got": "other"}},
		{"uid changed", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { setMeta(r, "uid", "fresh-uid") })})
		}, "object-changed-uid", map[string]string{"got": "fresh-uid"}},
		{"invalid labels", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(func(r *review) { setMeta(r, "labels", map[string]any{"n": 1}) })})
		}, "object-invalid-metadata", nil},
		{"invalid labels, list", func(t *testing.T) string {
			return convertErr(t, conv{list: true, handler: respond(func(r *review) { setMeta(r, "labels", map[string]any{"n": 1}) })})
		}, "object-invalid-metadata", map[string]string{"index": "0"}},
		{"HTTP 400: a review version the webhook does not read", func(t *testing.T) string {
			return convertErr(t, conv{reviewVersions: []string{"v1beta1"}, handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "this webhook reads apiextensions.k8s.io/v1 ConversionReviews only", http.StatusBadRequest)
			})})
		}, "webhook-bad-request", map[string]string{"gvk": "example.com/v1, Kind=Widget"}},
		{"HTTP 500", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "panic: runtime error", http.StatusInternalServerError)
			})})
		}, "webhook-server-error", map[string]string{"body": "panic: runtime error"}},
		{"HTTP 503", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			})})
		}, "webhook-unavailable", nil},
		{"HTTP 504", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "upstream request timeout", http.StatusGatewayTimeout)
			})})
		}, "webhook-gateway-timeout", nil},
		{"HTTP 401", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
			})})
		}, "webhook-http-status", nil},
		{"an empty answer", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
			})})
		}, "empty-response", map[string]string{"code": "200"}},
		{"an HTML page", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, "<html><body>It works!</body></html>")
			})})
		}, "response-not-review", nil},
		{"wrong path: 404", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.NotFoundHandler()})
		}, "webhook-path-not-found", nil},
		{"no review version the server speaks", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), reviewVersions: []string{"v2"}})
		}, "no-review-version", nil},
		{"unknown strategy", func(t *testing.T) string {
			f, err := conversion.NewCRConverterFactory(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			crd := widgetCRD()
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: "Magic"}
			_, _, err = f.NewConverter(crd)
			return errString(t, err)
		}, "unknown-strategy", map[string]string{"strategy": "Magic"}},

		// --- reaching the webhook through a Service (proxy.ResolveEndpoint) ---
		{"service not found", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhok", cluster: &cluster{}})
		}, "service-not-found", map[string]string{"service": "widget-webhok"}},
		{"no such service port", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{servicePort: 8443}})
		}, "service-port-not-found", map[string]string{"port": "443", "service": "widget-webhook"}},
		{"no endpoints", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{noSlice: true}})
		}, "no-endpoints", map[string]string{"service": "widget-webhook"}},
		{"endpoints not ready", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{notReady: true}})
		}, "no-endpoints", map[string]string{"service": "widget-webhook"}},
		{"ExternalName service", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{externalName: true}})
		}, "unsupported-service-type", map[string]string{"type": "ExternalName"}},
		{"headless service", func(t *testing.T) string {
			client := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook", Namespace: "default"},
				Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Type: corev1.ServiceTypeClusterIP}})
			svcs := informers.NewSharedInformerFactory(client, 0).Core().V1().Services()
			if err := svcs.Informer().GetIndexer().Add(mustGet(t, client)); err != nil {
				t.Fatal(err)
			}
			_, err := proxy.ResolveCluster(svcs.Lister(), "default", "widget-webhook", 443)
			return errString(t, err)
		}, "headless-service", nil},
		{"failed calling webhook", func(t *testing.T) string {
			return (&webhook.ErrCallingWebhook{WebhookName: "conversion_webhook_for_widgets.example.com", Reason: errors.New("webhook configuration must have either service or URL")}).Error()
		}, "webhook-no-service-or-url", nil},
		{"failed calling webhook, alone", func(t *testing.T) string {
			_, perr := url.Parse("https://exa mple.com/convert")
			return (&webhook.ErrCallingWebhook{WebhookName: "conversion_webhook_for_widgets.example.com", Reason: fmt.Errorf("Unparsable URL: %v", perr)}).Error()
		}, "failed-calling-webhook", map[string]string{"webhook": "conversion_webhook_for_widgets.example.com"}},

		// --- TLS (crypto/x509 through the API server's client) ---
		{"caBundle of another CA", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{},
				cert: leaf(t, ca, svcName), caBundle: otherCA.CertPEM})
		}, "x509-unknown-authority", nil},
		{"certificate for the pod IP only", func(t *testing.T) string {
			c := testcert.Issue(t, ca, pki.CertOptions{IPs: []net.IP{net.ParseIP("10.244.1.7")}}).TLSCertificate()
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{}, cert: c, caBundle: ca.CertPEM})
		}, "x509-no-matching-san", map[string]string{"host": svcName}},
		{"certificate for another service", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{},
				cert: leaf(t, ca, "old-webhook.default.svc"), caBundle: ca.CertPEM})
		}, "x509-wrong-name", map[string]string{"valid": "old-webhook.default.svc", "host": svcName}},
		{"certificate with no SAN matching, many names", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{},
				cert: leaf(t, ca, manyNames(100)...), caBundle: ca.CertPEM})
		}, "x509-no-matching-san", map[string]string{"host": svcName}},
		{"url with an IP, certificate without IP SANs", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), cert: leaf(t, ca, "localhost"), caBundle: ca.CertPEM, host: "127.0.0.1"})
		}, "x509-no-ip-sans", map[string]string{"host": "127.0.0.1"}},
		{"legacy common name", func(t *testing.T) string {
			c := testcert.Issue(t, ca, pki.CertOptions{CommonName: svcDNS, CommonNameOnly: true}).TLSCertificate()
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{}, cert: c, caBundle: ca.CertPEM})
		}, "x509-legacy-common-name", nil},
		{"expired certificate", func(t *testing.T) string {
			c := testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{svcName}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)}).TLSCertificate()
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{}, cert: c, caBundle: ca.CertPEM})
		}, "x509-expired", nil},
		{"client certificate required", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{},
				cert: leaf(t, ca, svcName), caBundle: ca.CertPEM, requireClientCert: true})
		}, "tls-client-cert-required", map[string]string{"alert": "certificate required"}},
		{"CA generated again with the same name", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{},
				cert: leaf(t, ca, svcName), caBundle: testcert.CA(t, "webhook-ca").CertPEM})
		}, "x509-candidate-authority", map[string]string{"ca": "webhook-ca"}},
		{"certificate for clients only", func(t *testing.T) string {
			c := testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{svcName}, Usage: pki.ClientAuth}).TLSCertificate()
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{}, cert: c, caBundle: ca.CertPEM})
		}, "x509-incompatible-usage", nil},
		{"issued by a certificate that is no CA", func(t *testing.T) string {
			notCA := testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{"not-a-ca.example"}})
			c := testcert.Issue(t, &pki.CA{KeyPair: *notCA}, pki.CertOptions{DNSNames: []string{svcName}}).TLSCertificate()
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{}, cert: c, caBundle: notCA.CertPEM})
		}, "x509-not-a-ca", nil},
		{"handshake that hangs", func(t *testing.T) string {
			ln := hangingListener(t)
			tr := &http.Transport{TLSHandshakeTimeout: 50 * time.Millisecond}
			defer tr.CloseIdleConnections()
			_, err := (&http.Client{Transport: tr}).Post("https://"+ln+"/convert", "application/json", nil)
			return errString(t, err)
		}, "tls-handshake-timeout", nil},
		{"no TLS version in common", func(t *testing.T) string {
			srv := httptest.NewUnstartedServer(respond(nil))
			srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
			srv.StartTLS()
			defer srv.Close()
			_, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
			return errString(t, err)
		}, "tls-alert", map[string]string{"alert": "protocol version not supported"}},

		// --- the webhook's own log: the same failures seen from its side ---
		{"webhook log: the API server refused the certificate", func(t *testing.T) string {
			return serverLog(t, func(addr string) {
				pool := x509.NewCertPool()
				pool.AddCert(otherCA.Cert)
				if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "localhost", RootCAs: pool}); err == nil {
					c.Close()
				}
			})
		}, "webhook-log-bad-certificate", map[string]string{"alert": "bad certificate"}},
		{"webhook log: plain HTTP to the TLS port", func(t *testing.T) string {
			return serverLog(t, func(addr string) {
				if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
					resp.Body.Close()
				}
			})
		}, "webhook-log-not-tls", nil},
		{"webhook log: a TCP probe", func(t *testing.T) string {
			return serverLog(t, func(addr string) {
				if c, err := net.Dial("tcp", addr); err == nil {
					c.Close()
				}
			})
		}, "webhook-log-eof", map[string]string{"reason": "EOF"}},
		{"webhook log: a client without certificate", func(t *testing.T) string {
			return serverLog(t, func(addr string) {
				// The server asks for a certificate, the client has none.
				if c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}); err == nil {
					c.Read(make([]byte, 1))
					c.Close()
				}
			}, func(c *tls.Config) { c.ClientAuth = tls.RequireAnyClientCert })
		}, "webhook-log-no-client-cert", nil},
		{"plain HTTP", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), plainHTTP: true})
		}, "plain-http", nil},

		// --- the network ---
		{"connection closed without an answer", func(t *testing.T) string {
			return convertErr(t, conv{handler: hijack(func(c net.Conn, _ *bufio.ReadWriter) { c.Close() })})
		}, "eof", nil},
		{"answer cut off", func(t *testing.T) string {
			return convertErr(t, conv{handler: hijack(func(c net.Conn, rw *bufio.ReadWriter) {
				rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\":")
				rw.Flush()
				c.Close()
			})})
		}, "unexpected-eof", nil},
		{"connection reset", func(t *testing.T) string {
			return convertErr(t, conv{handler: hijack(func(c net.Conn, rw *bufio.ReadWriter) {
				// Read the whole request, then reset: the API server is
				// waiting for the answer.
				c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				io.Copy(io.Discard, rw)
				if tc, ok := c.(*tls.Conn); ok {
					if raw, ok := tc.NetConn().(*net.TCPConn); ok {
						raw.SetLinger(0)
						raw.Close() // no close_notify: a reset
						return
					}
				}
				c.Close()
			})})
		}, "connection-reset", nil},
		{"a reply that is no HTTP", func(t *testing.T) string {
			return convertErr(t, conv{handler: hijack(func(c net.Conn, rw *bufio.ReadWriter) {
				rw.WriteString("garbage\r\n\r\n")
				rw.Flush()
				c.Close()
			})})
		}, "webhook-call-failed", nil},
		{"webhook down", func(t *testing.T) string {
			return convertErr(t, conv{handler: respond(nil), service: "widget-webhook", cluster: &cluster{}, closed: true})
		}, "connection-refused", nil},
		{"webhook hangs", func(t *testing.T) string {
			return convertErr(t, conv{handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
				}
			}), timeout: 100 * time.Millisecond})
		}, "deadline-exceeded", nil},
		{"webhook down behind an egress proxy (konnectivity)", func(t *testing.T) string {
			return egressDialErr(t, "10.244.0.3:9443")
		}, "egress-proxy-dial-failed", map[string]string{"addr": "10.244.0.3:9443", "code": "502"}},
		{"dial timeout", func(t *testing.T) string {
			_, err := net.DialTimeout("tcp", "192.0.2.1:443", time.Nanosecond)
			return errString(t, err)
		}, "dial-timeout", map[string]string{"addr": "192.0.2.1:443"}},
		{"no route to the pod", func(t *testing.T) string {
			err := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("10.244.3.7"), Port: 9443}, Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
			return `Post "https://widget-webhook.default.svc:443/convert?timeout=30s": ` + err.Error()
		}, "no-route-to-host", map[string]string{"addr": "10.244.3.7:9443", "reason": "no route to host"}},
		{"a read that times out", func(t *testing.T) string {
			c, err := net.Dial("tcp", hangingListener(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			_, err = c.Read(make([]byte, 1))
			return errString(t, err)
		}, "io-timeout", map[string]string{"op": "read"}},
		{"no answer headers in time", func(t *testing.T) string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(2 * time.Second):
				}
			}))
			defer srv.Close()
			tr := &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}
			defer tr.CloseIdleConnections()
			_, err := (&http.Client{Transport: tr}).Post(srv.URL+"/convert", "application/json", nil)
			return errString(t, err)
		}, "response-header-timeout", nil},
		{"no such host", func(t *testing.T) string {
			err := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "widget-webhook.default.svc", Server: "10.96.0.10:53", IsNotFound: true}}
			return `Post "https://widget-webhook.default.svc:443/convert?timeout=30s": ` + err.Error()
		}, "no-such-host", map[string]string{"host": "widget-webhook.default.svc"}},

		// --- the CRD (validation.go) ---
		{"storedVersions holds a removed version", func(t *testing.T) string {
			errs := validation.ValidateCustomResourceDefinitionStoredVersions([]string{"v1alpha1", "v1"},
				[]apiextensions.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}, field.NewPath("status").Child("storedVersions"))
			return invalid(errs)
		}, "stored-version-removed", map[string]string{"version": "v1alpha1", "index": "0"}},
		{"storedVersions lacks the storage version", func(t *testing.T) string {
			errs := validation.ValidateCustomResourceDefinitionStoredVersions([]string{"v1alpha1"},
				[]apiextensions.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true}, {Name: "v1", Served: true, Storage: true}}, field.NewPath("status").Child("storedVersions"))
			return invalid(errs)
		}, "stored-versions-lack-storage", map[string]string{"version": "v1"}},
		{"storedVersions empty", func(t *testing.T) string {
			errs := validation.ValidateCustomResourceDefinitionStoredVersions(nil,
				[]apiextensions.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}, field.NewPath("status").Child("storedVersions"))
			return invalid(errs)
		}, "no-stored-version", nil},
		{"caBundle that is not PEM", func(t *testing.T) string {
			return invalid(webhook.ValidateCABundle(field.NewPath("spec", "conversion", "webhook", "clientConfig", "caBundle"), []byte("not a certificate")))
		}, "invalid-cabundle", nil},
		{"two storage versions", func(t *testing.T) string {
			return validateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Storage = true
				c.Status.StoredVersions = []string{"v1alpha1", "v1"}
			})
		}, "storage-version-count", nil},
		{"conversionReviewVersions unrecognized", func(t *testing.T) string {
			return validateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v2"}
			})
		}, "review-versions-unrecognized", map[string]string{"accepted": "v1, v1beta1"}},
		{"conversionReviewVersions missing", func(t *testing.T) string {
			return validateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion.Webhook.ConversionReviewVersions = nil
			})
		}, "review-versions-required", nil},
		{"neither service nor url", func(t *testing.T) string {
			return validateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{}
			})
		}, "webhook-no-service-or-url", nil},

		// --- reading stored objects (k8s.io/apiserver/pkg/storage) ---
		{"stored object the API server cannot decode", func(t *testing.T) string {
			return storage.NewCorruptObjError("/registry/example.com/widgets/default/w0", errors.New("identity transformer tried to read encrypted data")).Error()
		}, "storage-corrupt-object", map[string]string{"key": "/registry/example.com/widgets/default/w0"}},
		{"list whose conversion failed (kube-apiserver 1.37)", func(t *testing.T) string {
			inner := convertErr(t, conv{handler: respond(func(r *review) { r.Response.UID = "0000" })})
			return storage.NewCorruptObjError("/registry/example.com/widgets/default/w0", errors.New(inner)).Error()
		}, "response-uid-mismatch", nil},

		// --- reading a version the API server does not serve ---
		{"version not served", func(t *testing.T) string {
			return apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", "", 0, false).Error()
		}, "resource-not-found", nil},
		{"an aggregated API down", func(t *testing.T) string {
			return (&discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: apierrors.NewServiceUnavailable("the server is currently unable to handle the request")}}).Error()
		}, "discovery-unavailable", map[string]string{"groups": "metrics.k8s.io/v1beta1: the server is currently unable to handle the request"}},
		{"no kind match", func(t *testing.T) string {
			return (&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, SearchedVersions: []string{"v1beta2"}}).Error()
		}, "no-kind-match", map[string]string{"kind": "Widget", "version": "example.com/v1beta2"}},
	}
	seen := map[string]bool{}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			msg := row.message(t)
			got := explain.Explain(msg)
			if len(got) == 0 {
				t.Fatalf("nothing recognised in %q", msg)
			}
			if !slices.Contains(strings.Split(row.want, "|"), got[0].ID) {
				t.Fatalf("first explanation %s, want %s; message: %q", ids(got), row.want, msg)
			}
			for k, v := range row.fields {
				if got[0].Fields[k] != v {
					t.Errorf("field %s = %q, want %q; message: %q", k, got[0].Fields[k], v, msg)
				}
			}
			if got[0].Class == "" {
				t.Errorf("%s has no class", got[0].ID)
			}
			if strings.Contains(got[0].Cause, "${") || got[0].Cause == "" {
				t.Errorf("cause not expanded: %q", got[0].Cause)
			}
			t.Logf("%s\n  -> %s", msg, got[0].Cause)
		})
		for _, id := range strings.Split(row.want, "|") {
			seen[id] = true
		}
	}
	// Kinds no code here writes any more (older Go and Kubernetes
	// releases, other projects, kubectl) are held by real messages of the
	// corpus.
	for _, e := range loadCorpus(t) {
		for _, id := range strings.Split(e.Want, "|") {
			seen[id] = true
		}
	}
	for _, id := range explain.IDs() {
		if !seen[id] {
			t.Errorf("explanation %s is not produced by any real message", id)
		}
	}
}

// --- the API server's conversion webhook client, run for real ---

const svcDNS = "widget-webhook.default.svc"

// conv describes one conversion through the API server's webhook client.
type conv struct {
	handler           http.Handler
	list              bool
	reviewVersions    []string
	service           string   // clientConfig.service.name; "" uses a URL
	cluster           *cluster // Services and EndpointSlices for the resolver
	host              string   // URL host instead of localhost
	cert              tls.Certificate
	caBundle          []byte
	requireClientCert bool
	plainHTTP         bool
	closed            bool // the webhook is down
	timeout           time.Duration
}

// cluster is what the service resolver sees.
type cluster struct {
	servicePort  int32
	noSlice      bool
	notReady     bool
	externalName bool
}

func convertErr(t *testing.T, c conv) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(c.handler)
	if c.plainHTTP {
		srv.Start()
	} else {
		if c.cert.Certificate == nil {
			ca := testcert.CA(t, "default-ca")
			c.cert, c.caBundle = leaf(t, ca, "localhost"), ca.CertPEM
		}
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{c.cert}}
		if c.requireClientCert {
			srv.TLS.ClientAuth = tls.RequireAnyClientCert
		}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().(*net.TCPAddr)
	if c.closed {
		srv.Close()
	}

	crd := widgetCRD()
	wh := crd.Spec.Conversion.Webhook
	wh.ClientConfig.CABundle = c.caBundle
	if c.reviewVersions != nil {
		wh.ConversionReviewVersions = c.reviewVersions
	}
	var resolver webhook.ServiceResolver
	if c.service != "" {
		port := int32(443)
		wh.ClientConfig.Service = &apiextensionsv1.ServiceReference{Namespace: "default", Name: c.service, Port: &port, Path: ptr("/convert")}
		resolver = c.cluster.resolver(t, addr.Port)
	} else {
		host := c.host
		if host == "" {
			host = "localhost"
		}
		u := "https://" + net.JoinHostPort(host, strconv.Itoa(addr.Port)) + "/convert"
		wh.ClientConfig.URL = &u
	}
	var wrap webhook.AuthenticationInfoResolverWrapper
	if c.timeout > 0 {
		wrap = func(r webhook.AuthenticationInfoResolver) webhook.AuthenticationInfoResolver {
			return timeoutResolver{r, c.timeout}
		}
	}
	f, err := conversion.NewCRConverterFactory(resolver, wrap)
	if err != nil {
		t.Fatal(err)
	}
	_, unsafe, err := f.NewConverter(crd)
	if err != nil {
		t.Fatal(err)
	}
	var in runtime.Object = widget(0)
	if c.list {
		in = &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList"},
			Items: []unstructured.Unstructured{*widget(0), *widget(1)}}
	}
	_, err = unsafe.ConvertToVersion(in, schema.GroupVersion{Group: "example.com", Version: "v1alpha1"})
	return errString(t, err)
}

func (c *cluster) resolver(t *testing.T, port int) webhook.ServiceResolver {
	svcPort := c.servicePort
	if svcPort == 0 {
		svcPort = 443
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20",
			Ports: []corev1.ServicePort{{Name: "https", Port: svcPort}}}}
	if c.externalName {
		svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "webhook.example.com"}
	}
	ready := !c.notReady
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "widget-webhook-abc", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "widget-webhook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(int32(port))}},
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	svcs := factory.Core().V1().Services()
	slices := factory.Discovery().V1().EndpointSlices()
	if err := svcs.Informer().GetIndexer().Add(svc); err != nil {
		t.Fatal(err)
	}
	if !c.noSlice {
		if err := slices.Informer().GetIndexer().Add(slice); err != nil {
			t.Fatal(err)
		}
	}
	getter, err := proxy.NewEndpointSliceListerGetter(slices.Lister())
	if err != nil {
		t.Fatal(err)
	}
	return resolverFunc(func(namespace, name string, port int32) (*url.URL, error) {
		return proxy.ResolveEndpoint(svcs.Lister(), getter, namespace, name, port)
	})
}

type resolverFunc func(namespace, name string, port int32) (*url.URL, error)

func (f resolverFunc) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return f(namespace, name, port)
}

// timeoutResolver shortens the API server's 30 s webhook timeout.
type timeoutResolver struct {
	webhook.AuthenticationInfoResolver
	timeout time.Duration
}

func (r timeoutResolver) ClientConfigFor(hostPort string) (*rest.Config, error) {
	c, err := r.AuthenticationInfoResolver.ClientConfigFor(hostPort)
	if c != nil {
		c.Timeout = r.timeout
	}
	return c, err
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	schemaProps := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Schema: schemaProps},
				{Name: "v1", Served: true, Storage: true, Schema: schemaProps},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{}, ConversionReviewVersions: []string{"v1", "v1beta1"}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}},
	}
}

func widget(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": fmt.Sprintf("w%d", i), "namespace": "default", "uid": fmt.Sprintf("uid-%d", i)},
		"spec":     map[string]any{"size": int64(i)},
	}}
}

// review is a v1 ConversionReview as a webhook writes it.
type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID               string           `json:"uid"`
		DesiredAPIVersion string           `json:"desiredAPIVersion"`
		Objects           []map[string]any `json:"objects"`
	} `json:"request,omitempty"`
	Response *struct {
		UID              string           `json:"uid"`
		ConvertedObjects []map[string]any `json:"convertedObjects"`
		Result           metav1.Status    `json:"result"`
	} `json:"response,omitempty"`
}

// respond is a correct webhook (it sets apiVersion to the desired one),
// then applies breakage to its response.
func respond(breakage func(*review)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var rv review
		if err := json.Unmarshal(body, &rv); err != nil || rv.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		out := review{APIVersion: rv.APIVersion, Kind: rv.Kind}
		out.Response = &struct {
			UID              string           `json:"uid"`
			ConvertedObjects []map[string]any `json:"convertedObjects"`
			Result           metav1.Status    `json:"result"`
		}{UID: rv.Request.UID, Result: metav1.Status{Status: "Success"}}
		for _, o := range rv.Request.Objects {
			o["apiVersion"] = rv.Request.DesiredAPIVersion
			out.Response.ConvertedObjects = append(out.Response.ConvertedObjects, o)
		}
		if breakage != nil {
			breakage(&out)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

func setAll(r *review, key string, v any) {
	for _, o := range r.Response.ConvertedObjects {
		o[key] = v
	}
}

func setMeta(r *review, key string, v any) {
	for _, o := range r.Response.ConvertedObjects {
		o["metadata"].(map[string]any)[key] = v
	}
}

// --- validation ---

func invalid(errs field.ErrorList) string {
	return apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "widgets.example.com", errs).Error()
}

func validateCRD(t *testing.T, mutate func(*apiextensionsv1.CustomResourceDefinition)) string {
	t.Helper()
	crd := widgetCRD()
	u := "https://webhook.example.com/convert"
	crd.Spec.Conversion.Webhook.ClientConfig.URL = &u
	mutate(crd)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal)
	if len(errs) == 0 {
		t.Fatal("the CRD is valid")
	}
	return invalid(errs)
}

// --- certificates ---

// leaf is a serving certificate for names that ca signed.
func leaf(t *testing.T, ca *pki.CA, names ...string) tls.Certificate {
	t.Helper()
	return testcert.Issue(t, ca, pki.CertOptions{DNSNames: names}).TLSCertificate()
}

// --- helpers ---

// hijack answers a request by taking over its connection.
func hijack(f func(net.Conn, *bufio.ReadWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f(c, rw)
	})
}

// hangingListener accepts connections and never answers on them.
func hangingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().String()
}

// serverLog runs client against a webhook's HTTPS server and returns
// what the server logged: the webhook's side of the connection.
func serverLog(t *testing.T, client func(addr string), configure ...func(*tls.Config)) string {
	t.Helper()
	var buf syncBuffer
	srv := httptest.NewUnstartedServer(respond(nil))
	srv.Config.ErrorLog = log.New(&buf, "", log.LstdFlags)
	srv.TLS = &tls.Config{}
	for _, f := range configure {
		f(srv.TLS)
	}
	srv.StartTLS()
	client(srv.Listener.Addr().String())
	deadline := time.Now().Add(5 * time.Second)
	for buf.String() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	srv.Close()
	if buf.String() == "" {
		t.Fatal("the server logged nothing")
	}
	return buf.String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func errString(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	return err.Error()
}

func mustGet(t *testing.T, c *fake.Clientset) *corev1.Service {
	s, err := c.CoreV1().Services("default").Get(context.Background(), "widget-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ids(xs []explain.Explanation) string {
	var s []string
	for _, x := range xs {
		s = append(s, x.ID)
	}
	return strings.Join(s, ",")
}

func manyNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d.example", i)
	}
	return names
}

func ptr[T any](v T) *T { return &v }

// A wrapper around a recognised error is context: its stand-alone reading
// (a corrupt object, a webhook's own refusal) would mislead.
func TestWrappersBecomeContext(t *testing.T) {
	inner := convertErr(t, conv{handler: respond(func(r *review) { r.Response.UID = "0000" })})
	msg := storage.NewCorruptObjError("/registry/example.com/widgets/default/w0", errors.New(inner)).Error()
	xs := explain.Explain(msg)
	if got := ids(xs); got != "response-uid-mismatch,conversion-webhook-failed,storage-corrupt-object" {
		t.Fatalf("explanations %s", got)
	}
	for _, x := range xs[1:] {
		if !strings.Contains(x.Cause, "inside") || len(x.Fixes) != 0 {
			t.Errorf("%s: cause %q, fixes %q; want the wrapped reading", x.ID, x.Cause, x.Fixes)
		}
	}
	alone := explain.Explain(storage.NewCorruptObjError("/k", errors.New("bad data")).Error())
	if len(alone) != 1 || strings.Contains(alone[0].Cause, "inside") {
		t.Errorf("a corrupt object alone: %+v", alone)
	}
}

// egressDialErr dials addr through the API server's egress selector, with
// an HTTP CONNECT proxy on a Unix socket that cannot reach it.
func egressDialErr(t *testing.T, addr string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				fmt.Fprintf(c, "HTTP/1.1 502 dial tcp %s\r\nContent-Length: 0\r\n\r\n", req.Host)
			}
			c.Close()
		}
	}()
	sel, err := egressselector.NewEgressSelector(&apiserverconfig.EgressSelectorConfiguration{EgressSelections: []apiserverconfig.EgressSelection{{
		Name: "cluster", Connection: apiserverconfig.Connection{ProxyProtocol: apiserverconfig.ProtocolHTTPConnect,
			Transport: &apiserverconfig.Transport{UDS: &apiserverconfig.UDSTransport{UDSName: sock}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	dial, err := sel.Lookup(egressselector.Cluster.AsNetworkContext())
	if err != nil {
		t.Fatal(err)
	}
	_, err = dial(context.Background(), "tcp", addr)
	return errString(t, err)
}

func TestCRDName(t *testing.T) {
	inner := convertErr(t, conv{handler: respond(func(r *review) { r.Response.UID = "0000" })})
	for _, row := range []struct{ name, msg, want string }{
		{"invalid CRD", validateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = true }), "widgets.example.com"},
		{"stored object", storage.NewCorruptObjError("/registry/example.com/widgets/default/w0", errors.New(inner)).Error(), "widgets.example.com"},
		{"webhook client", (&webhook.ErrCallingWebhook{WebhookName: "conversion_webhook_for_widgets.example.com", Reason: errors.New("x")}).Error(), "widgets.example.com"},
		{"stored object, as a GET reports it", "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /svc-a.doctor.example.com/widgets/e2e/w0, ResourceVersion: 0", "widgets.svc-a.doctor.example.com"},
		{"watch cache", `E0223 16:48:25.964072       1 cacher.go:478] cacher (clusterprofiles.config.projectsveltos.io): unexpected ListAndWatch error`, "clusterprofiles.config.projectsveltos.io"},
		{"JSON log", `{"error":"CustomResourceDefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" is invalid"}`, "crontabs.stable.example.com"},
		{"wrapped", "CustomResourceDefinition.apiextensions.k8s.io \"kongclusterplugins.configu\nration.konghq.com\" is invalid", "kongclusterplugins.configuration.konghq.com"},
		{"nothing", inner, ""},
	} {
		if got := explain.CRDName(row.msg); got != row.want {
			t.Errorf("%s: CRDName = %q, want %q (%s)", row.name, got, row.want, row.msg)
		}
	}
}

// Messages in the forms users paste them: each form is undone before the
// message is read, and the values taken from it are clean.
func TestPastedForms(t *testing.T) {
	const inner = `conversion webhook for example.com/v1, Kind=Widget failed: Post "https://widget-webhook.default.svc:443/convert?timeout=30s": x509: certificate is valid for old-webhook.default.svc, not widget-webhook.default.svc`
	escaped, _ := json.Marshal(map[string]string{"error": inner})
	twice, _ := json.Marshal(map[string]string{"msg": string(escaped)})
	for _, row := range []struct{ name, msg, want, field, value string }{
		{"as kubectl prints it", "Error from server (InternalError): Internal error occurred: " + inner, "x509-wrong-name", "host", "widget-webhook.default.svc"},
		{"JSON-escaped in a log line", string(escaped), "x509-wrong-name", "host", "widget-webhook.default.svc"},
		{"JSON-escaped twice", string(twice), "x509-wrong-name", "host", "widget-webhook.default.svc"},
		{"wrapped at a space, indented", strings.Replace(inner, " not ", "\n        not ", 1), "x509-wrong-name", "host", "widget-webhook.default.svc"},
		{"wrapped in the middle of a word", "x509: certificate signed by unkno\nwn authority", "x509-unknown-authority", "", ""},
		{"wrapped in a word of a value", "no endpoints available for service \"widget-web\nhook\"", "no-endpoints", "service", "widget-webhook"},
		{"in Markdown", "**" + inner + "**", "x509-wrong-name", "host", "widget-webhook.default.svc"},
		{"with a trailing semicolon", `service "widget-webhook" not found; reinitializing...`, "service-not-found", "service", "widget-webhook"},
	} {
		t.Run(row.name, func(t *testing.T) {
			xs := explain.Explain(row.msg)
			if len(xs) == 0 || xs[0].ID != row.want {
				t.Fatalf("explanations %s, want %s first: %q", ids(xs), row.want, row.msg)
			}
			if row.field != "" && xs[0].Fields[row.field] != row.value {
				t.Errorf("%s = %q, want %q", row.field, xs[0].Fields[row.field], row.value)
			}
		})
	}
}
