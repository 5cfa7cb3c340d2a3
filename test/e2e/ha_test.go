package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/rotate"
	"github.com/hubspoke/hubspoke/sandbox"
)

// The HA test's deployment: its own group, namespace and Service, so that
// it shares nothing with the package's other tests.
const (
	haNamespace = "hubspoke-ha"
	haName      = "widgets-webhook"
	haGroup     = "ha.example.com"
	haPods      = 3
)

// TestHA runs the webhook as `hubspoke deploy --certs hubspoke` deploys
// it: the manifests applied with kubectl, then three hubspoke-webhook
// processes started with the Deployment's arguments behind the Service,
// each an endpoint whose ready condition follows its /readyz, and the
// Secret and ConfigMap copied into their volumes as the kubelet does.
// Under continuous reads and writes through both versions (client-go and
// kubectl) it restarts each process in turn (SIGTERM, drain, start) and
// rotates the CA and the serving certificate with package rotate: no API
// request may fail. Then it switches the certificate before the API
// server trusts its CA, the unsafe order, and counts the failures the safe
// order avoided.
//
// The webhooks are real processes of the slim binary, built here: the
// path under test is the one a pod takes -- SIGTERM delivered by the
// kernel, the binary's signal handling, the server's drain, the process's
// exit and a cold start reading the volume -- which an in-process server
// would skip.
func TestHA(t *testing.T) {
	// The webhook binary is built while the sequential tests run.
	bin := filepath.Join(t.TempDir(), "hubspoke-webhook")
	built := make(chan error, 1)
	go func() {
		out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hubspoke-webhook").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build: %w\n%s", err, out)
		}
		built <- err
	}()
	// Its own group, namespace and processes; mostly waiting (drains,
	// restarts, the API server picking up a caBundle), so it runs beside
	// the other parallel tests, after the sequential ones.
	t.Parallel()
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := newHA(t, ctx, bin)

	// Phase 1: steady load (the first create after a CRD is established
	// can take seconds; wait for the writers to be under way).
	h.load.start(ctx, t, h)
	for h.load.snapshot().clientGo < 20 {
		if ctx.Err() != nil {
			t.Fatal("no load after the start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.phase("steady", time.Second)

	// Phase 2: restart every pod in turn.
	for _, p := range h.pods {
		h.restart(ctx, t, p)
		h.phase("after restarting "+p.name, 500*time.Millisecond)
	}

	// Phase 3: rotate the CA and the serving certificate, safe order.
	// The wait for the pods to serve the new certificate is the one
	// `hubspoke certs rotate` uses: each pod's /metrics through the API
	// server's pod proxy. A warning means it fell back to waiting blind.
	warned := &warnings{}
	res, err := rotate.Rotate(ctx, h.clients, rotate.Options{
		Namespace: haNamespace, Name: haName, ForceCA: true,
		TrustWait: 2 * time.Second, PollInterval: 100 * time.Millisecond,
		ServingWait: rotate.PodsServingWait(h.clients, haNamespace, haName, 30*time.Second, slog.New(warned)),
		Logger:      testLogger(t),
	})
	if warned.n.Load() > 0 {
		t.Errorf("the pods could not be asked through the pod proxy: %s", warned.first.Load())
	}
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	var steps []string
	for _, s := range res.Steps {
		steps = append(steps, s.Name)
	}
	if want := []string{"new-ca", "add-ca", "switch-serving", "drop-old-ca"}; !slices.Equal(steps, want) {
		t.Errorf("rotation steps %v, want %v", steps, want)
	}
	// The API server keeps its connections to the webhook open, so a new
	// certificate is met on new connections: restart every pod again.
	for _, p := range h.pods {
		h.restart(ctx, t, p)
	}
	h.phase("after the safe rotation and restarts", time.Second)
	safe := h.load.snapshot()
	conversions := h.conversions(t)
	t.Logf("safe: %s; %d objects converted by the webhooks; rotation probes %d",
		safe, conversions, res.Probes)
	if safe.failed > 0 {
		t.Errorf("%d of %d API requests failed during restarts and the safe rotation; first: %v", safe.failed, safe.total, safe.first)
	}
	if safe.clientGo < 100 || safe.kubectl < 5 || conversions < 100 {
		t.Errorf("too little load to prove anything: %s, %d conversions", safe, conversions)
	}

	// Phase 4: the unsafe order. A new CA's certificate goes into the
	// Secret while the caBundle holds only the current CA.
	h.load.reset()
	rogue, err := pki.NewCA(pki.CAOptions{CommonName: "not yet trusted CA"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := rogue.IssueService(haNamespace, haName, pki.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.writeServingSecret(ctx, t, cert)
	if err := h.waitServed(ctx, cert.Cert); err != nil {
		t.Fatal(err)
	}
	h.phase("serving a certificate of an untrusted CA, connections kept", time.Second)
	kept := h.load.snapshot()
	// Connections opened before the switch go on working; the next new
	// ones -- here after a routine restart of each pod, as a node drain
	// makes -- fail.
	for _, p := range h.pods {
		h.restart(ctx, t, p)
	}
	h.phase("serving a certificate of an untrusted CA, after restarts", time.Second)
	unsafe := h.load.snapshot()
	t.Logf("unsafe: while connections were kept: %s", kept)
	t.Logf("unsafe: %s; first failure: %v", unsafe, unsafe.first)
	if unsafe.failed == 0 {
		t.Errorf("switching to a certificate of an untrusted CA failed no request (%s): the test cannot tell the orders apart", unsafe)
	} else if !strings.Contains(fmt.Sprint(unsafe.first), "x509: certificate signed by unknown authority") {
		t.Errorf("unsafe order: first failure %v, want the API server's x509 error", unsafe.first)
	}

	// Repair: rotate resumes from what the cluster holds and re-issues the
	// serving certificate from the CA the bundles trust.
	if _, err := rotate.Rotate(ctx, h.clients, rotate.Options{Namespace: haNamespace, Name: haName,
		TrustWait: time.Second, PollInterval: 100 * time.Millisecond, ServingWait: h.waitServed, Logger: testLogger(t)}); err != nil {
		t.Fatalf("rotate (repair): %v", err)
	}
	// The command line on the same deployment: nothing is due now; a
	// forced CA rotation in a dry run lists the four steps.
	certsArgs := []string{"certs", "rotate", "--kubeconfig", sb.KubeconfigPath(), "-n", haNamespace, "--name", haName}
	if out := string(hubspokeCLI(t, certsArgs...)); !strings.HasPrefix(out, "nothing due") {
		t.Errorf("hubspoke certs rotate: %q, want nothing due", out)
	}
	out := string(hubspokeCLI(t, append(certsArgs, "--force-ca", "--dry-run=client")...))
	for _, step := range []string{"new-ca", "add-ca", "switch-serving", "drop-old-ca"} {
		if !strings.Contains(out, "(dry run) "+step+": ") {
			t.Errorf("hubspoke certs rotate --force-ca --dry-run=client does not list %s:\n%s", step, out)
		}
	}

	// Re-rendering the running deployment with --reuse-certs and applying
	// it changes no certificate and no caBundle (a plain re-render would
	// make a new CA: the unsafe order).
	before := h.certState(ctx, t)
	rerender := hubspokeCLI(t, "deploy", "-f", h.crdFile, "--rules", h.rulesFile, "--certs", "hubspoke",
		"-n", haNamespace, "--name", haName, "--replicas", fmt.Sprint(haPods), "--shutdown-delay", "2s", "--shutdown-grace", "10s",
		"--reuse-certs", "--kubeconfig", sb.KubeconfigPath())
	if out, stderr, err := kubectlStdin(t, rerender, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
	}
	if after := h.certState(ctx, t); after != before {
		t.Errorf("re-applying deploy --reuse-certs changed the certificates:\nbefore %s\nafter  %s", before, after)
	}

	h.load.reset()
	h.phase("after the repair", 2*time.Second)
	after := h.load.stop()
	t.Logf("after the repair: %s", after)
	if after.failed > 0 {
		t.Errorf("requests still fail after the repair: %s; first: %v", after, after.first)
	}
}

// ha is the test's cluster side: the deployment, its pods and the load.
type ha struct {
	t       *testing.T
	bin     string
	clients rotate.Clients
	core    kubernetes.Interface
	dyn     dynamic.Interface
	pods    []*haPod
	load    *haLoad
	// crdFile and rulesFile are the CRD and rules in the test's group.
	crdFile, rulesFile string
	// converted counts the objects converted by processes since stopped.
	converted int

	kubeletStop func()
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return nil
}

// newHA deploys the webhook with bin, the slim webhook binary.
func newHA(t *testing.T, ctx context.Context, bin string) *ha {
	dir := t.TempDir()
	h := &ha{t: t, bin: bin, load: &haLoad{}}

	// The Widget example in its own group.
	crd, err := os.ReadFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rulesData, err := os.ReadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h.crdFile, h.rulesFile = filepath.Join(dir, "crd.yaml"), filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(h.crdFile, []byte(strings.ReplaceAll(string(crd), "example.com", haGroup)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.rulesFile, []byte(strings.ReplaceAll(string(rulesData), "example.com", haGroup)), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := deploy.LoadInputs([]string{h.crdFile}, []string{h.rulesFile}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Render(in, deploy.Options{Namespace: haNamespace, Name: haName, Certs: deploy.Hubspoke,
		Replicas: haPods, ShutdownDelay: 2 * time.Second, ShutdownGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var manifests bytes.Buffer
	if err := deploy.WriteYAML(&manifests, objs); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := kubectlStdin(t, manifests.Bytes(), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, out, stderr)
	}
	crdName := "widgets." + haGroup
	if out, stderr, err := kubectlStdin(t, nil, "wait", "--for=condition=Established", "crd/"+crdName); err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}

	cfg := rest.CopyConfig(sb.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0
	if h.core, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ext, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	h.clients = rotate.Clients{Core: h.core, APIExtensions: ext, Dynamic: h.dyn}

	// The pods, as the Deployment describes them.
	dep, err := h.core.(*kubernetes.Clientset).AppsV1().Deployments(haNamespace).Get(ctx, haName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := h.core.CoreV1().ConfigMaps(haNamespace).Get(ctx, haName+"-rules", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := h.core.CoreV1().Secrets(haNamespace).Get(ctx, deploy.ServingSecretName(haName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range haPods {
		p := newHAPod(t, h.bin, fmt.Sprintf("%s-%d", haName, i), filepath.Join(dir, fmt.Sprint("pod", i)), dep, rules, secret)
		h.pods = append(h.pods, p)
	}
	t.Cleanup(func() {
		for _, p := range h.pods {
			p.kill()
		}
	})
	for _, p := range h.pods {
		p.start(t)
		ep, err := sb.AddEndpoint(ctx, sandbox.EndpointOptions{Namespace: haNamespace, Service: haName, Addr: p.addr, ReadinessPath: "/readyz"})
		if err != nil {
			t.Fatal(err)
		}
		p.ep = ep
		t.Cleanup(func() { _ = ep.Remove(context.Background()) })
		h.createPod(ctx, t, dep, p)
	}
	h.startKubelet(ctx, t)
	t.Cleanup(h.kubeletStop)
	h.waitServing(ctx, t)
	return h
}

// waitServing returns once every pod's endpoint is ready and the API
// server converts through the Service: the endpoints start unready (the
// readiness probe turns them ready) and the API server learns of them
// from its EndpointSlice informer, so a load started at once may meet "no
// endpoints available", which is the setup, not the restarts or the
// rotations, the test is about.
func (h *ha) waitServing(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, p := range h.pods {
		eventually(t, p.name+" ready", func() error {
			if !p.ep.Ready() {
				return errors.New("endpoint not ready")
			}
			return nil
		})
	}
	probes := h.dyn.Resource(schema.GroupVersionResource{Group: haGroup, Version: "v1alpha1", Resource: "widgets"}).Namespace(haNamespace)
	n := 0
	eventually(t, "a conversion through the Service", func() error {
		n++
		name := fmt.Sprintf("serving-probe-%d", n)
		if _, err := probes.Create(ctx, haWidget("v1alpha1", name, 0), metav1.CreateOptions{}); err != nil {
			return err
		}
		return probes.Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// phase lets the load run for d.
func (h *ha) phase(name string, d time.Duration) {
	time.Sleep(d)
	if testing.Verbose() {
		h.t.Logf("%s: %s", name, h.load.snapshot())
	}
}

// restart stops p as the kubelet stops a container (SIGTERM, then the
// grace period), checks that its endpoint turned unready while the process
// still served, and starts it again.
func (h *ha) restart(ctx context.Context, t *testing.T, p *haPod) {
	t.Helper()
	h.converted += objectsConverted(t, p.addr)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	unreadyFirst := false
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-p.exited:
			if err != nil {
				t.Fatalf("%s exited with %v after SIGTERM\n%s", p.name, err, p.log.String())
			}
			if !unreadyFirst {
				t.Errorf("%s stopped serving before its endpoint turned unready", p.name)
			}
			p.start(t)
			for !p.ep.Ready() {
				if time.Now().After(deadline) || ctx.Err() != nil {
					t.Fatalf("%s: not ready again after its restart\n%s", p.name, p.log.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			return
		case <-time.After(20 * time.Millisecond):
			if !p.ep.Ready() {
				unreadyFirst = true
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not exit within 30 s of SIGTERM", p.name)
			}
		}
	}
}

// waitServed returns once every pod serves cert (a TLS handshake with each
// returns it as the leaf).
func (h *ha) waitServed(ctx context.Context, cert *x509.Certificate) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := true
		for _, p := range h.pods {
			if !servesCert(p.addr, cert) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the pods do not serve the new certificate after 30 s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func servesCert(addr string, cert *x509.Certificate) bool {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) // the leaf is compared, not verified
	if err != nil {
		return false
	}
	defer conn.Close()
	certs := conn.ConnectionState().PeerCertificates
	return len(certs) > 0 && certs[0].Equal(cert)
}

func (h *ha) writeServingSecret(ctx context.Context, t *testing.T, kp *pki.KeyPair) {
	t.Helper()
	s, err := h.core.CoreV1().Secrets(haNamespace).Get(ctx, deploy.ServingSecretName(haName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[pki.CertFile], s.Data[pki.KeyFile] = kp.CertPEM, kp.KeyPEM
	if _, err := h.core.CoreV1().Secrets(haNamespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startKubelet copies the serving Secret into each pod's volume whenever it
// changes, pod after pod, as the kubelets of different nodes do.
func (h *ha) startKubelet(ctx context.Context, t *testing.T) {
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	h.kubeletStop = func() { cancel(); <-done }
	go func() {
		defer close(done)
		last := ""
		for {
			s, err := h.core.CoreV1().Secrets(haNamespace).Get(kctx, deploy.ServingSecretName(haName), metav1.GetOptions{})
			if err == nil && s.ResourceVersion != last {
				last = s.ResourceVersion
				for _, p := range h.pods {
					if err := p.tls.write(s.Data); err != nil {
						t.Errorf("kubelet: %v", err)
					}
					select {
					case <-kctx.Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
			select {
			case <-kctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// conversions is the number of objects the webhook processes converted,
// from their metrics (hubspoke_conversion_objects_total, result success)
// read before each restart and now.
func (h *ha) conversions(t *testing.T) int {
	total := h.converted
	for _, p := range h.pods {
		total += objectsConverted(t, p.addr)
	}
	return total
}

func objectsConverted(t *testing.T, addr string) int {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // a scrape, as Prometheus with insecureSkipVerify
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, review.MetricObjects+"{") || !strings.Contains(line, `result="success"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += v
	}
	return int(total)
}

// certState is the cluster's certificates and caBundle, as one string.
func (h *ha) certState(ctx context.Context, t *testing.T) string {
	t.Helper()
	st, err := rotate.Load(ctx, h.clients, haNamespace, haName)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("CA %x, serving %x, bundle %x", st.CA.Cert.SerialNumber, st.Serving.Cert.SerialNumber, sha256.Sum256(st.CABundle))
}

// createPod stores p as a Pod of the Deployment's template, as the
// ReplicaSet controller and the kubelet would: admitted under the
// namespace's restricted Pod Security Standard, then running and ready at
// the endpoint's address, so that the API server's pod proxy reaches it.
func (h *ha) createPod(ctx context.Context, t *testing.T, dep *appsv1.Deployment, p *haPod) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: haNamespace, Labels: dep.Spec.Template.Labels, Annotations: dep.Spec.Template.Annotations},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	created, err := h.core.CoreV1().Pods(haNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s from the Deployment's template: %v", p.name, err)
	}
	ip := p.ep.IP().String()
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
	}
	if _, err := h.core.CoreV1().Pods(haNamespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pod %s status: %v", p.name, err)
	}
}

// warnings is a slog handler that counts warnings and keeps the first.
type warnings struct {
	n     atomic.Int64
	first atomic.Value
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if w.n.Add(1) == 1 {
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		w.first.Store(msg)
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// haPod is one webhook process with its volumes.
type haPod struct {
	name string
	addr string
	args []string
	tls  *volume
	bin  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
	log    *syncBuffer
	ep     *sandbox.Endpoint
}

func newHAPod(t *testing.T, bin, name, dir string, dep *appsv1.Deployment, rules *corev1.ConfigMap, secret *corev1.Secret) *haPod {
	t.Helper()
	p := &haPod{name: name, bin: bin, tls: &volume{dir: filepath.Join(dir, "tls")}, log: &syncBuffer{}}
	rulesDir := filepath.Join(dir, "rules")
	for _, d := range []string{p.tls.dir, rulesDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range rules.Data {
		if err := os.WriteFile(filepath.Join(rulesDir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.tls.write(secret.Data); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	ln.Close()
	// The container's arguments, with the volume paths and the listen
	// address of this process.
	c := dep.Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--cert-dir="):
			a = "--cert-dir=" + p.tls.dir
		case strings.HasPrefix(a, "--rules=/etc/hubspoke/rules/"):
			a = "--rules=" + filepath.Join(rulesDir, strings.TrimPrefix(a, "--rules=/etc/hubspoke/rules/"))
		case strings.HasPrefix(a, "--addr="):
			a = "--addr=" + p.addr
		}
		p.args = append(p.args, a)
	}
	// The kubelet's volume updates are simulated within 100 ms; check for
	// them as often.
	p.args = append(p.args, "--cert-reload-interval=100ms")
	return p
}

func (p *haPod) start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p.cmd, p.exited = cmd, exited
}

func (p *haPod) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// volume is a Secret volume written as the kubelet's atomic writer does:
// the files in a fresh timestamped directory, the ..data symlink
// re-pointed with a rename, and each file a symlink through ..data.
type volume struct {
	dir string
	n   int
}

func (v *volume) write(data map[string][]byte) error {
	v.n++
	ts := fmt.Sprintf("..%d", v.n)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if err := os.WriteFile(filepath.Join(v.dir, ts, k), data[k], 0o600); err != nil {
			return err
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		return err
	}
	for k := range data {
		link := filepath.Join(v.dir, k)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", k), link); err != nil {
			return err
		}
	}
	if v.n > 1 {
		return os.RemoveAll(filepath.Join(v.dir, fmt.Sprintf("..%d", v.n-1)))
	}
	return nil
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

// haLoad reads and writes Widgets through both versions until stopped,
// with client-go and with kubectl, and counts the requests and failures.
type haLoad struct {
	clientGo, kubectl, failed atomic.Int64
	mu                        sync.Mutex
	first                     error
	cancel                    context.CancelFunc
	wg                        sync.WaitGroup
}

type loadCounts struct {
	clientGo, kubectl, total, failed int64
	first                            error
}

func (c loadCounts) String() string {
	return fmt.Sprintf("%d API requests (%d client-go, %d kubectl), %d failed", c.total, c.clientGo, c.kubectl, c.failed)
}

func (l *haLoad) snapshot() loadCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := loadCounts{clientGo: l.clientGo.Load(), kubectl: l.kubectl.Load(), failed: l.failed.Load(), first: l.first}
	c.total = c.clientGo + c.kubectl
	return c
}

func (l *haLoad) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clientGo.Store(0)
	l.kubectl.Store(0)
	l.failed.Store(0)
	l.first = nil
}

func (l *haLoad) record(counter *atomic.Int64, what string, err error) {
	counter.Add(1)
	if err == nil {
		return
	}
	l.failed.Add(1)
	l.mu.Lock()
	if l.first == nil {
		l.first = fmt.Errorf("%s: %w", what, err)
	}
	l.mu.Unlock()
}

func (l *haLoad) stop() loadCounts {
	l.cancel()
	l.wg.Wait()
	return l.snapshot()
}

func (l *haLoad) start(ctx context.Context, t *testing.T, h *ha) {
	ctx, l.cancel = context.WithCancel(ctx)
	t.Cleanup(func() { l.cancel(); l.wg.Wait() })
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: haGroup, Version: v, Resource: "widgets"}
	}
	// Two client-go writers, one per version, each reading back through the
	// other version; their objects stay few (each deletes what it made
	// twenty creates ago).
	for w, versions := range [][2]string{{"v1alpha1", "v1"}, {"v1", "v1alpha1"}} {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			write, read := versions[0], versions[1]
			var created []string // oldest first
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				obj := haWidget(write, name, i)
				_, err := h.dyn.Resource(gvr(write)).Namespace(haNamespace).Create(ctx, obj, metav1.CreateOptions{})
				if ctx.Err() != nil {
					return
				}
				l.record(&l.clientGo, "create "+write, err)
				if err == nil {
					created = append(created, name)
				}
				got, err := h.dyn.Resource(gvr(read)).Namespace(haNamespace).Get(ctx, name, metav1.GetOptions{})
				if ctx.Err() != nil {
					return
				}
				l.record(&l.clientGo, "get "+read, err)
				if err == nil {
					_ = unstructured.SetNestedField(got.Object, "updated", "metadata", "labels", "phase")
					_, err = h.dyn.Resource(gvr(read)).Namespace(haNamespace).Update(ctx, got, metav1.UpdateOptions{})
					if ctx.Err() != nil {
						return
					}
					l.record(&l.clientGo, "update "+read, err)
				}
				_, err = h.dyn.Resource(gvr(read)).Namespace(haNamespace).List(ctx, metav1.ListOptions{})
				if ctx.Err() != nil {
					return
				}
				l.record(&l.clientGo, "list "+read, err)
				if len(created) > 20 {
					err = h.dyn.Resource(gvr(write)).Namespace(haNamespace).Delete(ctx, created[0], metav1.DeleteOptions{})
					if ctx.Err() != nil {
						return
					}
					l.record(&l.clientGo, "delete "+write, err)
					// Not retried: a delete whose answer failed to
					// convert may still have deleted the object.
					created = created[1:]
				}
			}
		}()
	}
	// kubectl, as a user: list through both versions.
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		path, err := exec.LookPath("kubectl")
		if err != nil {
			t.Errorf("kubectl: %v", err)
			return
		}
		for i := 0; ctx.Err() == nil; i++ {
			v := []string{"v1alpha1", "v1"}[i%2]
			cmd := exec.CommandContext(ctx, path, "--kubeconfig", sb.KubeconfigPath(), "get", "widgets."+v+"."+haGroup, "-n", haNamespace, "-o", "name")
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				err = fmt.Errorf("%w: %s", err, out)
			}
			l.record(&l.kubectl, "kubectl get widgets."+v, err)
		}
	}()
}

func haWidget(version, name string, i int) *unstructured.Unstructured {
	size := "size"
	if version == "v1alpha1" {
		size = "replicas"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": haGroup + "/" + version,
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": haNamespace},
		"spec":       map[string]any{size: int64(i % 10)},
	}}
}
