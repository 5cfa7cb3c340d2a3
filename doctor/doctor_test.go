package doctor_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
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
	hschema "github.com/hubspoke/hubspoke/schema"
	"github.com/hubspoke/hubspoke/schema/crdvalidation"
)

const (
	podPort = 8443
	svcHost = "widget-webhook.default.svc"
)

// podIP is the address of replica i.
func podIP(i int) string { return fmt.Sprintf("10.244.0.%d", 5+i) }

// replica is one webhook pod behind the Service: hubspoke's real review
// handler behind real TLS unless a row breaks it.
type replica struct {
	cert              tls.Certificate
	handler           http.Handler
	down              bool // nothing listens
	plainHTTP         bool // HTTP, not HTTPS
	hang              bool // accepts connections, never answers
	requireClientCert bool
	notReady          bool
}

// world is a cluster as the fake clients show it, and the webhook pods
// the endpoints lead to.
type world struct {
	crd       *apiextensionsv1.CustomResourceDefinition
	svc       *corev1.Service
	noSlice   bool
	pods      []runtime.Object
	extra     []runtime.Object // more objects of the core API (namespaces, quotas)
	ca        *pki.CA
	replicas  []*replica
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
	loaded, err := hschema.Load("crd.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	crd := *loaded.Object
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
	return &world{
		crd: &crd,
		svc: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", Selector: map[string]string{"app": "widget-webhook"},
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(podPort)}}}},
		pods: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook-0", Namespace: "default", Labels: map[string]string{"app": "widget-webhook"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: podPort}}}}}}},
		extra:    []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}},
		ca:       ca,
		replicas: []*replica{{cert: testcert.Issue(t, ca, pki.CertOptions{DNSNames: []string{svcHost}}).TLSCertificate(), handler: h}},
		// The fake keeps an object per version: each is also given at the
		// other, as the API server would convert it.
		objects: []runtime.Object{widget("v1alpha1", "a", map[string]any{"replicas": int64(2)}), widget("v1", "a", map[string]any{"size": int64(2)}),
			widget("v1", "b", map[string]any{"size": int64(3)}), widget("v1alpha1", "b", map[string]any{"replicas": int64(3)})},
	}
}

// scale makes n replicas like the first one.
func (w *world) scale(n int) {
	for len(w.replicas) < n {
		r := *w.replicas[0]
		w.replicas = append(w.replicas, &r)
	}
}

func widget(version, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}}
}

// start serves a replica and returns where it listens.
func (r *replica) start(t *testing.T) string {
	t.Helper()
	if r.hang {
		return hangingListener(t)
	}
	srv := httptest.NewUnstartedServer(r.handler)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if r.plainHTTP {
		srv.Start()
	} else {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{r.cert}}
		if r.requireClientCert {
			srv.TLS.ClientAuth = tls.RequireAnyClientCert
		}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	if r.down {
		srv.Close()
	}
	return addr
}

func (w *world) run(t *testing.T) *doctor.Report {
	t.Helper()
	c, opts := w.clients(t)
	r, err := doctor.Run(context.Background(), c, "widgets.example.com", opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// clients starts the replicas and returns the fake clients and options
// that reach them.
func (w *world) clients(t *testing.T) (doctor.Clients, doctor.Options) {
	t.Helper()
	listen := map[string]string{} // pod address -> where the replica listens
	var eps []discoveryv1.Endpoint
	for i, r := range w.replicas {
		addr := r.start(t)
		listen[net.JoinHostPort(podIP(i), fmt.Sprint(podPort))] = addr
		if i == 0 {
			listen["webhook.example.com:8443"] = addr
		}
		ready := !r.notReady
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{podIP(i)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("widget-webhook-%d", i)}})
	}
	kubeObjs := append(append([]runtime.Object{}, w.pods...), w.extra...)
	if w.svc != nil {
		kubeObjs = append(kubeObjs, w.svc)
	}
	if !w.noSlice {
		kubeObjs = append(kubeObjs, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "widget-webhook-x1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "widget-webhook"}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
			Ports: []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(int32(podPort))}},
		})
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "example.com", Version: v, Resource: "widgets"}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr("v1"): "WidgetList", gvr("v1alpha1"): "WidgetList", gvr("v1beta1"): "WidgetList"}, w.objects...)
	if w.reactor != nil {
		dyn.PrependReactor("*", "widgets", w.reactor)
	}
	c := doctor.Clients{Kube: fake.NewClientset(kubeObjs...), Extensions: apiextfake.NewClientset(w.crd), Dynamic: dyn}
	// A URL's host is dialled directly, a pod address through the pod
	// network: each dialer knows only its own addresses.
	only := func(pods bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			to, ok := listen[addr]
			if !ok || pods == (addr == "webhook.example.com:8443") {
				return nil, fmt.Errorf("test: %s dialled through the wrong network", addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, to)
		}
	}
	opts := doctor.Options{Planned: w.planned, ValidateUpdate: validateUpdate, DialTimeout: time.Second, Dial: only(false), PodDial: only(true)}
	if w.configure != nil {
		w.configure(&opts)
	}
	return c, opts
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

// breaking wraps a correct webhook's handler, changing its answers.
func breaking(t *testing.T, h http.Handler, change func(body []byte, req []byte) (int, []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqBody, _ := io.ReadAll(r.Body)
		rec := httptest.NewRecorder()
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(reqBody))
		h.ServeHTTP(rec, r2)
		code, out := change(rec.Body.Bytes(), reqBody)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(out)
	})
}

// Each broken set-up must be diagnosed with the right cause first.
func TestDoctorFirstCause(t *testing.T) {
	rows := []struct {
		name  string
		setup func(t *testing.T, w *world)
		check string   // the first error's check; "" means healthy
		want  []string // substrings of the first error's message, cause or fix
		pod   string   // the first error's endpoint's pod, when it is one
	}{
		{"healthy", func(t *testing.T, w *world) {}, "", nil, ""},
		{"healthy, three replicas", func(t *testing.T, w *world) { w.scale(3) }, "", nil, ""},
		{"no such CRD", func(t *testing.T, w *world) { w.crd.Name = "gadgets.example.com" }, doctor.CheckCRD, []string{"not found"}, ""},

		// --- the CRD ---
		{"CRD not established: names conflict", func(t *testing.T, w *world) {
			w.crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "PluralConflict", Message: `"widgets" is already in use`},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}}
		}, doctor.CheckConditions, []string{"NamesAccepted=False (PluralConflict", "is already in use", "custom-columns"}, ""},
		{"CRD not established: invalid caBundle", func(t *testing.T, w *world) {
			w.crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "InvalidCABundle", Message: "The conversion webhook CABundle is invalid"}}
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("not PEM")
		}, doctor.CheckConditions, []string{"InvalidCABundle", "does not parse as PEM", "base64 -w0 ca.crt"}, ""},
		{"CRD being deleted", func(t *testing.T, w *world) {
			w.crd.Status.Conditions = append(w.crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"})
		}, doctor.CheckConditions, []string{"InstanceDeletionInProgress", "being deleted"}, ""},
		{"strategy None between versions whose schemas differ, objects exist", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		}, doctor.CheckStrategy, []string{"/spec/replicas only in v1alpha1", "/spec/size only in v1", "objects exist"}, ""},

		// --- the Service ---
		{"wrong Service name", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "widget-webhok"
		}, doctor.CheckService, []string{"widget-webhok", `"value":"widget-webhook"`}, ""},
		{"Service in another namespace than the CRD names", func(t *testing.T, w *world) {
			w.svc.Namespace = "webhooks"
			w.extra = append(w.extra, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "webhooks"}})
		}, doctor.CheckService, []string{"Service widget-webhook exists in namespace webhooks", `"path":"/spec/conversion/webhook/clientConfig/service/namespace","value":"webhooks"`}, ""},
		{"the Service's namespace does not exist", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = "webhook-system"
		}, doctor.CheckService, []string{"the namespace webhook-system", "does not exist", "exists in namespace default"}, ""},
		{"wrong port", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.Service.Port = ptr(int32(8443))
		}, doctor.CheckServicePort, []string{"no port 8443", `/clientConfig/service/port","value":443`}, ""},
		{"targetPort not a container port", func(t *testing.T, w *world) {
			w.svc.Spec.Ports[0].TargetPort = intstr.FromString("webhook")
		}, doctor.CheckServicePort, []string{`declares port webhook`, "https/8443"}, ""},
		{"no endpoints: selector matches no pod", func(t *testing.T, w *world) {
			w.noSlice, w.pods = true, nil
		}, doctor.CheckEndpoints, []string{"matches no pod", "--show-labels"}, ""},
		{"endpoints not ready", func(t *testing.T, w *world) {
			w.replicas[0].notReady = true
		}, doctor.CheckEndpointsReady, []string{"none of the 1 endpoints is ready", "/readyz"}, ""},

		// --- every endpoint, and what crypto/x509 says of its chain ---
		{"one bad replica of three: a certificate of another CA", func(t *testing.T, w *world) {
			w.scale(3)
			other := *w.replicas[0]
			other.cert = testcert.Issue(t, testcert.CA(t, "stale-ca"), pki.CertOptions{DNSNames: []string{svcHost}}).TLSCertificate()
			w.replicas[1] = &other
		}, doctor.CheckCertChain, []string{`issued by "CN=stale-ca"`, `("CN=webhook-ca")`, "the caBundle is right and this replica serves another certificate", "kubectl delete pod -n default widget-webhook-1"}, "widget-webhook-1"},
		{"one bad replica of three: wrong uid", func(t *testing.T, w *world) {
			w.scale(3)
			bad := *w.replicas[0]
			bad.handler = breaking(t, bad.handler, func(out, _ []byte) (int, []byte) {
				return 200, bytes.Replace(out, []byte(`"uid":"`), []byte(`"uid":"x`), 1)
			})
			w.replicas[2] = &bad
		}, doctor.CheckDirect, []string{"response.uid", "ConversionReview protocol"}, "widget-webhook-2"},
		{"caBundle of another CA", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = testcert.CA(t, "another-ca").CertPEM
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
		}, doctor.CheckCertChain, []string{`issued by "CN=webhook-ca"`, `("CN=another-ca")`, "caBundle"}, "widget-webhook-0"},
		{"CA generated again with the same name", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = testcert.CA(t, "webhook-ca").CertPEM
		}, doctor.CheckCertChain, []string{`holds a CA named "CN=webhook-ca"`, "generated again with a new key"}, ""},
		{"a chain missing its intermediate", func(t *testing.T, w *world) {
			root, inter := testcert.Chain(t, "company root", "webhook issuing CA")
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = root.CertPEM
			w.replicas[0].cert = testcert.Issue(t, inter, pki.CertOptions{DNSNames: []string{svcHost}}).TLSCertificate()
		}, doctor.CheckCertChain, []string{`issued by "CN=webhook issuing CA"`, "serves no intermediate", "missing its intermediate", "tls.crt = the certificate, then the intermediate"}, ""},
		{"a self-signed certificate", func(t *testing.T, w *world) {
			self, err := pki.NewCA(pki.CAOptions{CommonName: svcHost})
			if err != nil {
				t.Fatal(err)
			}
			w.replicas[0].cert = self.TLSCertificate()
		}, doctor.CheckCertChain, []string{"self-signed"}, ""},
		{"a certificate for clients only", func(t *testing.T, w *world) {
			w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, Usage: pki.ClientAuth}).TLSCertificate()
		}, doctor.CheckCertUsage, []string{"clientAuth", "server auth"}, ""},
		{"certificate for the pod IP only", func(t *testing.T, w *world) {
			w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{IPs: []net.IP{net.ParseIP(podIP(0))}}).TLSCertificate()
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate is not valid for any names, but wanted to match widget-webhook.default.svc`)
		}, doctor.CheckCertNames, []string{podIP(0), "DNS SANs " + svcHost}, ""},
		{"certificate for another Service", func(t *testing.T, w *world) {
			w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{"old-webhook.default.svc"}}).TLSCertificate()
		}, doctor.CheckCertNames, []string{"made for Service default/old-webhook"}, ""},
		{"legacy Common Name only", func(t *testing.T, w *world) {
			w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{CommonName: svcHost, CommonNameOnly: true}).TLSCertificate()
		}, doctor.CheckCertNames, []string{"legacy Common Name", "x509ignoreCN=0"}, ""},
		{"expired certificate", func(t *testing.T, w *world) {
			w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}).TLSCertificate()
		}, doctor.CheckCertExpiry, []string{"expired at"}, ""},
		{"certificate not yet valid", func(t *testing.T, w *world) {
			w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, NotBefore: time.Now().Add(24 * time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}).TLSCertificate()
		}, doctor.CheckCertExpiry, []string{"not valid before"}, ""},
		{"webhook down", func(t *testing.T, w *world) {
			w.replicas[0].down = true
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": dial tcp 10.244.0.5:8443: connect: connection refused`)
		}, doctor.CheckReachable, []string{"connection refused", "down"}, ""},
		{"webhook serves plain HTTP", func(t *testing.T, w *world) {
			w.replicas[0].plainHTTP = true
		}, doctor.CheckReachable, []string{"plain HTTP", `"HTTP/`}, ""},
		{"a handshake that hangs", func(t *testing.T, w *world) {
			w.replicas[0].hang = true
			w.configure = func(o *doctor.Options) { o.DialTimeout = 200 * time.Millisecond }
		}, doctor.CheckReachable, []string{"did not complete within 200ms", "accepts connections but does not answer TLS"}, ""},
		{"a client certificate required", func(t *testing.T, w *world) {
			w.replicas[0].requireClientCert = true
		}, doctor.CheckReachable, []string{"client certificate", "presents no client certificate"}, ""},
		{"empty caBundle", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
		}, doctor.CheckCABundle, []string{"system roots", "base64"}, ""},
		{"url clientConfig, certificate for other names", func(t *testing.T, w *world) {
			cc := w.crd.Spec.Conversion.Webhook.ClientConfig
			cc.Service, cc.URL = nil, ptr("https://webhook.example.com:8443/convert")
		}, doctor.CheckCertNames, []string{"do not include webhook.example.com", "DNS SANs webhook.example.com"}, ""},
		{"endpoint unreachable from here, certificate from --cert-file", func(t *testing.T, w *world) {
			w.configure = func(o *doctor.Options) {
				o.PodDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
					return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("i/o timeout")}
				}
				o.ServingCert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{"localhost"}, NotAfter: time.Now().Add(time.Hour)}).CertPEM
			}
			w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate is valid for localhost, not widget-webhook.default.svc`)
		}, doctor.CheckCertNames, []string{"the certificate of --cert-file", "(localhost) do not include widget-webhook.default.svc"}, ""},

		// --- the conversions, at each endpoint ---
		{"wrong path: every review 404", func(t *testing.T, w *world) {
			w.replicas[0].handler = http.NotFoundHandler()
		}, doctor.CheckDirect, []string{"HTTP 404", "path", "/clientConfig/service/path"}, "widget-webhook-0"},
		{"every review answered HTTP 500", func(t *testing.T, w *world) {
			w.replicas[0].handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				http.Error(rw, "panic: nil map", http.StatusInternalServerError)
			})
		}, doctor.CheckDirect, []string{"HTTP 500", "panic: nil map", "result.status Failure"}, ""},
		{"a webhook that drops objects of a batch", func(t *testing.T, w *world) {
			w.replicas[0].handler = breaking(t, w.replicas[0].handler, func(out, _ []byte) (int, []byte) {
				var rv map[string]any
				_ = yaml.Unmarshal(out, &rv)
				resp := rv["response"].(map[string]any)
				if objs, _ := resp["convertedObjects"].([]any); len(objs) > 1 {
					resp["convertedObjects"] = objs[:1]
				}
				b, _ := yaml.YAMLToJSON(mustJSON(t, rv))
				return 200, b
			})
			w.objects = append(w.objects, widget("v1", "c", map[string]any{"size": int64(4)}))
		}, doctor.CheckDirect, []string{"converted objects, want 3", "ConversionReview protocol"}, ""},
		{"a one-way webhook", func(t *testing.T, w *world) {
			w.replicas[0].handler = breaking(t, w.replicas[0].handler, func(out, req []byte) (int, []byte) {
				if bytes.Contains(req, []byte(`"desiredAPIVersion":"example.com/v1alpha1"`)) {
					uid := req[bytes.Index(req, []byte(`"uid":"`))+7:]
					uid = uid[:bytes.IndexByte(uid, '"')]
					return 200, fmt.Appendf(nil, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":%q,"result":{"status":"Failure","message":"no conversion to v1alpha1"}}}`, uid)
				}
				return 200, out
			})
		}, doctor.CheckDirect, []string{"one direction only", "conversions to v1alpha1 (from v1) are refused", "both directions"}, ""},
		{"a slow webhook, at the error threshold", func(t *testing.T, w *world) {
			h := w.replicas[0].handler
			w.replicas[0].handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				time.Sleep(150 * time.Millisecond)
				h.ServeHTTP(rw, r)
			})
			w.configure = func(o *doctor.Options) {
				o.LatencyWarning, o.LatencyError, o.ReviewTimeout = 50*time.Millisecond, 100*time.Millisecond, 5*time.Second
			}
		}, doctor.CheckLatency, []string{"a third of the API server's 30 s", "max"}, ""},
		{"a webhook that does not answer in time", func(t *testing.T, w *world) {
			w.replicas[0].handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			})
			w.configure = func(o *doctor.Options) {
				o.LatencyWarning, o.LatencyError, o.ReviewTimeout = 50*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
			}
		}, doctor.CheckLatency, []string{"no answer within 200ms"}, ""},

		// --- the API server's own view ---
		{"wrong uid in responses (seen through the API server)", func(t *testing.T, w *world) {
			w.reactor = apiError("get", "v1alpha1", `conversion webhook for example.com/v1, Kind=Widget failed: expected response.uid="3b1f", got "0000"`)
		}, doctor.CheckLive, []string{"response.uid", "Set response.uid"}, ""},
		{"one-way webhook (seen through the API server)", func(t *testing.T, w *world) {
			msg := `conversion webhook for example.com/v1, Kind=Widget failed: no conversion from v1 to v1alpha1`
			w.reactor = func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetResource().Version == "v1alpha1" && (a.GetVerb() == "list" || a.GetVerb() == "create") {
					return true, nil, apierrors.NewInternalError(fmt.Errorf("%s", msg))
				}
				return false, nil, nil
			}
		}, doctor.CheckLive, []string{"Conversions to v1alpha1 (from v1) fail while conversions from v1alpha1 succeed", "both directions"}, ""},
		{"conversionReviewVersions without v1, webhook speaks v1 only", func(t *testing.T, w *world) {
			w.crd.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v1beta1"}
			w.reactor = apiServerFails(`the server rejected our request for an unknown reason`)
			inner := w.replicas[0].handler
			w.replicas[0].handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				body := new(bytes.Buffer)
				_, _ = body.ReadFrom(r.Body)
				if strings.Contains(body.String(), `"apiextensions.k8s.io/v1beta1"`) {
					http.Error(rw, "only apiextensions.k8s.io/v1 reviews", http.StatusBadRequest)
					return
				}
				r2 := r.Clone(r.Context())
				r2.Body = io.NopCloser(bytes.NewReader(body.Bytes()))
				inner.ServeHTTP(rw, r2)
			})
		}, doctor.CheckReviewVersions, []string{"lacks v1", `["v1","v1beta1"]`}, ""},
		{"storedVersions: the planned CRD drops a stored version", func(t *testing.T, w *world) {
			w.crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
			planned := w.crd.DeepCopy()
			planned.Spec.Versions = planned.Spec.Versions[1:]
			w.planned = mustJSON(t, planned)
		}, doctor.CheckStoredVersions, []string{"removes [v1alpha1]", "hubspoke migrate widgets.example.com"}, ""},
		{"the planned CRD misspells a field", func(t *testing.T, w *world) {
			data, err := os.ReadFile("../examples/widget/crd.yaml")
			if err != nil {
				t.Fatal(err)
			}
			w.planned = bytes.Replace(data, []byte("    storage: false\n"), []byte("    Storage: false\n"), 1)
			w.configure = func(o *doctor.Options) { o.PlannedFile = "crd.yaml" }
		}, doctor.CheckStoredVersions, []string{"the planned CRD does not parse: crd.yaml:26:5: unknown field spec.versions[0].Storage", "fix the file given with -f"}, ""},
		{"the planned CRD changes the scope, which is immutable", func(t *testing.T, w *world) {
			planned := w.crd.DeepCopy()
			planned.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			planned.Spec.Scope = apiextensionsv1.ClusterScoped
			w.planned = mustJSON(t, planned)
		}, doctor.CheckPlanned, []string{`spec.scope: Invalid value: "Cluster": field is immutable`, "must keep its live value"}, ""},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
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
			if row.pod != "" && (cause.Endpoint == nil || cause.Endpoint.Pod != row.pod) {
				t.Errorf("first error at %v, want pod %s", cause.Endpoint, row.pod)
			}
			for _, f := range r.Findings {
				if strings.Contains(f.Fix, "CRD-NAME") || strings.Contains(f.Cause, "CRD-NAME") {
					t.Errorf("%s keeps the placeholder CRD-NAME: %s", f.Check, f.Fix)
				}
			}
			t.Logf("\n%s", text.String())
		})
	}
}

// One bad replica of three fails some conversions only, and only new
// connections to it: doctor finds it every time, names it, and does not
// call it anything but an error because the live reads succeed.
func TestOneBadReplicaFoundEveryTime(t *testing.T) {
	for i := range 5 {
		w := newWorld(t)
		w.scale(3)
		bad := *w.replicas[0]
		bad.cert = testcert.Issue(t, testcert.CA(t, "stale-ca"), pki.CertOptions{DNSNames: []string{svcHost}}).TLSCertificate()
		w.replicas[i%3] = &bad
		r := w.run(t)
		c := r.Cause()
		want := fmt.Sprintf("widget-webhook-%d", i%3)
		if c == nil || c.Check != doctor.CheckCertChain || c.Endpoint == nil || c.Endpoint.Pod != want {
			t.Fatalf("run %d: cause %+v, want certificate.chain at %s", i, c, want)
		}
		if live := r.Find(doctor.CheckLive); live.Severity != doctor.SeverityOK || !strings.Contains(live.Message, "watch cache") {
			t.Errorf("live: %+v, want ok with the note that live reads prove nothing", live)
		}
		if n := len(r.FindAll(doctor.CheckCertChain)); n != 3 {
			t.Errorf("%d certificate.chain findings, want one per endpoint", n)
		}
	}
}

// No check passes on zero samples: a webhook that answers 404 to every
// review, on a CRD without objects, is an error, not "the API server's
// path works".
func TestDirectNeverPassesOnNothing(t *testing.T) {
	w := newWorld(t)
	w.objects = nil
	w.replicas[0].handler = http.NotFoundHandler()
	r := w.run(t)
	f := r.Find(doctor.CheckDirect)
	if f == nil || f.Severity != doctor.SeverityError || !strings.Contains(f.Message, "HTTP 404") {
		t.Fatalf("conversion.direct %+v, want an error naming HTTP 404", f)
	}
	if strings.Contains(f.Message, "works") {
		t.Errorf("conversion.direct says something works: %s", f.Message)
	}
}

// doctor never waits longer than its timeout, and says what for: even
// when a client does not give up with its context.
func TestTimeoutSaysWhatItWaitedFor(t *testing.T) {
	w := newWorld(t)
	w.configure = func(o *doctor.Options) { o.Timeout = 700 * time.Millisecond }
	c, opts := w.clients(t)
	c.Dynamic = slowDynamic{Interface: c.Dynamic, version: "v1alpha1", delay: 3 * time.Second}
	start := time.Now()
	r, err := doctor.Run(context.Background(), c, "widgets.example.com", opts)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("doctor took %s with --timeout 700ms", took)
	}
	live := r.Find(doctor.CheckLive)
	if live.Severity != doctor.SeverityError || !strings.Contains(live.Message, "ran out while waiting for the API server to get widgets through v1alpha1") {
		t.Errorf("live: %+v", live)
	}
}

// slowDynamic is an API server that takes delay to answer for version,
// as one waiting for a webhook that does not answer, and a client that
// does not give up with its context.
type slowDynamic struct {
	dynamic.Interface
	version string
	delay   time.Duration
}

func (s slowDynamic) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	ri := s.Interface.Resource(r)
	if r.Version != s.version {
		return ri
	}
	return slowResource{ri, s.delay}
}

type slowResource struct {
	dynamic.NamespaceableResourceInterface
	delay time.Duration
}

func (s slowResource) Namespace(ns string) dynamic.ResourceInterface {
	return slowNamespaced{s.NamespaceableResourceInterface.Namespace(ns), s.delay}
}

type slowNamespaced struct {
	dynamic.ResourceInterface
	delay time.Duration
}

func (s slowNamespaced) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	time.Sleep(s.delay)
	return s.ResourceInterface.Get(ctx, name, opts, sub...)
}

// A webhook on a CRD with a single version is a warning; strategy None
// between versions with one schema is correct.
func TestStrategyWarnings(t *testing.T) {
	w := newWorld(t)
	w.crd.Spec.Versions = w.crd.Spec.Versions[1:]
	r := w.run(t)
	if f := r.Find(doctor.CheckStrategy); f.Severity != doctor.SeverityWarning || !strings.Contains(f.Message, "single version") {
		t.Errorf("single version with a webhook: %+v", f)
	}
	w = newWorld(t)
	w.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	w.crd.Spec.Versions[0].Schema = w.crd.Spec.Versions[1].Schema
	if f := w.run(t).Find(doctor.CheckStrategy); f.Severity != doctor.SeverityOK || !strings.Contains(f.Message, "same schema") {
		t.Errorf("strategy None, one schema: %+v", f)
	}
	w = newWorld(t)
	w.crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	w.objects = nil
	if f := w.run(t).Find(doctor.CheckStrategy); f.Severity != doctor.SeverityWarning || !strings.Contains(f.Cause, "no objects exist yet") {
		t.Errorf("strategy None, schemas differ, no objects: %+v", f)
	}
}

// The caBundle is never said to be wrong when every served chain verifies
// against it, even if the API server's error says unknown authority.
func TestNoCABundleFixWhenTheChainVerifies(t *testing.T) {
	w := newWorld(t)
	w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
	r := w.run(t)
	live := r.Find(doctor.CheckLive)
	if live.Severity != doctor.SeverityError || strings.Contains(live.Fix, "caBundle") || !strings.Contains(live.Cause, "verifies against the caBundle") {
		t.Errorf("live: %+v", live)
	}
}

// --all: every CRD with a webhook, one line each, and what else breaks
// while one is down, from what is observed and what the versions imply.
func TestRunAll(t *testing.T) {
	w := newWorld(t)
	w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": dial tcp 10.244.0.5:8443: connect: connection refused`)
	w.replicas[0].down = true
	w.crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
	w.extra = append(w.extra,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating,
			Conditions: []corev1.NamespaceCondition{{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue,
				Message: `Failed to delete all resource types, 1 remaining: conversion webhook for example.com/v1, Kind=Widget failed`}}}},
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "widgets", Namespace: "team-a"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/widgets.example.com": resource.MustParse("10")}}})
	c, opts := w.clients(t)
	rep, err := doctor.RunAll(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.CRDs) != 1 || rep.Broken() != 1 {
		t.Fatalf("report %+v", rep)
	}
	s := rep.CRDs[0]
	if s.Cause == nil || s.Cause.Check != doctor.CheckReachable {
		t.Fatalf("cause %+v", s.Cause)
	}
	impact := strings.Join(s.Impact, "\n")
	for _, want := range []string{
		"delete widgets.example.com through v1 and objects may still be stored at v1alpha1", // v1, preferred, is the storage version, but not every object is at it
		"namespace team-a is Terminating", "(observed)",
		"the quota controller's counts, come from the API server's watch cache and go on",
		"through v1alpha1",
	} {
		if !strings.Contains(impact, want) {
			t.Errorf("impact lacks %q:\n%s", want, impact)
		}
	}
	// A quota counts the resource from the watch cache, with or without
	// the webhook (test/e2e's TestNamespaceDeletionWebhookDown sees it).
	if strings.Contains(impact, "ResourceQuota") {
		t.Errorf("impact says a quota fails:\n%s", impact)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "widgets.example.com  ERROR  webhook.reachable at 10.244.0.5:8443") {
		t.Errorf("text:\n%s", text.String())
	}
	t.Logf("\n%s", text.String())
}

// Every check the explanations point to exists in doctor.
func TestExplainChecksExist(t *testing.T) {
	for _, c := range explain.Checks() {
		if !slices.Contains(doctor.Checks, c) {
			t.Errorf("explain refers to check %q, which doctor does not run", c)
		}
	}
}

func TestReportJSONAndYAML(t *testing.T) {
	w := newWorld(t)
	w.replicas[0].down = true
	w.reactor = apiServerFails(`Post "https://widget-webhook.default.svc:443/convert?timeout=30s": dial tcp 10.244.0.5:8443: connect: connection refused`)
	r := w.run(t)
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"cause": {`, `"check": "webhook.reachable"`, `"errors": `, `"id": "connection-refused"`, `"pod": "widget-webhook-0"`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, b.String())
		}
	}
	b.Reset()
	if err := r.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"cause:\n", "check: webhook.reachable", "errors: ", "id: connection-refused", "pod: widget-webhook-0"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("YAML lacks %s:\n%s", s, b.String())
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
	w.replicas[0].cert = testcert.Issue(t, w.ca, pki.CertOptions{DNSNames: []string{svcHost}, NotAfter: time.Now().Add(10 * 24 * time.Hour)}).TLSCertificate()
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

// docs/production.md's Diagnosis section lists every check doctor runs
// and every class explain gives, as the tool names them.
func TestDocsListEveryCheckAndClass(t *testing.T) {
	data, err := os.ReadFile("../docs/production.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, "## Diagnosis")
	if i < 0 {
		t.Fatal("docs/production.md has no Diagnosis section")
	}
	section := doc[i:]
	for _, c := range doctor.Checks {
		if !strings.Contains(section, "| `"+c+"` |") {
			t.Errorf("the Diagnosis section's table of checks lacks %s", c)
		}
	}
	for _, c := range explain.Classes {
		if !strings.Contains(section, "| `"+string(c)+"` |") {
			t.Errorf("the Diagnosis section's table of classes lacks %s", c)
		}
	}
	if want := fmt.Sprintf("the %d kinds", len(explain.IDs())); !strings.Contains(section, want) {
		t.Errorf("the Diagnosis section does not say %q", want)
	}
}

// The StorageMigrating condition Kubernetes' storage version migrator sets
// on the CRD: doctor says whether a migration runs (and whether it still
// exists), or how the last one ended.
func TestStorageMigrationCondition(t *testing.T) {
	cond := func(status apiextensionsv1.ConditionStatus, reason, msg string) apiextensionsv1.CustomResourceDefinitionCondition {
		return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.StorageMigrating, Status: status, Reason: reason, Message: msg,
			LastTransitionTime: metav1.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	}
	svm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": "m-1"}, "spec": map[string]any{"resource": map[string]any{"group": "example.com", "resource": "widgets"}}}}
	rows := []struct {
		name     string
		c        *apiextensionsv1.CustomResourceDefinitionCondition
		objects  []runtime.Object
		severity doctor.Severity
		want     []string
	}{
		{"no condition", nil, nil, doctor.SeverityOK, []string{"no storage migration recorded"}},
		{"running", ptr(cond(apiextensionsv1.ConditionTrue, "MigrationRunning", "Migration m-1 is running")), []runtime.Object{svm}, doctor.SeverityWarning,
			[]string{"StorageMigrating=True since 2026-12-04T10:00:00Z (MigrationRunning: Migration m-1 is running)", "retries for ever", "kubectl get storageversionmigration m-1"}},
		{"running, its migration deleted", ptr(cond(apiextensionsv1.ConditionTrue, "MigrationRunning", "Migration m-1 is running")), nil, doctor.SeverityWarning,
			[]string{"migration m-1 no longer exists", "stays True", "--engine cluster"}},
		{"failed", ptr(cond(apiextensionsv1.ConditionFalse, "MigrationFailed", "The migration has failed")), nil, doctor.SeverityWarning,
			[]string{"the last storage migration failed", "hubspoke migrate widgets.example.com"}},
		{"succeeded without pruning", ptr(cond(apiextensionsv1.ConditionFalse, "MigrationSucceeded", "The migration has succeeded but the stored versions have not been updated due to a generation mismatch")), nil, doctor.SeverityWarning,
			[]string{"spec changed while it ran"}},
		{"succeeded", ptr(cond(apiextensionsv1.ConditionFalse, "MigrationSucceeded", "The migration has succeeded and the stored versions have been updated")), nil, doctor.SeverityOK,
			[]string{"no storage migration running (last: MigrationSucceeded)"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t)
			if row.c != nil {
				w.crd.Status.Conditions = append(w.crd.Status.Conditions, *row.c)
			}
			w.objects = row.objects
			f := w.run(t).Find(doctor.CheckMigration)
			if f == nil {
				t.Fatal("no finding of crd.storageMigration")
			}
			all := f.Message + "\n" + f.Cause + "\n" + f.Fix
			if f.Severity != row.severity {
				t.Errorf("severity %s, want %s: %s", f.Severity, row.severity, all)
			}
			for _, s := range row.want {
				if !strings.Contains(all, s) {
					t.Errorf("finding lacks %q:\n%s", s, all)
				}
			}
		})
	}
}
