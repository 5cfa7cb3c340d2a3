package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// The tests that need kube-controller-manager (the cluster's storage
// version migrator, the garbage collector, the namespace controller) run
// on the package's second sandbox, which runs it: started on first use,
// stopped by TestMain. The others keep a sandbox without it, whose
// background (the controllers watch every resource) would be in their
// measurements and whose broken set-ups would hold its controllers up.

// kcmGroups are the groups (under migrate.example.com) of the CRDs the
// tests on the kube-controller-manager sandbox use. They are installed
// when it starts, so that its garbage collector, which reads discovery
// every 30 seconds, watches them by the time a test uses them.
var kcmGroups = []string{"cluster", "cluster-stuck", "cluster-cli", "cluster-plan", "nsdel", "gc", "bench-cluster"}

var (
	kcmOnce    sync.Once
	kcmErr     error
	kcmSB      *sandbox.Sandbox
	kcmDyn     dynamic.Interface
	kcmHook    *sandbox.Webhook
	kcmReviews atomic.Int64               // ConversionReviews kcmHook answered
	kcmReg     = prometheus.NewRegistry() // kcmHook's handler's metrics
)

// kcmSandbox returns the sandbox with kube-controller-manager, starting it
// on first use (unless startKCMEarly did) with the webhook of kcmGroups
// (faulty, like migWebhook's) and their CRDs (storage v1alpha1).
func kcmSandbox(t testing.TB) (*sandbox.Sandbox, dynamic.Interface) {
	t.Helper()
	kcmOnce.Do(startKCM)
	if kcmErr != nil {
		t.Fatal(kcmErr)
	}
	return kcmSB, kcmDyn
}

// startKCMEarly starts the kube-controller-manager sandbox now, in the
// background, when the whole package runs (no -run, no -bench): its start
// and its garbage collector's first look at the CRDs (up to 30 seconds)
// then overlap the package sandbox's start and the first tests, where the
// first kcmSerialTest would otherwise wait for both. A run of chosen tests
// starts it only if one of them asks.
func startKCMEarly() {
	if flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.bench").Value.String() == "" {
		go kcmOnce.Do(startKCM)
	}
}

// startKCM starts the kube-controller-manager sandbox, setting kcmSB,
// kcmDyn and kcmHook, or kcmErr.
func startKCM() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := sandbox.New(ctx, sandbox.Options{ControllerManager: true})
	if err != nil {
		kcmErr = err
		return
	}
	kcmSB = s
	kcmErr = setupKCM(ctx, s)
	if kcmErr == nil && testing.Verbose() {
		fmt.Printf("e2e: sandbox with kube-controller-manager started in %v\n", time.Since(start).Round(time.Millisecond))
	}
}

// setupKCM installs on s the namespaces, webhook and CRDs the tests on it use.
func setupKCM(ctx context.Context, s *sandbox.Sandbox) error {
	var err error
	if kcmDyn, err = dynamic.NewForConfig(s.RESTConfig()); err != nil {
		return err
	}
	for _, n := range []string{migNamespace, "doomed"} {
		if err := s.EnsureNamespace(ctx, n); err != nil {
			return err
		}
	}
	data, err := os.ReadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		return err
	}
	var convs []review.Converter
	for _, g := range kcmGroups {
		c, err := rules.Load(g+".yaml", []byte(strings.Replace(string(data), "group: example.com", "group: "+migGroup(g), 1)))
		if err != nil {
			return err
		}
		if strings.HasPrefix(g, "bench-") {
			convs = append(convs, c)
		} else {
			convs = append(convs, faultyConverter{c, groupFaults[g]})
		}
	}
	h, err := review.NewHandler(review.Options{Converters: convs, Registerer: kcmReg})
	if err != nil {
		return err
	}
	if kcmHook, err = s.ServeWebhook("hubspoke-system", migService, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kcmReviews.Add(1)
		h.ServeHTTP(w, r)
	})); err != nil {
		return err
	}
	for _, g := range kcmGroups {
		crd, err := newMigCRD(g, "v1alpha1")
		if err != nil {
			return err
		}
		if _, err := s.InstallCRD(ctx, crd); err != nil {
			return err
		}
	}
	return nil
}

// kcmSerial lets one test at a time use the kube-controller-manager
// sandbox: its controllers are cluster-wide, and a test that breaks its
// group's webhook stalls the garbage collector and the namespace
// controller for every other.
var kcmSerial sync.Mutex

// kcmSerialTest runs t beside the tests of the package's sandbox, alone
// on the sandbox with kube-controller-manager, which it returns.
func kcmSerialTest(t *testing.T) (*sandbox.Sandbox, dynamic.Interface) {
	t.Helper()
	t.Parallel()
	kcmSerial.Lock()
	t.Cleanup(kcmSerial.Unlock)
	return kcmSandbox(t)
}

// stopKCMSandbox stops the kube-controller-manager sandbox if it started
// (waiting for a start under way to end).
func stopKCMSandbox() error {
	kcmOnce.Do(func() {})
	if kcmSB == nil {
		return nil
	}
	return kcmSB.Stop()
}

// waitGarbageCollector waits until the garbage collector watches the
// resource gvr: a probe object owned by a ConfigMap is collected once the
// ConfigMap is deleted. The garbage collector reads discovery every 30
// seconds; the cluster's storage version migrator reads the objects from
// its caches, so it too waits for this.
func waitGarbageCollector(t testing.TB, d dynamic.Interface, gvr schema.GroupVersionResource, namespace string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	cms := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace)
	owner, err := cms.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"generateName": "gc-probe-"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.Group + "/" + gvr.Version, "kind": "Widget",
		"metadata": map[string]any{"name": owner.GetName(), "namespace": namespace,
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": owner.GetName(), "uid": string(owner.GetUID())}}}}}
	widgets := d.Resource(gvr).Namespace(namespace)
	if _, err := widgets.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, owner.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := widgets.Get(ctx, owner.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the garbage collector did not collect %s/%s within 3 minutes (last: %v)", gvr.GroupResource(), owner.GetName(), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the garbage collector watches %s (%v)", gvr.GroupResource(), time.Since(start).Round(time.Millisecond))
}
