package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// liveGroup holds examples/evolving-widget for TestCheckLive alone: the
// objects it lists are its own.
const liveGroup = "live.example.com"

// liveRBAC is docs/check.md's read-only role for check --live (here in
// two ClusterRoles: get on the CRD, list on its resource), bound to the
// user the test's kubeconfig impersonates; crd-reader has the first only.
const liveRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: hubspoke-check-live-evolvingwidgets
rules:
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  resourceNames: [evolvingwidgets.live.example.com]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: hubspoke-check-live-evolvingwidgets-objects
rules:
- apiGroups: [live.example.com]
  resources: [evolvingwidgets]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hubspoke-check-live-evolvingwidgets
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: hubspoke-check-live-evolvingwidgets
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: live-checker
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: crd-reader
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hubspoke-check-live-evolvingwidgets-objects
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: hubspoke-check-live-evolvingwidgets-objects
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: live-checker
`

// TestCheckLive runs hubspoke check --live as a user would before a
// rollout: the evolving-widget CRD served by the hubspoke webhook, objects
// created through kubectl in two namespaces (one of them a v1 timeout
// that v1alpha1's round: reject cannot hold), and check reading them with
// a kubeconfig whose user has only the documented read-only role, in
// pages of three. It reports the one object that fails, by name, in its
// text, JSON and JUnit reports; -n and -l narrow the objects as kubectl
// does; a user without the role is refused with the API server's reason.
func TestCheckLive(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// The CRD and its rules in group live.example.com, served by the
	// real hubspoke handler.
	crd, err := sandbox.ReadCRDFile("../../examples/evolving-widget/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd = rename(crd, liveGroup)
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = hsNamespace
	crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = "hs-live"
	ruleText := strings.NewReplacer("group: example.com", "group: "+liveGroup, "name: evolvingwidgets.example.com", "name: evolvingwidgets."+liveGroup).
		Replace(string(must(os.ReadFile("../../examples/evolving-widget/conversion.yaml"))))
	rulesFile := filepath.Join(dir, "conversion.yaml")
	if err := os.WriteFile(rulesFile, []byte(ruleText), 0o600); err != nil {
		t.Fatal(err)
	}
	conv, err := rules.LoadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sb.ServeWebhook(hsNamespace, "hs-live", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := waitCABundles(ctx, crd.Name); err != nil {
		t.Fatal(err)
	}

	// Objects, created with kubectl through v1alpha1 (converted by the
	// webhook) and v1 (the storage version).
	for _, n := range []string{"live-a", "live-b"} {
		if err := sb.EnsureNamespace(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	var manifests []string
	for i, name := range []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"} {
		obj := readYAML(t, "../../examples/evolving-widget/objects/v1alpha1.yaml")
		obj["apiVersion"] = liveGroup + "/v1alpha1"
		md := obj["metadata"].(map[string]any)
		md["name"], md["namespace"] = name, "live-a"
		if i%2 == 0 {
			md["labels"] = map[string]any{"tier": "gold"}
		}
		manifests = append(manifests, string(must(yaml.Marshal(obj))))
	}
	for _, name := range []string{"fine", "rounded"} {
		obj := readYAML(t, "../../examples/evolving-widget/objects/v1.yaml")
		obj["apiVersion"] = liveGroup + "/v1"
		md := obj["metadata"].(map[string]any)
		md["name"], md["namespace"] = name, "live-b"
		if name == "rounded" {
			obj["spec"].(map[string]any)["timeout"] = "1.5s" // v1alpha1 counts whole seconds, round: reject
		}
		manifests = append(manifests, string(must(yaml.Marshal(obj))))
	}
	manifest := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(manifest, []byte(strings.Join(manifests, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "create", "-f", manifest)

	// The read-only user: docs/check.md's role, and a kubeconfig that
	// impersonates its user; another that impersonates a user without it.
	rbac := filepath.Join(dir, "rbac.yaml")
	if err := os.WriteFile(rbac, []byte(liveRBAC), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", rbac)
	readOnly := impersonating(t, dir, "live-checker")
	nobody := impersonating(t, dir, "nobody")
	crdReader := impersonating(t, dir, "crd-reader")

	run := func(t *testing.T, want int, args ...string) (stdout, stderr string) {
		t.Helper()
		var o, e bytes.Buffer
		code := cli.Main(ctx, append([]string{"check", "--rules", rulesFile, "--live", "--objects", "0"}, args...), strings.NewReader(""), &o, &e)
		if code != want {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, o.String(), e.String())
		}
		return o.String(), e.String()
	}

	t.Run("every namespace", func(t *testing.T) {
		junit := filepath.Join(dir, "live.xml")
		out, _ := run(t, 1, "--kubeconfig", readOnly, "--page-size", "3", "-o", "json", "--junit", junit)
		var rep struct {
			OK       bool `json:"ok"`
			Errors   int  `json:"errors"`
			Live     int  `json:"liveObjects"`
			Findings []struct {
				Check, Severity, From, To, Path string
				Objects                         []string
			} `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		if rep.OK || rep.Live != 9 {
			t.Errorf("ok %v, %d live objects; want false, 9", rep.OK, rep.Live)
		}
		var failing []string
		for _, f := range rep.Findings {
			if f.Severity == "error" {
				failing = append(failing, f.Check+" "+f.From+"->"+f.To+" "+f.Path+" "+strings.Join(f.Objects, ","))
			}
		}
		want := []string{
			"refused v1->v1alpha1 /spec/timeout live-b/rounded",
			"refused v1beta1->v1alpha1 /spec/timeout live-b/rounded",
		}
		if diff := cmp.Diff(want, failing); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
		// JUnit: one testcase per object, the failing one failed.
		var doc struct {
			Suites []struct {
				Name     string `xml:"name,attr"`
				Tests    int    `xml:"tests,attr"`
				Failures int    `xml:"failures,attr"`
				Cases    []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(must(os.ReadFile(junit)), &doc); err != nil {
			t.Fatal(err)
		}
		var live []string
		for _, s := range doc.Suites {
			if s.Name != "live" {
				continue
			}
			if s.Tests != 9 || s.Failures != 1 {
				t.Errorf("live suite: %d tests, %d failures; want 9, 1", s.Tests, s.Failures)
			}
			for _, c := range s.Cases {
				if c.Failure != nil {
					live = append(live, c.Name+": "+c.Failure.Message)
				}
			}
		}
		if len(live) != 1 || !strings.HasPrefix(live[0], "live-b/rounded: error   refused /spec/timeout: the object as v1 is refused converting to v1alpha1") {
			t.Errorf("failed live testcases: %q", live)
		}
	})

	t.Run("one namespace, text", func(t *testing.T) {
		out, _ := run(t, 0, "--kubeconfig", readOnly, "-n", "live-a", "--page-size", "2")
		if !strings.Contains(out, "ok: 0 errors, 1 warnings (") || !strings.Contains(out, "7 live objects") {
			t.Errorf("report:\n%s", out)
		}
		// Without --crd the cluster's CRD is checked, and a finding's
		// position is a line of kubectl get crd NAME -o yaml.
		m := regexp.MustCompile(`warning domain /spec/endpoints: .* \[kubectl get crd evolvingwidgets.live.example.com -o yaml:(\d+)\]`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no domain warning at a line of kubectl's output:\n%s", out)
		}
		line, _ := strconv.Atoi(m[1])
		lines := strings.Split(string(kubectl(t, "get", "crd", crd.Name, "-o", "yaml")), "\n")
		if line > len(lines) || strings.TrimSpace(lines[line-1]) != "endpoints:" {
			t.Errorf("line %d of kubectl get crd -o yaml is %q, want the endpoints schema", line, lines[min(line, len(lines))-1])
		}
	})

	t.Run("selector and progress", func(t *testing.T) {
		out, errOut := run(t, 0, "--kubeconfig", readOnly, "-l", "tier=gold", "--progress", "lines")
		if !strings.Contains(out, "4 live objects") {
			t.Errorf("report:\n%s", out)
		}
		if !strings.Contains(errOut, "check --live evolvingwidgets.live.example.com: 4 objects, 0 with errors") {
			t.Errorf("progress lines:\n%s", errOut)
		}
	})

	t.Run("the new CRD given with --crd", func(t *testing.T) {
		// The CRD about to be rolled out: v1alpha1 no longer served, so
		// its refusal no longer matters.
		next := crd.DeepCopy()
		for i := range next.Spec.Versions {
			if next.Spec.Versions[i].Name == "v1alpha1" {
				next.Spec.Versions[i].Served = false
			}
		}
		file := filepath.Join(dir, "next-crd.yaml")
		if err := os.WriteFile(file, must(yaml.Marshal(next)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _ := run(t, 0, "--kubeconfig", readOnly, "--crd", file)
		if !strings.Contains(out, "9 live objects") {
			t.Errorf("report:\n%s", out)
		}
	})

	t.Run("without the role", func(t *testing.T) {
		_, errOut := run(t, 2, "--kubeconfig", nobody)
		if !strings.Contains(errOut, `customresourcedefinitions.apiextensions.k8s.io "evolvingwidgets.live.example.com" is forbidden: User "nobody" cannot get resource`) {
			t.Errorf("stderr:\n%s", errOut)
		}
	})

	t.Run("the CRD but not its objects", func(t *testing.T) {
		_, errOut := run(t, 2, "--kubeconfig", crdReader)
		if !strings.Contains(errOut, `error: --live: list evolvingwidgets.live.example.com at v1: evolvingwidgets.live.example.com is forbidden: User "crd-reader" cannot list resource "evolvingwidgets"`) {
			t.Errorf("stderr:\n%s", errOut)
		}
	})

	// init reads the same CRD by name with the same read-only role, and
	// suggests what it suggests from the example's file.
	t.Run("init from the cluster", func(t *testing.T) {
		var o, e bytes.Buffer
		if code := cli.Main(ctx, []string{"init", crd.Name, "--kubeconfig", readOnly, "--objects", "20", "--seed", "1"}, strings.NewReader(""), &o, &e); code != 0 {
			t.Fatalf("init: exit %d\n%s", code, e.String())
		}
		var f bytes.Buffer
		if code := cli.Main(ctx, []string{"init", "-f", "../../examples/evolving-widget/crd.yaml", "--check=false"}, strings.NewReader(""), &f, io.Discard); code != 0 {
			t.Fatal("init -f failed")
		}
		body := func(s string) string { // the rules, without the header and names
			_, rest, _ := strings.Cut(s, "  spokes:\n")
			return rest
		}
		if body(o.String()) == "" || body(o.String()) != body(f.String()) {
			t.Errorf("init from the cluster:\n%s\ninit -f:\n%s", o.String(), f.String())
		}
		for _, want := range []string{
			"# Written by hubspoke init from the cluster's CustomResourceDefinition evolvingwidgets.live.example.com",
			"  group: live.example.com\n",
		} {
			if !strings.Contains(o.String(), want) {
				t.Errorf("init output lacks %q:\n%s", want, o.String())
			}
		}
		if !strings.Contains(e.String(), "ok: 0 errors") || !strings.Contains(e.String(), "check it again once edited: hubspoke check --rules conversion.yaml --live --kubeconfig "+readOnly) {
			t.Errorf("init's check:\n%s", e.String())
		}
	})

	// The role is read-only: the checker cannot write what it reads.
	err = dynFor(t, readOnly).Resource(crdVersions{liveGroup, "evolvingwidgets"}.gvr("v1")).Namespace("live-a").Delete(ctx, "w1", metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("delete as the checker: %v, want forbidden", err)
	}
}

// impersonating writes a copy of the sandbox's kubeconfig whose user
// acts as user (kubeconfig's "as").
func impersonating(t *testing.T, dir, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(sb.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
	}
	path := filepath.Join(dir, user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// dynFor is a dynamic client with the kubeconfig at path.
func dynFor(t *testing.T, path string) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
