package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/sandbox"
)

// kubectlRun runs kubectl against the sandbox with stdin and returns its
// stdout, stderr and exit code; kubectl failing to start fails t.
func kubectlRun(t *testing.T, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not installed: %v", err)
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", sb.KubeconfigPath()}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestKubectlOnTheSandbox drives the sandbox with kubectl as a user drives
// a cluster: what failed on the apiextensions-only sandbox.
func TestKubectlOnTheSandbox(t *testing.T) {
	t.Parallel() // its own namespace
	const kns = "kubectl-e2e"
	kubectl(t, "create", "namespace", kns)

	t.Run("version", func(t *testing.T) {
		var v struct {
			ServerVersion struct {
				GitVersion string `json:"gitVersion"`
				Major      string `json:"major"`
				Minor      string `json:"minor"`
			} `json:"serverVersion"`
		}
		out := kubectl(t, "version", "-o", "json")
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("kubectl version: %v\n%s", err, out)
		}
		if v.ServerVersion.GitVersion != sandbox.KubernetesVersion || v.ServerVersion.Major != "1" || v.ServerVersion.Minor != "37" {
			t.Errorf("server version %+v, want %s (1.37)", v.ServerVersion, sandbox.KubernetesVersion)
		}
	})

	t.Run("namespaces", func(t *testing.T) {
		out := string(kubectl(t, "get", "namespaces", "-o", "name"))
		for _, want := range []string{"namespace/default", "namespace/kube-system", "namespace/kube-public", "namespace/" + kns} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("kubectl get namespaces lacks %s:\n%s", want, out)
			}
		}
	})

	t.Run("core and apps objects", func(t *testing.T) {
		kubectl(t, "-n", kns, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=2")
		kubectl(t, "-n", kns, "create", "configmap", "settings", "--from-literal=mode=fast")
		kubectl(t, "-n", kns, "create", "secret", "generic", "token", "--from-literal=token=s3cret")
		kubectl(t, "-n", kns, "create", "service", "clusterip", "web", "--tcp=443:9443")
		out := string(kubectl(t, "-n", kns, "get", "deployment,configmap,secret,service", "-o", "name"))
		for _, want := range []string{"deployment.apps/web", "configmap/settings", "secret/token", "service/web"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("kubectl get lacks %s:\n%s", want, out)
			}
		}
		// Validation is the real one: a Deployment without a selector
		// is refused as by a cluster.
		bad := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"x"}]}}}}`)
		_, stderr, code := kubectlRun(t, bad, "-n", kns, "apply", "-f", "-")
		if code == 0 || !strings.Contains(stderr, "spec.selector: Required value") {
			t.Errorf("apply of a Deployment without a selector: exit %d, stderr %q; want it refused for spec.selector", code, stderr)
		}
	})

	t.Run("explain", func(t *testing.T) {
		if out := string(kubectl(t, "explain", "deployment.spec.replicas")); !strings.Contains(out, "FIELD: replicas <integer>") {
			t.Errorf("kubectl explain deployment.spec.replicas:\n%s", out)
		}
		// A CRD's schema is published too.
		if out := string(kubectl(t, "explain", "widgets.spec", "--api-version=example.com/v1")); !strings.Contains(out, "size") {
			t.Errorf("kubectl explain widgets.spec (v1) lacks size:\n%s", out)
		}
	})

	t.Run("auth can-i", func(t *testing.T) {
		if out, _, code := kubectlRun(t, nil, "auth", "can-i", "create", "customresourcedefinitions"); code != 0 || out != "yes\n" {
			t.Errorf("admin can-i create crds: %q (exit %d), want yes", out, code)
		}
		// RBAC is enforced: a service account with no binding may not.
		as := "--as=system:serviceaccount:" + kns + ":nobody"
		if out, _, code := kubectlRun(t, nil, "auth", "can-i", "list", "widgets.example.com", "-n", kns, as); code != 1 || out != "no\n" {
			t.Errorf("unbound service account can-i list widgets: %q (exit %d), want no (exit 1)", out, code)
		}
		kubectl(t, "-n", kns, "create", "role", "widget-reader", "--verb=get,list", "--resource=widgets.example.com")
		kubectl(t, "-n", kns, "create", "rolebinding", "nobody-reads", "--role=widget-reader", "--serviceaccount="+kns+":nobody")
		if out, _, code := kubectlRun(t, nil, "auth", "can-i", "list", "widgets.example.com", "-n", kns, as); code != 0 || out != "yes\n" {
			t.Errorf("bound service account can-i list widgets: %q (exit %d), want yes", out, code)
		}
	})

	t.Run("saved list re-applied", func(t *testing.T) {
		for _, name := range []string{"saved-a", "saved-b"} {
			w := []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"replicas":2}}`)
			if _, stderr, code := kubectlRun(t, w, "-n", kns, "apply", "-f", "-"); code != 0 {
				t.Fatalf("apply %s: %s", name, stderr)
			}
		}
		saved := kubectl(t, "-n", kns, "get", "widgets.v1.example.com", "-o", "yaml")
		if !bytes.Contains(saved, []byte("kind: List")) {
			t.Fatalf("kubectl get -o yaml is not a List:\n%s", saved)
		}
		file := filepath.Join(t.TempDir(), "widgets.yaml")
		if err := os.WriteFile(file, saved, 0o600); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := kubectlRun(t, nil, "-n", kns, "apply", "-f", file)
		if code != 0 {
			t.Fatalf("re-apply the saved list: exit %d\n%s", code, stderr)
		}
		for _, name := range []string{"saved-a", "saved-b"} {
			if !strings.Contains(out, "widget.example.com/"+name+" ") {
				t.Errorf("re-apply output lacks %s:\n%s", name, out)
			}
		}
	})

	t.Run("hubspoke convert piped to kubectl apply", func(t *testing.T) {
		var converted, stderr bytes.Buffer
		code := cli.Main(context.Background(), []string{"convert", "-f", "../../examples/widget/widget-v1alpha1.yaml",
			"--to", "example.com/v1", "--rules", "../../examples/widget/conversion.yaml"},
			strings.NewReader(""), &converted, &stderr)
		if code != 0 {
			t.Fatalf("hubspoke convert: exit %d\n%s", code, stderr.String())
		}
		in := bytes.Replace(converted.Bytes(), []byte("name: my-widget"), []byte("name: piped"), 1)
		in = bytes.Replace(in, []byte("namespace: default"), []byte("namespace: "+kns), 1)
		if out, stderr, code := kubectlRun(t, in, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "widget.example.com/piped created") {
			t.Fatalf("kubectl apply of hubspoke convert's output: exit %d\n%s%s\ninput:\n%s", code, out, stderr, in)
		}
		got, err := dyn.Resource(widgets.gvr("v1alpha1")).Namespace(kns).Get(context.Background(), "piped", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 3 {
			t.Errorf("piped widget read through v1alpha1: spec %v, want replicas 3", got.Object["spec"])
		}
	})
}

// serviceCRD is the Widget example in group, converting through the Service
// namespace/name, stored as v1alpha1 so that reads through v1 convert.
func serviceCRD(t *testing.T, group, namespace, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	base, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := rename(base, group)
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = namespace
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = name
	crd.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1alpha1"
	}
	return crd
}

// eventually retries f every 50 ms until it returns nil or a minute passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after a minute", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServiceCertificateName: the API server checks the webhook's
// certificate against NAME.NAMESPACE.svc, as in a cluster, and accepts the
// webhook once its certificate carries the name.
func TestServiceCertificateName(t *testing.T) {
	t.Parallel() // its own group and Service
	ctx := context.Background()
	const svcNS, svcName, group = "hubspoke-system", "named", "named.example.com"
	noName, err := sandbox.NewCert("CA without the service name", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := newHandWebhook(noName)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.register(sb, svcNS, svcName, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.InstallCRD(ctx, serviceCRD(t, group, svcNS, svcName)); err != nil {
		t.Fatal(err)
	}
	c := crdVersions{group: group, resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
		"spec":     map[string]any{"replicas": int64(1)},
	}}
	if _, err := dyn.Resource(c.gvr("v1alpha1")).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CA is injected asynchronously: until then the error is about the
	// unknown authority; then it is the name.
	want := "x509: certificate is valid for localhost, not " + svcName + "." + svcNS + ".svc"
	eventually(t, "read through v1 with a certificate lacking the service name", func() error {
		_, err := dyn.Resource(c.gvr("v1")).Namespace(ns).Get(ctx, "w", metav1.GetOptions{})
		if err == nil {
			t.Fatal("read through v1 succeeded with a certificate lacking the service name")
		}
		if !strings.Contains(err.Error(), want) {
			return err
		}
		return nil
	})
	if bad.objects.Load() != 0 {
		t.Errorf("the webhook converted %d objects over TLS the API server should have refused", bad.objects.Load())
	}

	// A certificate with the name, in a new "pod"; the old one goes.
	good, err := startHandWebhook(sb, svcNS, svcName)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := bad.endpoint.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "read through v1 with the service name in the certificate", func() error {
		got, err := dyn.Resource(c.gvr("v1")).Namespace(ns).Get(ctx, "w", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 1 {
			t.Fatalf("read through v1: spec %v, want size 1", got.Object["spec"])
		}
		return nil
	})
	if good.objects.Load() == 0 {
		t.Error("the webhook with the right certificate converted nothing")
	}
}

// TestNotReadyEndpointGetsNoConversions: the API server sends conversions
// only to ready endpoints of the Service, choosing when it connects.
func TestNotReadyEndpointGetsNoConversions(t *testing.T) {
	t.Parallel() // its own group and Service
	ctx := context.Background()
	const svcNS, svcName, group = "hubspoke-system", "pair", "pair.example.com"
	// Two "pods" of one Deployment: the same certificate.
	cert, err := sandbox.NewServiceCert(svcNS, svcName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newHandWebhook(cert)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.register(sb, svcNS, svcName, ""); err != nil {
		t.Fatal(err)
	}
	b, err := newHandWebhook(cert)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.notReady.Store(true)
	if err := b.register(sb, svcNS, svcName, "/readyz"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.InstallCRD(ctx, serviceCRD(t, group, svcNS, svcName)); err != nil {
		t.Fatal(err)
	}
	c := crdVersions{group: group, resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": ns},
		"spec":     map[string]any{"replicas": int64(1)},
	}}
	if _, err := dyn.Resource(c.gvr("v1alpha1")).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		_, err := dyn.Resource(c.gvr("v1")).Namespace(ns).Get(ctx, "w", metav1.GetOptions{})
		return err
	}
	eventually(t, "first conversion", read)
	for range 20 {
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.objects.Load(); got != 0 || b.endpoint.Ready() {
		t.Fatalf("endpoint b, never ready, converted %d objects (ready %v)", got, b.endpoint.Ready())
	}
	if a.objects.Load() < 21 {
		t.Fatalf("endpoint a converted %d objects, want all 21", a.objects.Load())
	}

	// a goes not ready: with b not ready either, the Service has no ready
	// endpoint. The API server resolves the Service when it connects, so
	// a's open connections are cut (as a pod shutting down closes them).
	if err := a.endpoint.SetReady(ctx, false); err != nil {
		t.Fatal(err)
	}
	noEndpoints := `no endpoints available for service "` + svcName + `"`
	eventually(t, "reads once no endpoint is ready", func() error {
		a.CloseClientConnections()
		err := read()
		if err != nil && strings.Contains(err.Error(), noEndpoints) {
			return nil
		}
		return fmt.Errorf("read answered %v, want %s", err, noEndpoints)
	})
	aConversions := a.objects.Load()

	b.notReady.Store(false)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := b.endpoint.WaitReady(waitCtx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "read once b is ready", read)
	for range 20 {
		if err := read(); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.objects.Load(); got != aConversions {
		t.Errorf("endpoint a, not ready, converted %d more objects", got-aConversions)
	}
	if b.objects.Load() < 21 {
		t.Errorf("endpoint b, ready, converted %d objects, want all 21", b.objects.Load())
	}

	// b's /readyz fails: after the kubelet's three failed probes its
	// endpoint is not ready again.
	b.notReady.Store(true)
	eventually(t, "b not ready after its probe fails", func() error {
		if b.endpoint.Ready() {
			return errors.New("still ready")
		}
		return nil
	})
}
