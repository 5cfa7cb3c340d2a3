package migrate

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/hubspoke/hubspoke/apirules"
)

// Prober sends one object to a CRD's conversion webhook, as the API server
// would, and returns the converted object.
type Prober interface {
	Probe(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, obj []byte, toAPIVersion string) ([]byte, error)
}

// WebhookProber posts ConversionReview (apiextensions.k8s.io/v1) requests
// straight to the webhook: to URL when set (for a service, the address of a
// port-forward or of the service seen from where the CLI runs), else to the
// CRD's clientConfig.url. The CRD's caBundle is trusted.
type WebhookProber struct {
	URL string
	// Timeout of one request (default 10s; the API server waits 30s).
	Timeout time.Duration
	// ServerName is the name the webhook's certificate is checked against
	// (default: URL's host). For a service reached through a port-forward,
	// NAME.NAMESPACE.svc, the name its certificate carries.
	ServerName string
	// InsecureSkipVerify skips the certificate check (for a port-forward
	// whose address is not in the certificate).
	InsecureSkipVerify bool
}

// Probe implements Prober.
func (p *WebhookProber) Probe(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, obj []byte, toAPIVersion string) ([]byte, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, fmt.Errorf("crd %s has no conversion webhook", crd.Name)
	}
	url := p.URL
	if url == "" && conv.Webhook.ClientConfig.URL != nil {
		url = *conv.Webhook.ClientConfig.URL
	}
	if url == "" {
		svc := conv.Webhook.ClientConfig.Service
		return nil, fmt.Errorf("the webhook of crd %s is the service %s/%s, which cannot be reached from here: give its address (e.g. a port-forward) as the webhook URL", crd.Name, svc.Namespace, svc.Name)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: p.ServerName, InsecureSkipVerify: p.InsecureSkipVerify} //nolint:gosec // opt-in for port-forwards
	if ca := conv.Webhook.ClientConfig.CABundle; len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("crd %s: caBundle holds no PEM certificate", crd.Name)
		}
		tlsConfig.RootCAs = pool
		if svc := conv.Webhook.ClientConfig.Service; svc != nil && p.URL != "" {
			// The certificate names the service, not the address we dial.
			tlsConfig.ServerName = svc.Name + "." + svc.Namespace + ".svc"
		}
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()

	uid := uuid.NewUUID()
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: uid, DesiredAPIVersion: toAPIVersion, Objects: []runtime.RawExtension{{Raw: obj}}},
	}
	body, err := json.Marshal(&review)
	if err != nil {
		return nil, fmt.Errorf("probe: encode review: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("probe %s: read answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("probe %s: HTTP %d: %s", url, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return checkReview(data, uid, obj, toAPIVersion)
}

// checkReview applies the checks the API server applies to an answer
// (package apirules): kind and uid of the review, Success, one converted
// object, and that object's rules (apiVersion, kind, name, namespace, uid,
// metadata, labels, annotations, numbers, nesting).
func checkReview(data []byte, uid types.UID, obj []byte, toAPIVersion string) ([]byte, error) {
	objs, err := apirules.Response(apirules.Request{
		APIVersion:        apirules.ReviewV1,
		UID:               string(uid),
		DesiredAPIVersion: toAPIVersion,
		Objects:           [][]byte{obj},
	}, data)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	return objs[0], nil
}
