package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/internal/servecmd"
	"github.com/hubspoke/hubspoke/operator"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// The operator's world on the sandbox: a namespace with the webhook's
// Service (two replicas of `serve --watch-conversions`, in this process,
// each an endpoint with its readiness probed) and the operator's Service
// (its admission webhook), and a CRD of its own.
const (
	opNamespace = "hubspoke-op"
	opWebhook   = "op-webhook"
	opOperator  = "op-operator"
	opGroup     = "op.example.com"
	opCRD       = "widgets." + opGroup
)

// opCRDYAML has two versions whose schemas differ (v1alpha1 spec.replicas
// and modes Fast/Slow; v1 spec.size and modes Performance/Economy), with
// strategy None: the operator switches it to the webhook.
const opCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.op.example.com
spec:
  group: op.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  conversion: {strategy: None}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, format: int32, minimum: 0}
              mode: {type: string, enum: [Fast, Slow]}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, format: int32, minimum: 0}
              mode: {type: string, enum: [Performance, Economy]}
`

// opRules is the Conversion of opCRD with the given rules of v1alpha1.
func opRules(extra string, rules ...string) string {
	return `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata:
  name: widgets.op.example.com
spec:
  group: op.example.com
  kind: Widget
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - ` + strings.Join(rules, "\n    - ") + "\n" + extra
}

const (
	ruleRename   = `rename: {from: spec.replicas, to: spec.size}`
	ruleScale1   = `scale: {from: spec.replicas, to: spec.size, multiply: 1}` // answers as ruleRename does
	ruleModes    = `enum: {from: spec.mode, values: {Fast: Performance, Slow: Economy}}`
	ruleSwapped  = `enum: {from: spec.mode, values: {Fast: Economy, Slow: Performance}}` // answers differently
	ruleMissingF = `funcs: {name: not-in-the-image}`
)

type opEnv struct {
	t        testing.TB
	ctx      context.Context
	ca       *pki.CA
	core     kubernetes.Interface
	ext      apiextclient.Interface
	replicas []*opReplica
}

type opReplica struct {
	addr string
	ep   *sandbox.Endpoint
	stop func()
}

func TestOperator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	e := newOpEnv(t, ctx)

	// The CRD, with strategy None, and objects stored through v1.
	crd := readCRDYAML(t, opCRDYAML)
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.DeleteCRD(context.Background(), opCRD) })
	if err := sb.EnsureNamespace(ctx, "op-objects"); err != nil {
		t.Fatal(err)
	}
	v1 := dyn.Resource(crdVersions{group: opGroup, resource: "widgets"}.gvr("v1")).Namespace("op-objects")
	v1alpha1R := dyn.Resource(crdVersions{group: opGroup, resource: "widgets"}.gvr("v1alpha1")).Namespace("op-objects")
	modes := []string{"Performance", "Economy", "Performance"}
	for i, m := range modes {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": opGroup + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%d", i)},
			"spec":     map[string]any{"size": int64(i + 1), "mode": m},
		}}
		if _, err := v1.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// 1. Apply a Conversion: the CRD switches once both replicas serve it.
	applied := time.Now()
	if out, errOut, code := e.apply(opRules("", ruleRename, ruleModes)); code != 0 {
		t.Fatalf("kubectl apply of the Conversion: exit %d\n%s%s", code, out, errOut)
	}
	e.waitConversion(1, "the CRD switched to the webhook")
	c := e.crd()
	if !strings.Contains(c, `"service":{"namespace":"hubspoke-op","name":"op-webhook","path":"/convert","port":443}`) || !strings.Contains(c, `"strategy":"Webhook"`) {
		t.Fatalf("the CRD's conversion: %s", c)
	}
	t.Logf("Conversion applied -> CRD switched in %v", time.Since(applied).Round(time.Millisecond))
	st := e.status()
	if len(st.Replicas) != 2 || st.Replicas[0].ServedGeneration != 1 || st.Replicas[1].ServedGeneration != 1 || !st.Replicas[0].Ready {
		t.Errorf("status.replicas: %+v", st.Replicas)
	}
	got, err := v1alpha1R.Get(ctx, "w0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := specOf(got); fmt.Sprint(spec["replicas"]) != "1" || spec["mode"] != "Fast" {
		t.Fatalf("w0 read through v1alpha1: %v", spec)
	}

	// 2. A change that answers differently for existing objects: refused.
	_, errOut, code := e.apply(opRules("", ruleRename, ruleSwapped))
	if code == 0 || !strings.Contains(errOut, "the new rules answer differently from generation 1, which replicas serve now") ||
		!strings.Contains(errOut, "existing object op-objects/w0") {
		t.Fatalf("an unsafe change: exit %d, want refused naming generation 1 and an existing object:\n%s", code, errOut)
	}
	t.Logf("the unsafe change, refused:\n%s", errOut)
	if g := e.get().GetGeneration(); g != 1 {
		t.Fatalf("the refused change was stored: generation %d", g)
	}

	// 3. A funcs rule naming a Go func the webhook lacks: refused.
	_, errOut, code = e.apply(opRules("", ruleRename, ruleModes, ruleMissingF))
	if code == 0 || !strings.Contains(errOut, `has no Go func "not-in-the-image" (it has: none)`) {
		t.Fatalf("a missing Go func: exit %d\n%s", code, errOut)
	}

	// 4. A safe change, with a reader through v1alpha1 all along: no
	// request fails, and the reader's reviews reach the webhook.
	before := e.reviews()
	var reads, failed atomic.Int64
	var firstErr atomic.Value
	readCtx, stopReading := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; readCtx.Err() == nil; i++ {
				_, err := v1alpha1R.Get(readCtx, fmt.Sprintf("w%d", i%len(modes)), metav1.GetOptions{})
				if readCtx.Err() != nil {
					return
				}
				reads.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	changed := time.Now()
	if out, errOut, code := e.apply(opRules("", ruleScale1, ruleModes)); code != 0 {
		stopReading()
		wg.Wait()
		t.Fatalf("a safe change refused: exit %d\n%s%s", code, out, errOut)
	}
	e.waitConversion(2, "generation 2 served")
	t.Logf("safe change -> every replica serves it in %v", time.Since(changed).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	stopReading()
	wg.Wait()
	reviews := e.reviews() - before
	t.Logf("reader through the change: %d reads, %d failed; %d reviews answered by the webhook", reads.Load(), failed.Load(), reviews)
	if failed.Load() > 0 {
		t.Errorf("%d of %d reads failed during a safe change; first: %v", failed.Load(), reads.Load(), firstErr.Load())
	}
	if reads.Load() < 10 || reviews < reads.Load() {
		t.Errorf("%d reads caused %d reviews: the reader was not on the webhook's path", reads.Load(), reviews)
	}

	// 5. The unsafe change, acknowledged for the generation served now.
	ack := "  rollout:\n    acknowledgeDifferences: {fromGeneration: 2, reason: \"modes renamed; no client reads v1alpha1 during the change\"}\n"
	out, errOut, code := e.apply(opRules(ack, ruleScale1, ruleSwapped))
	if code != 0 || !strings.Contains(errOut, "acknowledged: modes renamed") {
		t.Fatalf("an acknowledged change: exit %d, want applied with a warning\n%s%s", code, out, errOut)
	}
	t.Logf("the acknowledged change: %s%s", out, errOut)
	e.waitConversion(3, "generation 3 served")
	if got, err := v1alpha1R.Get(ctx, "w0", metav1.GetOptions{}); err != nil || specOf(got)["mode"] != "Slow" {
		t.Fatalf("w0 through v1alpha1 after generation 3: %v %v", got, err)
	}

	// 6. Deleting the Conversion while the CRD converts through it: kept,
	// with an event saying why; reads go on.
	kubectl(t, "delete", "conversion", opCRD, "--wait=false")
	eventually(t, "the DeletionBlocked event", func() error {
		evs, err := e.core.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "DeletionBlocked" && ev.Regarding.Name == opCRD && strings.Contains(ev.Note, "kept: CRD widgets.op.example.com converts through service hubspoke-op/op-webhook") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none DeletionBlocked for %s", len(evs.Items), opCRD)
	})
	if u := e.get(); u.GetDeletionTimestamp() == nil {
		t.Fatal("the Conversion is not being deleted")
	}
	if _, err := v1alpha1R.Get(ctx, "w1", metav1.GetOptions{}); err != nil {
		t.Fatalf("a read while the Conversion is kept: %v", err)
	}
	// Once the CRD is gone, the Conversion goes.
	if err := sb.DeleteCRD(ctx, opCRD); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Conversion released", func() error {
		_, err := dyn.Resource(v1alpha1.GroupVersionResource).Get(ctx, opCRD, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

// poll retries f every 20 ms until it returns nil or a minute passes.
func poll(t testing.TB, what string, f func() error) {
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
		time.Sleep(20 * time.Millisecond)
	}
}

func readCRDYAML(t testing.TB, doc string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

// newOpEnv installs the Conversion CRD, starts two webhook replicas and
// the operator with its admission webhook registered.
func newOpEnv(t testing.TB, ctx context.Context) *opEnv {
	t.Helper()
	e := &opEnv{t: t, ctx: ctx}
	var err error
	if e.core, err = kubernetes.NewForConfig(sb.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	if e.ext, err = apiextclient.NewForConfig(sb.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.InstallCRD(ctx, deploy.ConversionCRD()); err != nil {
		t.Fatal(err)
	}
	if err := sb.EnsureNamespace(ctx, opNamespace); err != nil {
		t.Fatal(err)
	}
	if e.ca, err = pki.NewCA(pki.CAOptions{CommonName: "op CA"}); err != nil {
		t.Fatal(err)
	}
	// The serving Secret the operator takes the caBundle from, as deploy
	// and cert-manager write it.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: deploy.ServingSecretName(opWebhook), Namespace: opNamespace},
		Data:       map[string][]byte{pki.CAFile: e.ca.CertPEM},
	}
	if _, err := e.core.CoreV1().Secrets(opNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.core.CoreV1().Secrets(opNamespace).Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
	e.applyRBAC()
	for i := 0; i < 2; i++ {
		e.replicas = append(e.replicas, e.startReplica(i))
	}
	e.startOperator()
	return e
}

// applyRBAC applies the platform's service accounts and RBAC, as deploy
// --operator and the chart render them (prefix "op" names op-webhook and
// op-operator), and a ClusterRole aggregated to the operator for the test
// CRD's objects: the replicas and the operator then run as those service
// accounts, so that the rights the chart grants are the ones tested.
func (e *opEnv) applyRBAC() {
	t := e.t
	objs, err := deploy.RenderPlatform(deploy.PlatformOptions{Namespace: opNamespace, Prefix: "op", NoNamespace: true})
	if err != nil {
		t.Fatal(err)
	}
	var rbac []any
	for _, o := range objs {
		switch o.(type) {
		case *corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
			rbac = append(rbac, o)
		}
	}
	rbac = append(rbac, &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "op-widgets", Labels: map[string]string{deploy.AggregateToOperator: "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{opGroup}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "update"}}},
	})
	var manifest bytes.Buffer
	if err := deploy.WriteYAML(&manifest, rbac); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", sb.KubeconfigPath()}, args...)...)
		cmd.Stdin = bytes.NewReader(manifest.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	run("apply", "-f", "-")
	t.Cleanup(func() { run("delete", "--wait=false", "-f", "-") })
	// The sandbox runs no kube-controller-manager: aggregate the labelled
	// ClusterRole's rules into op-operator-objects as its
	// clusterrole-aggregation controller would.
	roles := e.core.RbacV1().ClusterRoles()
	agg, err := roles.Get(e.ctx, "op-operator-objects", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labelled, err := roles.List(e.ctx, metav1.ListOptions{LabelSelector: deploy.AggregateToOperator + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range labelled.Items {
		agg.Rules = append(agg.Rules, r.Rules...)
	}
	if _, err := roles.Update(e.ctx, agg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// serviceAccount is the user name of a service account of the platform.
func serviceAccount(name string) string { return "system:serviceaccount:" + opNamespace + ":" + name }

// kubeconfigAs writes a kubeconfig of the sandbox's admin impersonating
// user, for a process that runs as a service account.
func (e *opEnv) kubeconfigAs(user string) string {
	t := e.t
	cfg, err := clientcmd.LoadFromFile(sb.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + opNamespace, "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// certDirFor writes a serving certificate for NAME.NAMESPACE.svc.
func (e *opEnv) certDirFor(name string) string {
	kp, err := e.ca.IssueService(opNamespace, name, pki.CertOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	dir := e.t.TempDir()
	for f, b := range map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			e.t.Fatal(err)
		}
	}
	return dir
}

// startReplica runs `hubspoke-webhook serve --watch-conversions` in this
// process and makes it an endpoint of the webhook's Service.
func (e *opEnv) startReplica(i int) *opReplica {
	t := e.t
	dir := e.certDirFor(opWebhook)
	kubeconfig := e.kubeconfigAs(serviceAccount(opWebhook))
	ctx, cancel := context.WithCancel(context.Background())
	logR, logW := io.Pipe()
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logR)
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving conversion webhook" {
				addrs <- rec.Addr
			}
			if testing.Verbose() {
				fmt.Fprintf(os.Stderr, "replica %d: %s\n", i, sc.Bytes())
			}
		}
	}()
	done := make(chan int, 1)
	go func() {
		done <- servecmd.Main(ctx, []string{"serve", "--watch-conversions", "--kubeconfig", kubeconfig,
			"--cert-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-delay", "10ms"},
			strings.NewReader(""), io.Discard, logW)
		logW.Close()
	}()
	r := &opReplica{}
	select {
	case r.addr = <-addrs:
	case code := <-done:
		t.Fatalf("replica %d exited %d", i, code)
	case <-time.After(time.Minute):
		t.Fatalf("replica %d not serving after a minute", i)
	}
	r.stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(r.stop)
	var err error
	if r.ep, err = sb.AddEndpoint(e.ctx, sandbox.EndpointOptions{Namespace: opNamespace, Service: opWebhook, Addr: r.addr, ReadinessPath: "/readyz"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ep.Remove(context.Background()) })
	if err := r.ep.WaitReady(e.ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// startOperator runs the operator in this process, its admission webhook
// an endpoint of the operator's Service, registered for Conversions.
func (e *opEnv) startOperator() {
	t := e.t
	dir := e.certDirFor(opOperator)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dial, err := doctor.ConnectDialer(sb.PodNetworkProxy())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	asOperator := rest.CopyConfig(sb.RESTConfig())
	asOperator.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount(opOperator),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + opNamespace, "system:authenticated"}}
	go func() {
		done <- operator.Run(ctx, operator.Options{
			Config: asOperator, Namespace: opNamespace, Service: opWebhook, PodDial: dial,
			AdmissionAddr: addr, AdmissionCertDir: dir, CheckObjects: 20, Logger: opLogger(),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	poll(t, "the operator's admission webhook listening", func() error {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		return c.Close()
	})
	ep, err := sb.AddEndpoint(e.ctx, sandbox.EndpointOptions{Namespace: opNamespace, Service: opOperator, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Remove(context.Background()) })
	vwc := deploy.AdmissionWebhook(opNamespace, opOperator, e.ca.CertPEM)
	if _, err := e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(e.ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.core.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})
}

// apply runs kubectl apply of a Conversion document.
func (e *opEnv) apply(doc string) (string, string, int) {
	return kubectlRun(e.t.(*testing.T), []byte(doc), "apply", "-f", "-")
}

func (e *opEnv) get() *unstructured.Unstructured {
	e.t.Helper()
	u, err := dyn.Resource(v1alpha1.GroupVersionResource).Get(e.ctx, opCRD, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

func (e *opEnv) status() v1alpha1.Status {
	e.t.Helper()
	st, err := v1alpha1.GetStatus(e.get())
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// crd returns the CRD's spec.conversion as JSON.
func (e *opEnv) crd() string {
	e.t.Helper()
	c, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Get(e.ctx, opCRD, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(c.Spec.Conversion)
	return string(b)
}

// waitConversion waits until the Conversion at generation gen is served
// by every replica and its CRD configured.
func (e *opEnv) waitConversion(gen int64, what string) {
	e.t.Helper()
	poll(e.t, what, func() error {
		u := e.get()
		st, err := v1alpha1.GetStatus(u)
		if err != nil {
			return err
		}
		if u.GetGeneration() != gen || st.ObservedGeneration != gen {
			return fmt.Errorf("generation %d, observed %d", u.GetGeneration(), st.ObservedGeneration)
		}
		for _, t := range []string{v1alpha1.ConditionAccepted, v1alpha1.ConditionServing, v1alpha1.ConditionCRDConfigured} {
			if !meta.IsStatusConditionTrue(st.Conditions, t) {
				c := meta.FindStatusCondition(st.Conditions, t)
				return fmt.Errorf("condition %s: %+v", t, c)
			}
		}
		if st.ServedGeneration != gen {
			return fmt.Errorf("servedGeneration %d", st.ServedGeneration)
		}
		return nil
	})
}

// reviews sums the ConversionReviews the replicas answered.
func (e *opEnv) reviews() int64 {
	e.t.Helper()
	var total int64
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // a scrape
	defer client.CloseIdleConnections()
	for _, r := range e.replicas {
		resp, err := client.Get("https://" + r.addr + "/metrics")
		if err != nil {
			e.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.HasPrefix(line, review.MetricReviews+"{") {
				continue
			}
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				e.t.Fatalf("metrics line %q: %v", line, err)
			}
			total += int64(v)
		}
	}
	return total
}

func opLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return nil
}
