package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hubspoke/hubspoke/sandbox"
)

// handWebhook is a minimal ConversionReview (v1) webhook for the Widget
// example written by hand: v1alpha1 spec.replicas <-> v1 spec.size. It
// proves the sandbox's plumbing (Service, EndpointSlice, pod network, TLS,
// caBundle)
// independently of hubspoke's own server.
type handWebhook struct {
	*httptest.Server
	endpoint *sandbox.Endpoint // of the Service, in the sandbox's pod network
	ca       []byte            // the CA of its serving certificate
	objects  atomic.Int64      // objects converted so far
	notReady atomic.Bool       // /readyz answers 503
}

func startHandWebhook(sb *sandbox.Sandbox, namespace, name string) (*handWebhook, error) {
	cert, err := sandbox.NewServiceCert(namespace, name)
	if err != nil {
		return nil, err
	}
	h, err := newHandWebhook(cert)
	if err != nil {
		return nil, err
	}
	if err := h.register(sb, namespace, name, ""); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// newHandWebhook serves the hand webhook on loopback with cert.
func newHandWebhook(cert *sandbox.ServiceCert) (*handWebhook, error) {
	tlsCert, err := cert.TLSCertificate()
	if err != nil {
		return nil, err
	}
	h := &handWebhook{}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	h.TLS = &tls.Config{Certificates: []tls.Certificate{tlsCert}}
	h.StartTLS()
	h.ca = cert.CA
	return h, nil
}

// register makes the webhook an endpoint of the Service namespace/name,
// probed at readinessPath if not empty.
func (h *handWebhook) register(sb *sandbox.Sandbox, namespace, name, readinessPath string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	h.endpoint, err = sb.AddEndpoint(ctx, sandbox.EndpointOptions{
		Namespace: namespace, Service: name,
		Addr: h.Listener.Addr().String(), CABundle: h.ca, ReadinessPath: readinessPath,
	})
	return err
}

func (h *handWebhook) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/readyz" {
		if h.notReady.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
		return
	}
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		out, err := convertWidget(raw.Raw, review.Request.DesiredAPIVersion)
		if err != nil {
			resp.ConvertedObjects = nil
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	h.objects.Add(int64(len(resp.ConvertedObjects)))
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

func convertWidget(raw []byte, to string) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	from, _ := obj["apiVersion"].(string)
	spec, _ := obj["spec"].(map[string]any)
	move := func(a, b string) {
		if v, ok := spec[a]; ok {
			spec[b] = v
			delete(spec, a)
		}
	}
	switch {
	case from == to:
	case strings.HasSuffix(from, "/v1alpha1") && strings.HasSuffix(to, "/v1"):
		move("replicas", "size")
	case strings.HasSuffix(from, "/v1") && strings.HasSuffix(to, "/v1alpha1"):
		move("size", "replicas")
	default:
		return nil, fmt.Errorf("cannot convert %s to %s", from, to)
	}
	obj["apiVersion"] = to
	return json.Marshal(obj)
}
