package deploy_test

import (
	"bytes"
	"crypto/x509"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/pki"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	widgetCRD     = "../examples/widget/crd.yaml"
	widgetRules   = "../examples/widget/conversion.yaml"
	evolvingCRD   = "../examples/evolving-widget/crd.yaml"
	evolvingRules = "../examples/evolving-widget/conversion.yaml"
)

func inputs(t *testing.T) []deploy.Input {
	t.Helper()
	in, err := deploy.LoadInputs([]string{widgetCRD, evolvingCRD}, []string{evolvingRules, widgetRules}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// fixedCerts are test certificates valid until 2126, so that the golden
// output does not change from run to run.
func fixedCerts(t *testing.T) (*pki.CA, *pki.KeyPair) {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ca, err := pki.ParseCA(read("ca.crt"), read("ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := pki.ParseKeyPair(read("serving.crt"), read("serving.key"))
	if err != nil {
		t.Fatal(err)
	}
	return ca, kp
}

func render(t *testing.T, opts deploy.Options) []byte {
	t.Helper()
	objs, err := deploy.Render(inputs(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := deploy.WriteYAML(&b, objs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

func TestGolden(t *testing.T) {
	ca, serving := fixedCerts(t)
	for _, tc := range []struct {
		name string
		opts deploy.Options
	}{
		{"cert-manager.yaml", deploy.Options{Certs: deploy.CertManager, Image: "ghcr.io/hubspoke/hubspoke-webhook:v0.1.0"}},
		{"hubspoke-certs.yaml", deploy.Options{Certs: deploy.Hubspoke, CA: ca, Serving: serving, Image: "ghcr.io/hubspoke/hubspoke-webhook:v0.1.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, render(t, tc.opts))
		})
	}
}

// docs splits rendered YAML into its objects.
func docs(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range strings.Split(string(b), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func find[T any](t *testing.T, b []byte, kind, name string) *T {
	t.Helper()
	for _, d := range strings.Split(string(b), "\n---\n") {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(d), &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind == kind && meta.Metadata.Name == name {
			v := new(T)
			if err := yaml.UnmarshalStrict([]byte(d), v); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return v
		}
	}
	t.Fatalf("no %s %s in the output", kind, name)
	return nil
}

// TestOrderAndLabels: one object per document, in apply order, each with
// the app.kubernetes.io labels.
func TestOrderAndLabels(t *testing.T) {
	var kinds []string
	for _, d := range docs(t, render(t, deploy.Options{Certs: deploy.Hubspoke})) {
		kinds = append(kinds, d["kind"].(string))
		labels := d["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["app.kubernetes.io/name"] != "hubspoke-webhook" || labels["app.kubernetes.io/managed-by"] != "hubspoke" {
			t.Errorf("%s: labels %v", d["kind"], labels)
		}
	}
	want := []string{"Namespace", "ServiceAccount", "Secret", "Secret", "ConfigMap", "Service", "Deployment",
		"PodDisruptionBudget", "CustomResourceDefinition", "CustomResourceDefinition"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

// TestHubspokeCerts: the generated serving certificate is the one the
// Deployment mounts and it chains to every CRD's caBundle under the name
// the API server checks.
func TestHubspokeCerts(t *testing.T) {
	out := render(t, deploy.Options{Certs: deploy.Hubspoke, Namespace: "conv", Name: "wh"})
	dep := find[appsv1.Deployment](t, out, "Deployment", "wh")
	var secretName string
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Name == "tls" {
			secretName = v.Secret.SecretName
		}
	}
	sec := find[corev1.Secret](t, out, "Secret", secretName)
	kp, err := pki.ParseKeyPair(sec.Data[pki.CertFile], sec.Data[pki.KeyFile])
	if err != nil {
		t.Fatal(err)
	}
	caSec := find[corev1.Secret](t, out, "Secret", deploy.CASecretName("wh"))
	if _, err := pki.ParseCA(caSec.Data[pki.CertFile], caSec.Data[pki.KeyFile]); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"widgets.example.com", "evolvingwidgets.example.com"} {
		crd := find[apiextv1.CustomResourceDefinition](t, out, "CustomResourceDefinition", name)
		cc := crd.Spec.Conversion.Webhook.ClientConfig
		roots, err := pki.ParseCertificates(cc.CABundle)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.Verify([]*x509.Certificate{kp.Cert}, roots, cc.Service.Name+"."+cc.Service.Namespace+".svc", kp.Cert.NotBefore.Add(1)); err != nil {
			t.Errorf("%s: the API server would reject the serving certificate: %v", name, err)
		}
		if _, ok := crd.Annotations[deploy.InjectCAFrom]; ok {
			t.Errorf("%s: cert-manager annotation in hubspoke mode", name)
		}
	}
}

// TestCertManager: the CRDs name the Certificate whose Secret the pods
// mount.
func TestCertManager(t *testing.T) {
	out := render(t, deploy.Options{Certs: deploy.CertManager, Namespace: "conv", Name: "wh"})
	var certSecret string
	for _, d := range docs(t, out) {
		if d["kind"] == "Certificate" && d["metadata"].(map[string]any)["name"] == "wh" {
			certSecret = d["spec"].(map[string]any)["secretName"].(string)
		}
	}
	dep := find[appsv1.Deployment](t, out, "Deployment", "wh")
	if got := dep.Spec.Template.Spec.Volumes[0].Secret.SecretName; got != certSecret || got == "" {
		t.Errorf("pods mount %q, the Certificate writes %q", got, certSecret)
	}
	crd := find[apiextv1.CustomResourceDefinition](t, out, "CustomResourceDefinition", "widgets.example.com")
	if got := crd.Annotations[deploy.InjectCAFrom]; got != "conv/wh" {
		t.Errorf("%s = %q, want conv/wh", deploy.InjectCAFrom, got)
	}
}

func TestDeploymentShape(t *testing.T) {
	out := render(t, deploy.Options{Certs: deploy.CertManager, ShutdownDelay: 7e9, ShutdownGrace: 40e9, MaxRequestBytes: 64 << 20})
	dep := find[appsv1.Deployment](t, out, "Deployment", deploy.DefaultName)
	ps := dep.Spec.Template.Spec
	if got := *ps.TerminationGracePeriodSeconds; got != 7+40+5 {
		t.Errorf("terminationGracePeriodSeconds = %d, want the drain (47s) plus 5s", got)
	}
	c := ps.Containers[0]
	for _, want := range []string{"--shutdown-delay=7s", "--shutdown-grace=40s", "--max-request-bytes=67108864",
		"--rules=/etc/hubspoke/rules/widgets.example.com.yaml"} {
		if !strings.Contains(strings.Join(c.Args, " "), want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	sz := deploy.Resources(64 << 20)
	if got := c.Resources.Limits.Memory().Value(); got != sz.MemoryLimit {
		t.Errorf("memory limit %d, want %d", got, sz.MemoryLimit)
	}
	if *dep.Spec.Replicas < 2 || dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("replicas %d, maxUnavailable %v", *dep.Spec.Replicas, dep.Spec.Strategy.RollingUpdate.MaxUnavailable)
	}
	sc := c.SecurityContext
	if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot || sc.Capabilities.Drop[0] != "ALL" ||
		ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("not the restricted pod security profile: %+v", sc)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("probes")
	}
}

// TestRulesChangeRollsPods: another rule file changes the pod template.
func TestRulesChangeRollsPods(t *testing.T) {
	in := inputs(t)
	annot := func(in []deploy.Input) string {
		objs, err := deploy.Render(in, deploy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				return d.Spec.Template.Annotations["hubspoke.dev/rules-sha256"]
			}
		}
		t.Fatal("no Deployment")
		return ""
	}
	before := annot(in)
	in[0].RulesData = append(append([]byte{}, in[0].RulesData...), "# changed\n"...)
	if after := annot(in); after == before {
		t.Error("the pod template does not change with the rules")
	}
}

func TestResources(t *testing.T) {
	for _, tc := range []struct {
		name                string
		max                 int64
		request, limit, gml int64
	}{
		{"default 32 MiB", 32 << 20, 160 << 20, 288 << 20, 288 << 20 / 10 * 9},
		{"1 MiB", 1 << 20, 32 << 20, 32 << 20, 32 << 20 / 10 * 9},
		{"128 MiB", 128 << 20, 544 << 20, 1056 << 20, 1056 << 20 / 10 * 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deploy.Resources(tc.max)
			if diff := cmp.Diff(deploy.Sizing{MemoryRequest: tc.request, MemoryLimit: tc.limit, GoMemLimit: tc.gml}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		crds, rule []string
		opts       deploy.Options
		want       string
	}{
		{"no rules for a CRD", []string{widgetCRD, evolvingCRD}, []string{widgetRules}, deploy.Options{},
			"CRD evolvingwidgets.example.com (../examples/evolving-widget/crd.yaml): no rule file converts EvolvingWidget.example.com"},
		{"rules without CRD", []string{widgetCRD}, []string{widgetRules, evolvingRules}, deploy.Options{},
			"rule file ../examples/evolving-widget/conversion.yaml converts EvolvingWidget.example.com, but no CRD file"},
		{"CRD twice", []string{widgetCRD, widgetCRD}, []string{widgetRules}, deploy.Options{}, "is also in"},
		{"one replica", []string{widgetCRD}, []string{widgetRules}, deploy.Options{Replicas: 1}, "needs at least 2"},
		{"bad name", []string{widgetCRD}, []string{widgetRules}, deploy.Options{Name: "Web_hook"}, `name "Web_hook"`},
		{"bad certs", []string{widgetCRD}, []string{widgetRules}, deploy.Options{Certs: "vault"}, `certificates "vault"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := deploy.LoadInputs(tc.crds, tc.rule, os.ReadFile)
			if err == nil {
				_, err = deploy.Render(in, tc.opts)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestVersionNotCovered: a CRD version the rule file does not name.
func TestVersionNotCovered(t *testing.T) {
	crd, err := os.ReadFile(widgetCRD)
	if err != nil {
		t.Fatal(err)
	}
	extra := strings.Replace(string(crd), "  versions:\n", "  versions:\n  - name: v2\n    served: false\n    storage: false\n    schema:\n      openAPIV3Schema:\n        type: object\n", 1)
	files := map[string][]byte{"crd.yaml": []byte(extra)}
	read := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return os.ReadFile(p)
	}
	_, err = deploy.LoadInputs([]string{"crd.yaml"}, []string{widgetRules}, read)
	want := "CRD widgets.example.com (crd.yaml) has version v2, which rule file ../examples/widget/conversion.yaml does not convert (it has [v1 v1alpha1])"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
