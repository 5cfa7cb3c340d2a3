package doctor_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/explain"
	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
)

const (
	podIP   = "10.244.0.5"
	podPort = 8443
	svcHost = "widget-webhook.default.svc"
)

// world is a cluster as the fake clients show it, and the webhook the
// endpoints lead to: hubspoke's real review handler behind real TLS.
type world struct {
	crd       *apiextensionsv1.CustomResourceDefinition
	svc       *corev1.Service
	slice     *discoveryv1.EndpointSlice
	pods      []runtime.Object
	cert      tls.Certificate
	ca        *pki.CA
	down      bool // nothing listens at the endpoint
	plainHTTP bool // the webhook serves HTTP, not HTTPS
	handler   http.Handler
	reactor   k8stesting.ReactionFunc // on the dynamic client
	planned   []byte
	objects   []runtime.Object
	configure func(*doctor.Options)
}

func newWorld(t *testing.T) *world {
	t.Helper()
	data, err := os.ReadFile("../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	ca := testcert.CA(t, "webhook-ca")
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = "default"
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "widget-webhook"
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = ca.CertPEM
	crd.UID, crd.ResourceVersion, crd.Generation = "5c1e7b0a", "41", 1 // as the API server sets them
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}, Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}, {Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue}}}
	conv, err := rules.LoadFile("../examples/widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ready := true
	return &world{
		crd: &crd,
		svc: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", Selector: map[string]string{"app": "widget-webhook"},
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(podPort)}}}},
		slice: &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "widget-webhook-x1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "widget-webhook"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(int32(podPort))}},
		},
		pods: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook-0", Namespace: "default", Labels: map[string]string{"app": "widget-webhook"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: podPort}}}}}}},
		cert:    testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{svcHost}}).TLSCertificate(),
		ca:      ca,
		handler: h,
		objects: []runtime.Object{widget("v1alpha1", "a", map[string]any{"replicas": int64(2)}), widget("v1", "b", map[string]any{"size": int64(3)})},
	}
}

func widget(version, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
}

func (w *world) run(t *testing.T) *doctor.Report {
	t.Helper()
	srv := httptest.NewUnstartedServer(w.handler)
	if w.plainHTTP {
		srv.Start()
	} else {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{w.cert}}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	real := srv.Listener.Addr().String()
	if w.down {
		srv.Close()
	}
	kubeObjs := append([]runtime.Object{}, w.pods...)
	if w.svc != nil {
		kubeObjs = append(kubeObjs, w.svc)
	}
	if w.slice != nil {
		kubeObjs = append(kubeObjs, w.slice)
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "example.com", Version: v, Resource: "widgets"}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr("v1"): "WidgetList", gvr("v1alpha1"): "WidgetList"}, w.objects...)
	if w.reactor != nil {
		dyn.PrependReactor("*", "widgets", w.reactor)
	}
	c := doctor.Clients{Kube: fake.NewClientset(kubeObjs...), Extensions: apiextfake.NewClientset(w.crd), Dynamic: dyn}
	// A URL's host is dialled directly, a pod address through the pod
	// network: each dialer knows only its own addresses.
	only := func(known string) func(ctx context.Context, network, addr string) (net.Conn, error) {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != known {
				return nil, fmt.Errorf("test: %s dialled through the wrong network (this one reaches %s only)", addr, known)
			}
			return (&net.Dialer{}).DialContext(ctx, network, real)
		}
	}
	opts := doctor.Options{Planned: w.planned, ValidateUpdate: validateUpdate, DialTimeout: time.Second,
		Dial:    only("webhook.example.com:8443"),
		PodDial: only(net.JoinHostPort(podIP, fmt.Sprint(podPort)))}
	if w.configure != nil {
		w.configure(&opts)
	}
	r, err := doctor.Run(context.Background(), c, "widgets.example.com", opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Each broken set-up must be diagnosed with the right cause first.
func TestDoctorFirstCause(t *testing.T) {
	rows := []struct {
		name  string
		setup func(t *testing.T, w *world)
		check string   // the first error's check; "" means healthy
		want  []string // substrings of the first error's message, cause or fix
	}{
		{"healthy", func(t *testing.T, w *world) {}, "", nil},
		{"no such CRD", func(t *testing.T, w *world) { w.crd.Name = "gadgets.example.com" }, doctor.CheckCRD, []string{"not found"}},
		{"CRD not established: names conflict", func(t *testing.T, w *world) {
			w.crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "MultipleNamesConflict", Message: `"widgets" is already in use`},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}}
		}, doctor.CheckConditions, []string{"NamesAccepted=False (MultipleNamesConflict", "is already in use"}},
		{"strategy None between two versions", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}, "", nil},
		{"wrong Service name", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "widget-webhok"
		}, doctor.CheckService, []string{"widget-webhok", `"value":"widget-webhook"`}},
		{"wrong port", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.Service.Port = ptr(int32(8443))
		}, doctor.CheckServicePort, []string{"no port 8443", `/clientConfig/service/port","value":443`}},
		{"targetPort not a container port", func(t *testing.T, w *world) {
			w.svc.Spec.Ports[0].TargetPort = intstr.FromString("webhook")
		}, doctor.CheckServicePort, []string{`declares port webhook`, "https/8443"}},
		{"no endpoints: selector matches no pod", func(t *testing.T, w *world) {
			w.slice, w.pods = nil, nil
		}, doctor.CheckEndpoints, []string{"matches no pod", "--show-labels"}},
		{"endpoints not ready", func(t *testing.T, w *world) {
			w.slice.Endpoints[0].Conditions.Ready = ptr(false)
		}, doctor.CheckEndpointsReady, []string{"none of the 1 endpoints is ready", "/readyz"}},
		{"caBundle of another CA", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = testcert.CA(t, "another-ca").CertPEM
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
		}, doctor.CheckCertChain, []string{`issuer "CN=webhook-ca"`, `"CN=another-ca"`, "caBundle"}},
		{"certificate for the pod IP only", func(t *testing.T, w *world) {
			w.cert = testcert.Issue(t, w.ca, pki.CertOptions{IPs: []net.IP{net.ParseIP(podIP)}}).TLSCertificate()
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate is not valid for any names, but wanted to match widget-webhook.default.svc`)
		}, doctor.CheckCertNames, []string{podIP, "DNS SANs " + svcHost}},
		{"expired certificate", func(t *testing.T, w *world) {
			w.cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}).TLSCertificate()
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-02T22:00:00Z is after 2026-12-02T21:00:00Z`)
		}, doctor.CheckCertExpiry, []string{"expired at"}},
		{"certificate not yet valid", func(t *testing.T, w *world) {
			w.cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, NotBefore: time.Now().Add(24 * time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}).TLSCertificate()
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-02T22:00:00Z is before 2026-12-03T22:00:00Z`)
		}, doctor.CheckCertExpiry, []string{"not valid before"}},
		{"webhook down", func(t *testing.T, w *world) {
			w.down = true
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": dial tcp 10.244.0.5:8443: connect: connection refused`)
		}, doctor.CheckReachable, []string{"connection refused", "down"}},
		{"empty caBundle", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
		}, doctor.CheckCABundle, []string{"system roots", "base64"}},
		{"doctor reaches another server than the API server does", func(t *testing.T, w *world) {
			w.cert = testcert.Issue(t, testcert.CA(t, "some-proxy-ca"), pki.CertOptions{DNSNames: []string{"proxy.example"}}).TLSCertificate()
		}, "", nil},
		{"url clientConfig, certificate for other names", func(t *testing.T, w *world) {
			cc := w.crd.Spec.Conversion.Webhook.ClientConfig
			cc.Service, cc.URL = nil, ptr("https://webhook.example.com:8443/convert")
			w.reactor = apiServerFails(`Post "https://webhook.example.com:8443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate is valid for widget-webhook.default.svc, not webhook.example.com`)
		}, doctor.CheckCertNames, []string{"do not include webhook.example.com", "DNS SANs webhook.example.com"}},
		{"endpoint unreachable from here, certificate from --cert-file", func(t *testing.T, w *world) {
			w.configure = func(o *doctor.Options) {
				o.PodDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
					return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("i/o timeout")}
				}
				o.ServingCert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{"localhost"}, NotAfter: time.Now().Add(time.Hour)}).CertPEM
			}
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate is valid for localhost, not widget-webhook.default.svc`)
		}, doctor.CheckCertNames, []string{"(localhost) do not include widget-webhook.default.svc"}},
		{"webhook serves plain HTTP", func(t *testing.T, w *world) {
			w.plainHTTP = true
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": http: server gave HTTP response to HTTPS client`)
		}, doctor.CheckReachable, []string{"TLS handshake failed", "plain HTTP"}},
		{"storedVersions: the planned CRD drops a stored version", func(t *testing.T, w *world) {
			w.crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
			planned := w.crd.DeepCopy()
			planned.Spec.Versions = planned.Spec.Versions[1:]
			w.planned = mustJSON(t, planned)
		}, doctor.CheckStoredVersions, []string{"removes [v1alpha1]", "hubspoke migrate widgets.example.com"}},
		{"the planned CRD changes the scope, which is immutable", func(t *testing.T, w *world) {
			planned := w.crd.DeepCopy()
			planned.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			planned.Spec.Scope = apiextensionsv1.ClusterScoped
			w.planned = mustJSON(t, planned)
		}, doctor.CheckPlanned, []string{`spec.scope: Invalid value: "Cluster": field is immutable`, "must keep its live value"}},
		{"wrong uid in responses (seen through the API server)", func(t *testing.T, w *world) {
			w.reactor = apiError("list", "v1alpha1", `conversion webhook for example.com/v1, Kind=Widget failed: expected response.uid="3b1f", got "0000"`)
		}, doctor.CheckLive, []string{"response.uid", "Set response.uid"}},
		{"one-way webhook (seen through the API server)", func(t *testing.T, w *world) {
			msg := `conversion webhook for example.com/v1, Kind=Widget failed: no conversion from v1 to v1alpha1`
			w.reactor = func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetResource().Version == "v1alpha1" && (a.GetVerb() == "list" || a.GetVerb() == "create") {
					return true, nil, apierrors.NewInternalError(fmt.Errorf("%s", msg))
				}
				return false, nil, nil
			}
		}, doctor.CheckLive, []string{"Conversions to v1alpha1 (from v1) fail while conversions from v1alpha1 succeed", "both directions"}},
		{"conversionReviewVersions without v1, webhook speaks v1 only", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1beta1"}
			w.reactor = apiServerFails(`the server rejected our request for an unknown reason`)
			inner := w.handler
			w.handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				body := new(bytes.Buffer)
				_, _ = body.ReadFrom(r.Body)
				if strings.Contains(body.String(), `"apiextensions.k8s.io/v1beta1"`) {
					http.Error(rw, "only apiextensions.k8s.io/v1 reviews", http.StatusBadRequest)
					return
				}
				r.Body = http.NoBody
				r2 := r.Clone(r.Context())
				r2.Body = readCloser{bytes.NewReader(body.Bytes())}
				inner.ServeHTTP(rw, r2)
			})
		}, doctor.CheckReviewVersions, []string{"lacks v1", `["v1","v1beta1"]`}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t)
			row.setup(t, w)
			r := w.run(t)
			var text bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			cause := r.Cause()
			if row.check == "" {
				if cause != nil {
					t.Fatalf("healthy set-up has errors:\n%s", text.String())
				}
				return
			}
			if cause == nil {
				t.Fatalf("no error found, want %s first:\n%s", row.check, text.String())
			}
			if cause.Check != row.check {
				t.Fatalf("first error %s, want %s:\n%s", cause.Check, row.check, text.String())
			}
			all := cause.Message + "\n" + cause.Cause + "\n" + cause.Fix
			for _, s := range row.want {
				if !strings.Contains(all, s) {
					t.Errorf("first error lacks %q:\n%s", s, text.String())
				}
			}
			t.Logf("\n%s", text.String())
		})
	}
}

// Every check the explanations point to exists in doctor.
func TestExplainChecksExist(t *testing.T) {
	for _, c := range explain.Checks() {
		if !slices.Contains(doctor.Checks, c) {
			t.Errorf("explain refers to check %q, which doctor does not run", c)
		}
	}
}

func TestReportJSON(t *testing.T) {
	w := newWorld(t)
	w.down = true
	w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": dial tcp 10.244.0.5:8443: connect: connection refused`)
	r := w.run(t)
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"cause": {`, `"check": "webhook.reachable"`, `"errors": `, `"id": "connection-refused"`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, b.String())
		}
	}
}

// apiServerFails makes every read and write through v1alpha1 fail as the
// API server fails a conversion whose webhook call failed with reason.
func apiServerFails(reason string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Version == "v1alpha1" {
			return true, nil, apierrors.NewInternalError(fmt.Errorf("conversion webhook for example.com/v1, Kind=Widget failed: %s", reason))
		}
		return false, nil, nil
	}
}

// apiError makes the dynamic client answer verb on version with an
// InternalError holding msg, as the API server does for a failed
// conversion.
func apiError(verb, version, msg string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == verb && a.GetResource().Version == version {
			return true, nil, apierrors.NewInternalError(fmt.Errorf("%s", msg))
		}
		return false, nil, nil
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// A certificate about to expire is a warning: conversions work today.
func TestCertificateExpiringSoon(t *testing.T) {
	w := newWorld(t)
	w.cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, NotAfter: time.Now().Add(10 * 24 * time.Hour)}).TLSCertificate()
	r := w.run(t)
	if c := r.Cause(); c != nil {
		t.Fatalf("error %s: %s", c.Check, c.Message)
	}
	f := r.Find(doctor.CheckCertExpiry)
	if f == nil || f.Severity != doctor.SeverityWarning || !strings.Contains(f.Message, "expires in 10 days") {
		t.Fatalf("expiry finding %+v, want a warning that it expires in about 10 days", f)
	}
}

// A planned CRD the API server would take in place of the live one gets
// crd.planned ok; without -f the check does not run.
func TestPlannedAccepted(t *testing.T) {
	w := newWorld(t)
	planned := w.crd.DeepCopy()
	planned.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	planned.Spec.Versions[0].Served = false
	w.planned = mustJSON(t, planned)
	if f := w.run(t).Find(doctor.CheckPlanned); f == nil || f.Severity != doctor.SeverityOK {
		t.Errorf("crd.planned: %+v, want ok", f)
	}
	w.planned = nil
	if f := newWorld(t).run(t).Find(doctor.CheckPlanned); f != nil {
		t.Errorf("crd.planned without a planned CRD: %+v", f)
	}
}

// validateUpdate is what the hubspoke command gives doctor
// (internal/cli/apivalidation): schema/crdvalidation.Update.
func validateUpdate(crd, live *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, e := range crdvalidation.Update(crd, live) {
		out = append(out, e.Field+": "+e.Message)
	}
	return out
}
