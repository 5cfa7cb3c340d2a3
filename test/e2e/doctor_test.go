package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/explain"
	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// doctorNS holds the Services of the doctor tests' webhooks.
const doctorNS = "doctor"

// A broken set-up: a Widget CRD in a group of its own, a webhook behind a
// Service of the sandbox (real TLS, reached by the API server through the
// Service's EndpointSlice), objects stored, and one thing broken.
type brokenSetup struct {
	name string
	// check is the check doctor must name first ("" for a healthy set-up);
	// want are substrings of that finding (message, cause or fix).
	check string
	want  []string
	// pod, when set, is the replica whose endpoint the first error must
	// name (its index).
	pod *int
	// warning is a check that must warn in a set-up with no error.
	warning string
	// replicas is the number of webhook endpoints behind the Service
	// (default 1).
	replicas int
	// raw installs the CRD without waiting for it to be served and writes
	// no objects (a CRD the API server does not establish).
	raw bool
	// timeout is doctor's --timeout (default 20s).
	timeout time.Duration
	// setup breaks something; it runs before the CRD is installed.
	setup func(t *testing.T, s *setupState)
	// after runs once objects exist (e.g. to mark the endpoint not ready
	// or stop the webhook).
	after func(t *testing.T, s *setupState)
	// cli also runs `hubspoke doctor` as a user would, from outside the
	// pod network, and expects its first error to be this check ("" with
	// check "": exit 0).
	cli string
	// confirm is the explanation of the API server's own error in the live
	// conversion check: "" when conversions through the API server work,
	// "-" when they may or may not (a bad replica the API server may not
	// pick), else alternatives separated by |.
	confirm string
	// explainKubectl, when set, reads the objects with kubectl as a user
	// would and holds explain to what kubectl says: its first explanation
	// must be this (alternatives separated by |). The messages are those
	// of explain/testdata/corpus-sandbox.yaml.
	explainKubectl string
}

// setupState is what a set-up is made of; setup functions change it.
type setupState struct {
	group, service string
	crd            *apiextensionsv1.CustomResourceDefinition
	ca, otherCA    *pki.CA
	cert           func(podIP string) tls.Certificate // the serving certificate, once the pod IP is known
	handler        http.Handler
	review         *reviewTap // wraps handler when set
	planned        []byte
	storedAt       string // the version objects are written through (default: storage)
	replicas       []*replicaState
}

// replicaState is one webhook process behind the Service: hubspoke's
// review handler over TLS unless a set-up makes it misbehave.
type replicaState struct {
	cert     func(podIP string) tls.Certificate // nil: the set-up's
	handler  http.Handler                       // nil: the set-up's
	mode     string                             // "": HTTPS; "http": plain HTTP; "hang": accepts, never answers; "clientcert": requires a client certificate
	endpoint endpoint                           // its endpoint of the Service (Service set-ups)
	podAddr  string                             // where the API server reaches it
	pod      string                             // its pod's name in the EndpointSlice
	server   *http.Server
	listener net.Listener
}

// endpoint is the sandbox's handle on one endpoint of a Service.
type endpoint interface {
	Remove(ctx context.Context) error
	SetReady(ctx context.Context, ready bool) error
}

// exposer puts a replica where the API server reaches it: it sets the
// CRD's clientConfig, r.podAddr, r.pod and r.endpoint, and returns the
// address the serving certificate is for when it names one (a pod IP).
type exposer func(t *testing.T, s *setupState, r *replicaState) (podIP string)

// exposeURL is clientConfig.url: https://127.0.0.1:PORT/convert, which
// the API server dials directly, as do doctor and a user's terminal.
func exposeURL(t *testing.T, s *setupState, r *replicaState) string {
	u := "https://" + r.listener.Addr().String() + "/convert"
	cc := s.crd.Spec.Conversion.Webhook.ClientConfig
	cc.Service, cc.URL = nil, &u
	r.podAddr = r.listener.Addr().String()
	return "127.0.0.1"
}

// plannedDropsV1alpha1: objects were written while v1alpha1 was the
// storage version; v1 is storage now; the next revision drops v1alpha1.
func plannedDropsV1alpha1(t *testing.T, s *setupState) {
	s.storedAt = "v1alpha1"
	next := s.crd.DeepCopy()
	next.Spec.Versions = next.Spec.Versions[1:]
	data, err := yaml.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	s.planned = data
}

// runSetups diagnoses each set-up (in parallel) and checks the first
// cause, the explanation of the API server's own error and, when asked,
// what `hubspoke doctor` says from a terminal, with its exit status.
func runSetups(t *testing.T, expose exposer, setups []brokenSetup) {
	for _, bs := range setups {
		t.Run(bs.name, func(t *testing.T) {
			t.Parallel()
			s := newSetupState(t, bs)
			if bs.setup != nil {
				bs.setup(t, s)
			}
			s.install(t, expose, bs.raw)
			if bs.after != nil {
				bs.after(t, s)
			}
			report := s.diagnose(t, bs.timeout)
			var text bytes.Buffer
			if err := report.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n%s", bs.name, text.String())
			first := report.Cause()
			if bs.check == "" {
				if first != nil {
					t.Fatalf("healthy set-up: doctor found %s", first.Check)
				}
				if bs.warning != "" && !slices.ContainsFunc(report.FindAll(bs.warning), func(f *doctor.Finding) bool { return f.Severity == doctor.SeverityWarning }) {
					t.Errorf("no warning from %s", bs.warning)
				}
			} else {
				if first == nil {
					t.Fatalf("no error found; want %s first", bs.check)
				}
				if first.Check != bs.check {
					t.Fatalf("first error is %s, want %s", first.Check, bs.check)
				}
				all := first.Message + "\n" + first.Cause + "\n" + first.Fix
				for _, w := range bs.want {
					if !strings.Contains(all, w) {
						t.Errorf("the first error lacks %q", w)
					}
				}
				if bs.pod != nil {
					if want := s.replicas[*bs.pod].pod; first.Endpoint == nil || first.Endpoint.Pod != want {
						t.Errorf("the first error is at %v, want pod %s", first.Endpoint, want)
					}
				}
			}
			live := report.Find(doctor.CheckLive)
			switch {
			case bs.confirm == "-":
			case bs.confirm == "" && live.Severity == doctor.SeverityError:
				t.Errorf("conversions through the API server fail: %s", live.Message)
			case bs.confirm != "" && (live.Explanation == nil || !slices.Contains(strings.Split(bs.confirm, "|"), live.Explanation.ID)):
				t.Errorf("the API server's error is explained as %+v, want %s: %s", live.Explanation, bs.confirm, live.Message)
			}
			if bs.cli != "" || bs.check == "" {
				s.runCLI(t, bs.cli, bs.timeout)
			}
			if bs.explainKubectl != "" {
				checkExplained(t, s.kubectlMessage(t, bs.raw), bs.explainKubectl)
			}
		})
	}
}

// The API server's own refusal of a CRD that drops a stored version, as
// kubectl shows it, is explained with the check doctor confirms it with.
func TestExplainKubectlStoredVersionRefusal(t *testing.T) {
	t.Parallel() // its own group
	s := newSetupState(t, brokenSetup{name: "kubectl refusal"})
	s.storedAt = "v1alpha1"
	s.install(t, exposeURL, false)
	next := s.crd.DeepCopy()
	next.Spec.Versions = next.Spec.Versions[1:]
	next.ResourceVersion = ""
	data, err := yaml.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "next.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("kubectl", "--kubeconfig", sb.KubeconfigPath(), "apply", "--server-side", "--force-conflicts", "-f", file)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kubectl apply of a CRD without a stored version succeeded:\n%s", out)
	}
	xs := explain.Explain(string(out))
	if len(xs) == 0 || xs[0].ID != "stored-version-removed" || xs[0].Check != doctor.CheckStoredVersions {
		t.Fatalf("explain(%q) = %v, want stored-version-removed first", out, xs)
	}
	if xs[0].Fields["version"] != "v1alpha1" {
		t.Errorf("version %q, want v1alpha1", xs[0].Fields["version"])
	}
	if got := explain.CRDName(string(out)); got != s.crd.Name {
		t.Errorf("CRDName(%q) = %q, want %q", out, got, s.crd.Name)
	}
}

// shortName makes a DNS label of a set-up's name: "url wrong uid in
// responses" -> "url-wrong-uid".
func shortName(name string) string {
	words := strings.Fields(strings.ToLower(name))
	if len(words) > 3 {
		words = words[:3]
	}
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte('-')
		}
		for _, r := range w {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

var setupSeq struct {
	sync.Mutex
	n int
}

func newSetupState(t *testing.T, bs brokenSetup) *setupState {
	t.Helper()
	short := shortName(bs.name)
	if short == "" {
		setupSeq.Lock()
		setupSeq.n++
		short = fmt.Sprintf("s%d", setupSeq.n)
		setupSeq.Unlock()
	}
	s := &setupState{group: "svc-" + short + ".doctor.example.com", service: "svc-" + short + "-webhook"}
	s.ca = testcert.CA(t, "doctor webhook CA")
	s.otherCA = testcert.CA(t, "another CA")
	s.cert = func(string) tls.Certificate {
		return testcert.Issue(t, s.ca, pki.CertOptions{
			DNSNames: []string{s.service + "." + doctorNS + ".svc", s.service + "." + doctorNS + ".svc.cluster.local", "localhost"},
			IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
		}).TLSCertificate()
	}
	for range max(bs.replicas, 1) {
		s.replicas = append(s.replicas, &replicaState{})
	}
	crd, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Group = s.group
	crd.Name = "widgets." + s.group
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	cc.Service.Namespace, cc.Service.Name = doctorNS, s.service
	cc.CABundle = s.ca.CertPEM
	s.crd = crd
	data, err := os.ReadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("example.com"), []byte(s.group))
	conv, err := rules.Load("conversion.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.handler, err = review.NewHandler(review.Options{Converters: []review.Converter{conv}, Registerer: prometheus.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	return s
}

// start serves one replica on a loopback listener of its own.
func (s *setupState) start(t *testing.T, r *replicaState) (setCert func(tls.Certificate)) {
	t.Helper()
	var err error
	if r.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.listener.Close() })
	if r.mode == "hang" {
		// A process that accepts connections and never answers: the TLS
		// handshake hangs.
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := r.listener.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
		return func(tls.Certificate) {}
	}
	h := orHandler(r.handler, s.handler)
	if s.review != nil {
		s.review.next = h
		h = s.review
	}
	var certMu sync.Mutex
	var cert *tls.Certificate
	r.server = &http.Server{Handler: h, ErrorLog: quietLog(), TLSConfig: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		certMu.Lock()
		defer certMu.Unlock()
		if cert == nil {
			return nil, fmt.Errorf("no certificate yet")
		}
		return cert, nil
	}}}
	if r.mode == "clientcert" {
		r.server.TLSConfig.ClientAuth = tls.RequireAnyClientCert
	}
	if r.mode == "http" {
		go r.server.Serve(r.listener)
	} else {
		go r.server.ServeTLS(r.listener, "", "")
	}
	t.Cleanup(func() { r.server.Close() })
	return func(c tls.Certificate) {
		certMu.Lock()
		cert = &c
		certMu.Unlock()
	}
}

func orHandler(h, def http.Handler) http.Handler {
	if h != nil {
		return h
	}
	return def
}

// install serves the webhook's replicas behind their Service, installs
// the CRD and writes two objects; raw installs the CRD as it is, without
// waiting for it to be served, and writes none.
func (s *setupState) install(t *testing.T, expose exposer, raw bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, r := range s.replicas {
		setCert := s.start(t, r)
		podIP := expose(t, s, r)
		certFor := s.cert
		if r.cert != nil {
			certFor = r.cert
		}
		setCert(certFor(podIP))
	}

	crd := s.crd.DeepCopy()
	if raw {
		crds := apiextensionsclient.NewForConfigOrDie(sb.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sb.DeleteCRD(context.Background(), crd.Name) })
		// Wait for the API server's verdict on the CRD.
		eventually(t, "a condition on CRD "+crd.Name, func() error {
			got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Reason != "" && c.Reason != "Installing" && c.Reason != "NotAccepted" {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", got.Status.Conditions)
		})
		return
	}
	if s.storedAt != "" && s.storedAt != "v1" {
		// v1alpha1 is the storage version while the objects are written.
		crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = true, false
	}
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.DeleteCRD(context.Background(), crd.Name) })
	storedAt := orString(s.storedAt, crd.Spec.Versions[len(crd.Spec.Versions)-1].Name)
	for i := range 2 {
		spec := map[string]any{"size": int64(i + 1)}
		if storedAt == "v1alpha1" {
			spec = map[string]any{"replicas": int64(i + 1)}
		}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": s.group + "/" + storedAt, "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%d", i), "namespace": ns}, "spec": spec}}
		gvr := schema.GroupVersionResource{Group: s.group, Version: storedAt, Resource: "widgets"}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	if storedAt != crd.Spec.Versions[len(crd.Spec.Versions)-1].Name {
		if _, err := sb.InstallCRD(ctx, s.crd); err != nil { // v1 storage again
			t.Fatal(err)
		}
	}
}

// diagnose runs doctor as from inside the cluster: the pod network is
// reachable (the test dials each pod address's loopback listener).
func (s *setupState) diagnose(t *testing.T, timeout time.Duration) *doctor.Report {
	t.Helper()
	clients, err := doctor.NewClients(sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	local := map[string]string{}
	for _, r := range s.replicas {
		local[r.podAddr] = r.listener.Addr().String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	report, err := doctor.Run(ctx, clients, s.crd.Name, doctor.Options{Planned: s.planned, Timeout: orDuration(timeout, 20*time.Second), DialTimeout: time.Second,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			to, ok := local[addr]
			if !ok {
				return nil, fmt.Errorf("dial tcp %s: no route to host (not this set-up's pod)", addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, to)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return report
}

// runCLI runs `hubspoke doctor` with the sandbox's kubeconfig, as from a
// user's terminal with a proxy into the pod network, and checks its exit
// status and first error.
func (s *setupState) runCLI(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	// The pod network is reached through the sandbox's proxy: a dial to a
	// pod address from here must never leave loopback.
	args := []string{"doctor", "--kubeconfig", sb.KubeconfigPath(), "--dial-timeout", "1s", "--timeout", orDuration(timeout, 20*time.Second).String(),
		"--pod-network-proxy", sb.PodNetworkProxy(), "-o", "json", s.crd.Name}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	var got struct {
		Cause *doctor.Finding `json:"cause"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("hubspoke %s: exit %d, output not JSON: %v\n%s%s", strings.Join(args, " "), code, err, stdout.String(), stderr.String())
	}
	switch {
	case want == "" && (code != 0 || got.Cause != nil):
		t.Errorf("hubspoke doctor on a healthy set-up: exit %d, cause %+v\n%s", code, got.Cause, stderr.String())
	case want != "" && (code != 1 || got.Cause == nil || got.Cause.Check != want):
		t.Errorf("hubspoke doctor: exit %d, cause %+v; want exit 1 and %s\n%s", code, got.Cause, want, stderr.String())
	}
}

// reviewTap breaks a correct webhook's answers in one way.
type reviewTap struct {
	next      http.Handler
	refuseTo  string        // fail reviews whose desiredAPIVersion is this
	uid       string        // answer with this uid
	onlyV1    bool          // refuse apiextensions.k8s.io/v1beta1 reviews
	dropBatch bool          // return one object less for a review of several
	status    int           // answer this HTTP status and a text instead of a review
	sleep     time.Duration // answer after this long
}

func (r *reviewTap) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID               string `json:"uid"`
			DesiredAPIVersion string `json:"desiredAPIVersion"`
		} `json:"request"`
	}
	_ = json.Unmarshal(body, &in)
	if r.sleep > 0 {
		time.Sleep(r.sleep)
	}
	switch {
	case r.status != 0:
		http.Error(w, "conversion failed: panic: assignment to entry in nil map", r.status)
		return
	case r.onlyV1 && in.APIVersion != "apiextensions.k8s.io/v1":
		http.Error(w, "this webhook reads apiextensions.k8s.io/v1 ConversionReviews only", http.StatusBadRequest)
		return
	case r.refuseTo != "" && in.Request.DesiredAPIVersion == r.refuseTo:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"ConversionReview","response":{"uid":%q,"result":{"status":"Failure","message":"no conversion to %s"}}}`,
			in.APIVersion, in.Request.UID, r.refuseTo)
		return
	}
	rec := &recorder{header: http.Header{}}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.next.ServeHTTP(rec, req)
	out := rec.body.Bytes()
	if r.uid != "" {
		out = bytes.Replace(out, []byte(`"uid":"`+in.Request.UID+`"`), []byte(`"uid":"`+r.uid+`"`), 1)
	}
	if r.dropBatch {
		var rv map[string]any
		if json.Unmarshal(out, &rv) == nil {
			if resp, ok := rv["response"].(map[string]any); ok {
				if objs, _ := resp["convertedObjects"].([]any); len(objs) > 1 {
					resp["convertedObjects"] = objs[:len(objs)-1]
					out, _ = json.Marshal(rv)
				}
			}
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.code())
	w.Write(out)
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.status = code }
func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func ptrTo[T any](v T) *T { return &v }

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
