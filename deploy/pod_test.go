package deploy_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hubspoke/hubspoke/deploy"
)

// TestPodServes runs what the rendered Deployment runs, as a kubelet would
// on a node: the slim webhook binary with the container's arguments, the
// rules ConfigMap and the serving Secret as its volumes. It must become
// ready, answer a ConversionReview over TLS that verifies against the
// CRD's caBundle under the name the API server checks, turn unready on
// SIGTERM while still serving, and exit 0 within the pod's grace period.
func TestPodServes(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "hubspoke-webhook")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/hubspoke-webhook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	objs, err := deploy.Render(inputs(t), deploy.Options{Certs: deploy.Hubspoke, Namespace: "conv", Name: "wh", ShutdownDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	var crd *apiextv1.CustomResourceDefinition
	data := map[string]map[string][]byte{} // volume source name -> files
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *apiextv1.CustomResourceDefinition:
			if o.Name == "widgets.example.com" {
				crd = o
			}
		case *corev1.Secret:
			data[o.Name] = o.Data
		case *corev1.ConfigMap:
			files := map[string][]byte{}
			for k, v := range o.Data {
				files[k] = []byte(v)
			}
			data[o.Name] = files
		}
	}
	// The volumes, at paths of their own; the arguments rewritten to them.
	c := dep.Spec.Template.Spec.Containers[0]
	mounts := map[string]string{} // mount path -> directory here
	for _, v := range dep.Spec.Template.Spec.Volumes {
		src := ""
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			src, items = v.Secret.SecretName, v.Secret.Items
		case v.ConfigMap != nil:
			src = v.ConfigMap.Name
		}
		files, ok := data[src]
		if !ok {
			t.Fatalf("volume %s: no object %s among the manifests", v.Name, src)
		}
		vdir := filepath.Join(dir, v.Name)
		if err := os.Mkdir(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if items == nil {
			for k := range files {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			if err := os.WriteFile(filepath.Join(vdir, it.Path), files[it.Key], 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name {
				mounts[m.MountPath] = vdir
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var args []string
	for _, a := range c.Args {
		for mp, d := range mounts {
			a = strings.Replace(a, "="+mp, "="+d, 1)
		}
		if strings.HasPrefix(a, "--addr=") {
			a = "--addr=" + addr
		}
		args = append(args, a)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = cmd.Environ()
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var log bytes.Buffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	// The kubelet's probes: HTTPS, the certificate not verified.
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 2 * time.Second}
	defer probe.CloseIdleConnections()
	status := func(path string) int {
		resp, err := probe.Get("https://" + addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for start := time.Now(); status(c.ReadinessProbe.HTTPGet.Path) != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("not ready\n%s", log.String())
		}
	}
	if got := status(c.LivenessProbe.HTTPGet.Path); got != http.StatusOK {
		t.Errorf("liveness %s: %d", c.LivenessProbe.HTTPGet.Path, got)
	}

	// The API server's call: the CRD's caBundle, the Service's name.
	cc := crd.Spec.Conversion.Webhook.ClientConfig
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cc.CABundle) {
		t.Fatal("the CRD's caBundle holds no certificate")
	}
	apiServer := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: cc.Service.Name + "." + cc.Service.Namespace + ".svc"},
	}}
	defer apiServer.CloseIdleConnections()
	review, err := os.ReadFile("../examples/widget/review-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := apiServer.Post("https://"+addr+*cc.Service.Path, "application/json", bytes.NewReader(review))
	if err != nil {
		t.Fatalf("conversion as the API server calls it: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"Success"`) || !strings.Contains(string(body), `"size":3`) {
		t.Errorf("conversion: HTTP %d %s", resp.StatusCode, body)
	}

	// SIGTERM: unready at once while still serving, then exit 0 within the
	// grace period.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	grace := time.Duration(*dep.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	deadline := time.After(grace)
	unready := false
	for {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, log.String())
			}
			if !unready {
				t.Error("the process exited before /readyz turned unready")
			}
			return
		case <-deadline:
			t.Fatalf("still running after the pod's grace period of %s", grace)
		case <-time.After(50 * time.Millisecond):
			if status(c.ReadinessProbe.HTTPGet.Path) == http.StatusServiceUnavailable {
				unready = true
			}
		}
	}
}
