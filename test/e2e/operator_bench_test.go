package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/pki"
)

// BenchmarkConversionPropagation: how long a Conversion change takes to
// reach every replica on the sandbox (two replicas of serve
// --watch-conversions, the operator, its admission webhook in the API
// server's path). Each op writes a new generation (two equivalent rule
// sets in turn, so that admission accepts each) and reports
// admission-ms (the write, admission's checks included),
// replicas-ms (from the write's answer until both replicas report the
// generation at /conversions) and serving-ms (until the Conversion's
// status says Serving for it). The target: every replica within 2 s.
func BenchmarkConversionPropagation(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newOpEnv(b, ctx)
	crd := readCRDYAML(b, opCRDYAML)
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.DeleteCRD(context.Background(), opCRD) })
	res := dyn.Resource(v1alpha1.GroupVersionResource)
	write := func(doc string) (int64, time.Duration) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		cur, err := res.Get(ctx, opCRD, metav1.GetOptions{})
		if err != nil {
			out, err := res.Create(ctx, u, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			return out.GetGeneration(), time.Since(start)
		}
		cur.Object["spec"] = u.Object["spec"]
		out, err := res.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return out.GetGeneration(), time.Since(start)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	servedBy := func(addr string) int64 {
		resp, err := client.Get("https://" + addr + v1alpha1.ServedPath + "/" + opCRD)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		var c v1alpha1.ServedConversion
		if json.NewDecoder(resp.Body).Decode(&c) != nil {
			return 0
		}
		return c.Generation
	}
	gen, _ := write(opRules("", ruleRename, ruleModes))
	e.waitConversion(gen, "the first generation served")
	docs := []string{opRules("", ruleScale1, ruleModes), opRules("", ruleRename, ruleModes)}
	var admission, replicas, serving time.Duration
	i := 0
	for b.Loop() {
		var took time.Duration
		gen, took = write(docs[i%2])
		i++
		admission += took
		start := time.Now()
		for _, r := range e.replicas {
			for servedBy(r.addr) != gen {
				if time.Since(start) > time.Minute {
					b.Fatalf("generation %d not served by %s after a minute", gen, r.addr)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		replicas += time.Since(start)
		for {
			u, err := res.Get(ctx, opCRD, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			st, _ := v1alpha1.GetStatus(u)
			if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionServing); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen {
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("generation %d not Serving after a minute: %+v", gen, st.Conditions)
			}
			time.Sleep(5 * time.Millisecond)
		}
		serving += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(admission.Milliseconds())/n, "admission-ms")
	b.ReportMetric(float64(replicas.Milliseconds())/n, "replicas-ms")
	b.ReportMetric(float64(serving.Milliseconds())/n, "serving-ms")
}

// BenchmarkWebhook100Conversions: the slim webhook binary, as a process,
// serving 100 Conversion objects for 100 CRDs (the Fleet example's rules,
// every form, CEL included, in 100 groups) against the same binary
// serving none: start-up to ready, and resident memory once ready, with
// the difference per CRD.
func BenchmarkWebhook100Conversions(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin := filepath.Join(dir, "hubspoke-webhook")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hubspoke-webhook").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	if _, err := sb.InstallCRD(ctx, deploy.ConversionCRD()); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/fleet/conversion.yaml")
	if err != nil {
		b.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	res := dyn.Resource(v1alpha1.GroupVersionResource)
	for i := range 100 {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			b.Fatal(err)
		}
		group := fmt.Sprintf("g%03d.bench.example.com", i)
		unstructured.SetNestedField(u.Object, group, "spec", "group")
		u.SetName("fleets." + group)
		u.SetLabels(map[string]string{"bench": "hundred"})
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { res.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	kp, err := ca.Issue(pki.CertOptions{DNSNames: []string{"localhost"}})
	if err != nil {
		b.Fatal(err)
	}
	for f, d := range map[string][]byte{"tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, f), d, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	// run starts the binary serving the Conversions matching selector and
	// returns its start-up time and resident memory once ready.
	run := func(selector string) (time.Duration, int64) {
		cmd := exec.Command(bin, "serve", "--watch-conversions", "--selector", selector, "--kubeconfig", sb.KubeconfigPath(),
			"--cert-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-delay", "0s")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
		sc := bufio.NewScanner(stderr)
		var addr string
		for sc.Scan() {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving conversion webhook" {
				addr = rec.Addr
				break
			}
		}
		go func() {
			for sc.Scan() {
			}
		}()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		defer client.CloseIdleConnections()
		for {
			resp, err := client.Get("https://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Since(start) > time.Minute {
				b.Fatal("not ready after a minute")
			}
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		resp, err := client.Get("https://" + addr + v1alpha1.ServedPath)
		if err != nil {
			b.Fatal(err)
		}
		var s v1alpha1.Served
		json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		want := map[string]int{"bench=hundred": 100, "bench=none": 0}[selector]
		if len(s.Conversions) != want {
			b.Fatalf("%d conversions served, want %d", len(s.Conversions), want)
		}
		for _, c := range s.Conversions {
			if c.Generation == 0 {
				b.Fatalf("not served: %+v", c)
			}
		}
		return took, rss(b, cmd.Process.Pid)
	}
	var start0, start100 time.Duration
	var rss0, rss100 int64
	for b.Loop() {
		t, r := run("bench=none")
		start0, rss0 = start0+t, rss0+r
		t, r = run("bench=hundred")
		start100, rss100 = start100+t, rss100+r
	}
	n := float64(b.N)
	b.ReportMetric(float64(start0.Milliseconds())/n, "startup-0-ms")
	b.ReportMetric(float64(start100.Milliseconds())/n, "startup-100-ms")
	b.ReportMetric(float64(rss0)/n/(1<<20), "rss-0-MiB")
	b.ReportMetric(float64(rss100)/n/(1<<20), "rss-100-MiB")
	b.ReportMetric(float64(rss100-rss0)/n/100/1024, "rss-KiB/CRD")
}

// rss is a process's resident set in bytes (VmRSS).
func rss(tb testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
