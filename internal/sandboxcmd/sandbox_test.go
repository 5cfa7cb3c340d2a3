package sandboxcmd_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/internal/sandboxcmd"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func hubspoke(ctx context.Context, stdout, stderr *syncBuffer, args ...string) int {
	return cli.Main(ctx, args, strings.NewReader(""), stdout, stderr, sandboxcmd.NewSandboxCmd, sandboxcmd.NewDemoCmd)
}

// TestSandbox runs `hubspoke sandbox --serve ... --crd ...
// --controller-manager` (the package's one sandbox), converts a Widget
// through the in-process webhook with a client built from the printed
// kubeconfig, sees kube-controller-manager's service account controller
// at work, then interrupts the command.
func TestSandbox(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- hubspoke(ctx, &stdout, &stderr, "sandbox",
			"--serve", "../../examples/widget/conversion.yaml",
			"--crd", "../../examples/widget/crd.yaml",
			"--kubeconfig", kubeconfig, "--controller-manager")
	}()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(stdout.String(), "Ctrl-C") {
		select {
		case code := <-exit:
			t.Fatalf("hubspoke sandbox exited with %d before it was ready\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		case <-deadline:
			t.Fatalf("hubspoke sandbox not ready\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	out := stdout.String()
	for _, want := range []string{
		"kubeconfig: " + kubeconfig + "\n",
		"KUBECONFIG=" + kubeconfig + " kubectl",
		"service hubspoke-system/hubspoke-webhook -> pod 10.244.",
		"(listening on 127.0.0.1:",
		"installed:  widgets.example.com",
		"/convert, converting Widget.example.com",
		"metrics:    https://127.0.0.1:",
		"controllers: kube-controller-manager (garbage-collector-controller, namespace-controller,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	dataDir := regexp.MustCompile(`data in (\S+)\)`).FindStringSubmatch(out)
	if dataDir == nil {
		t.Fatalf("stdout names no data directory:\n%s", out)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	widgets := func(version string) dynamic.ResourceInterface {
		return dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: version, Resource: "widgets"}).Namespace("default")
	}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"replicas": int64(3)},
	}}
	if _, err := widgets("v1alpha1").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through v1alpha1: %v", err)
	}
	got, err := widgets("v1").Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through v1: %v", err)
	}
	if diff := cmp.Diff(map[string]any{"size": int64(3)}, got.Object["spec"]); diff != "" {
		t.Errorf("spec through v1 (-want +got):\n%s", diff)
	}

	// kube-controller-manager runs: its service account controller gives
	// the namespace its default ServiceAccount, which nothing else creates.
	sa := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace("default")
	for saDeadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := sa.Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(saDeadline) {
			t.Fatalf("no ServiceAccount default/default a minute after the start (kube-controller-manager's controller creates it): %v", err)
		}
	}

	// The webhook is a ready endpoint of its Service, as a pod would be.
	slices, err := dyn.Resource(schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}).
		Namespace("hubspoke-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=hubspoke-webhook"})
	if err != nil {
		t.Fatal(err)
	}
	var endpoints []any
	for _, s := range slices.Items {
		eps, _, _ := unstructured.NestedSlice(s.Object, "endpoints")
		endpoints = append(endpoints, eps...)
	}
	if len(endpoints) != 1 {
		t.Fatalf("service hubspoke-system/hubspoke-webhook has %d endpoints, want 1: %v", len(endpoints), endpoints)
	}
	if ready, _, _ := unstructured.NestedBool(endpoints[0].(map[string]any), "conditions", "ready"); !ready {
		t.Errorf("the webhook's endpoint is not ready: %v", endpoints[0])
	}

	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("exit code %d after interrupt, want 0\nstderr:\n%s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("hubspoke sandbox did not stop after interrupt")
	}
	for _, path := range []string{kubeconfig, dataDir[1]} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after exit: %v, want it removed", path, err)
		}
	}
}

// TestSandboxRefuses covers the command lines rejected before anything
// starts: usage errors, exit code 2, with a message that names what is
// wrong and where.
func TestSandboxRefuses(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "config")
	if err := os.WriteFile(foreign, []byte("apiVersion: v1\nkind: Config\ncurrent-context: prod\ncontexts:\n- name: prod\n  context: {cluster: prod}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	widgetCRD, err := os.ReadFile("../../examples/widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeCRD := func(name, old, new string) string {
		t.Helper()
		data := strings.Replace(string(widgetCRD), old, new, 1)
		if data == string(widgetCRD) {
			t.Fatalf("%s: %q not in the widget CRD", name, old)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// Both versions storage: the API server's message quotes every
	// version, schemas included, as Go structures.
	twoStorage := writeCRD("two-storage.yaml", "storage: false", "storage: true")
	badScope := writeCRD("bad-scope.yaml", "scope: Namespaced", "scope: Everywhere")
	badType := writeCRD("bad-type.yaml", "served: true", `served: "yes"`)
	tests := []struct {
		name       string
		args       []string
		wantStderr []string
	}{
		{"argument", []string{"sandbox", "extra"}, []string{"unknown command"}},
		{"service without slash", []string{"sandbox", "--service", "noslash"}, []string{`--service "noslash": want NAMESPACE/NAME`}},
		{"service with empty name", []string{"sandbox", "--service", "ns/"}, []string{`--service "ns/": want NAMESPACE/NAME`}},
		{"bad namespace", []string{"sandbox", "--service", "Bad_NS/hook"}, []string{`--service "Bad_NS/hook": namespace "Bad_NS": a lowercase RFC 1123 label`}},
		{"bad service name", []string{"sandbox", "--service", "ns/9hook"}, []string{`--service "ns/9hook": name "9hook" (a Service name): a DNS-1035 label`}},
		{"relative path", []string{"sandbox", "--path", "convert"}, []string{`--path "convert": want an absolute path`}},
		{"method in path", []string{"sandbox", "--path", "POST /convert"}, []string{`--path "POST /convert": want an absolute path`}},
		{"space in path", []string{"sandbox", "--path", "/con vert"}, []string{`--path "/con vert": segment "con vert": a lowercase RFC 1123 subdomain`}},
		{"wildcard in path", []string{"sandbox", "--path", "/{kind}"}, []string{`--path "/{kind}": segment "{kind}": a lowercase RFC 1123 subdomain`}},
		{"unclean path", []string{"sandbox", "--path", "/a//convert"}, []string{`--path "/a//convert": segment 1 is empty`}},
		{"the server's own path", []string{"sandbox", "--path", "/healthz"}, []string{`--path "/healthz": /healthz is the server's own endpoint`}},
		{"missing rules", []string{"sandbox", "--serve", "nonexistent.yaml"}, []string{"--serve", "nonexistent.yaml"}},
		{"missing crd", []string{"sandbox", "--crd", "nonexistent.yaml"}, []string{"--crd", "nonexistent.yaml"}},
		{"crd refused by the API server", []string{"sandbox", "--crd", twoStorage}, []string{
			"--crd " + twoStorage + ": the API server would refuse CustomResourceDefinition widgets.example.com:",
			twoStorage + ":23: spec.versions: Invalid value:",
			"must have exactly one version marked as storage version",
		}},
		{"crd with a bad scope", []string{"sandbox", "--crd", badScope}, []string{
			badScope + ":12: spec.scope: Unsupported value: \"Everywhere\"",
		}},
		{"crd with a bad type", []string{"sandbox", "--crd", badType}, []string{"--crd: " + badType}},
		{"crd twice", []string{"sandbox", "--crd", "../../examples/widget/crd.yaml", "--crd", "../../examples/widget/crd.yaml"}, []string{
			"--crd ../../examples/widget/crd.yaml: CustomResourceDefinition widgets.example.com is also in ../../examples/widget/crd.yaml",
		}},
		{"foreign kubeconfig", []string{"sandbox", "--kubeconfig", foreign}, []string{"was not written by hubspoke sandbox; refusing to overwrite it"}},
		{"kubeconfig in missing directory", []string{"sandbox", "--kubeconfig", filepath.Join(foreign+".d", "config")}, []string{"--kubeconfig"}},
		{"demo argument", []string{"demo", "extra"}, []string{"unknown command"}},
		{"demo flag", []string{"demo", "--bogus"}, []string{"unknown flag: --bogus"}},
	}
	// Cancelled: a command line that got past the checks would not start
	// a sandbox (and wait for an interrupt) but fail at once, exit 1.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr syncBuffer
			code := hubspoke(cancelled, &stdout, &stderr, tc.args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (usage); stderr:\n%s", code, stderr.String())
			}
			got := stderr.String()
			for _, want := range tc.wantStderr {
				if !strings.Contains(got, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got)
				}
			}
			// One message a user can read: no Go structures, no
			// kilobytes of schema.
			if len(got) > 1024 || strings.Contains(got, "apiextensions.") || strings.Contains(got, "(*") {
				t.Errorf("stderr (%d bytes) dumps Go values:\n%s", len(got), got)
			}
			if stdout.String() != "" {
				t.Errorf("stdout: %q, want nothing (nothing started)", stdout.String())
			}
		})
	}
	if data, err := os.ReadFile(foreign); err != nil || !strings.Contains(string(data), "current-context: prod") {
		t.Errorf("foreign kubeconfig changed: %q, %v", data, err)
	}
}
