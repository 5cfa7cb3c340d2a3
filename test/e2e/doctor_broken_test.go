package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/explain"
	"github.com/hubspoke/hubspoke/internal/cli"
	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/pki"
)

// The endpoints misbehave in the ways a webhook process can and hubspoke's
// server cannot: tiny servers of the test's own stand behind the Service
// (one bad replica of three, certificates crypto/x509 refuses for each of
// its reasons, plain HTTP, a hung handshake, a required client
// certificate, slow, wrong or refused answers).
func TestDoctorDiagnosesMisbehavingEndpoints(t *testing.T) {
	t.Parallel() // its own groups; waits mostly on the API server
	one := 1
	serviceNames := func(s *setupState) []string {
		return []string{s.service + "." + doctorNS + ".svc", s.service + "." + doctorNS + ".svc.cluster.local"}
	}
	runSetups(t, exposeService, []brokenSetup{
		{name: "one bad replica of three", replicas: 3, pod: &one, confirm: "-", check: doctor.CheckCertChain, cli: doctor.CheckCertChain,
			want: []string{`issued by "CN=another CA"`, `("CN=doctor webhook CA")`, "the caBundle is right and this replica serves another certificate", "kubectl delete pod -n doctor svc-one-bad-replica-webhook-"},
			setup: func(t *testing.T, s *setupState) {
				s.replicas[1].cert = func(string) tls.Certificate {
					return testcert.Issue(t, s.otherCA, pki.CertOptions{DNSNames: serviceNames(s)}).TLSCertificate()
				}
			}},
		{name: "certificate without serverAuth", confirm: "x509-incompatible-usage", check: doctor.CheckCertUsage, cli: doctor.CheckCertUsage,
			explainKubectl: "x509-incompatible-usage", want: []string{"clientAuth", "server auth"},
			setup: func(t *testing.T, s *setupState) {
				s.cert = func(string) tls.Certificate {
					return testcert.Issue(t, s.ca, pki.CertOptions{DNSNames: serviceNames(s), Usage: pki.ClientAuth}).TLSCertificate()
				}
			}},
		{name: "chain missing its intermediate", confirm: "x509-unknown-authority", check: doctor.CheckCertChain, cli: doctor.CheckCertChain,
			explainKubectl: "x509-unknown-authority",
			want:           []string{`issued by "CN=doctor issuing CA"`, "serves no intermediate", "missing its intermediate", "tls.crt = the certificate, then the intermediate"},
			setup: func(t *testing.T, s *setupState) {
				root, inter := testcert.Chain(t, "doctor root CA", "doctor issuing CA")
				s.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = root.CertPEM
				s.cert = func(string) tls.Certificate {
					return testcert.Issue(t, inter, pki.CertOptions{DNSNames: serviceNames(s)}).TLSCertificate()
				}
			}},
		{name: "chain served with its intermediate", check: "",
			setup: func(t *testing.T, s *setupState) {
				root, inter := testcert.Chain(t, "doctor root CA", "doctor issuing CA")
				s.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = root.CertPEM
				s.cert = func(string) tls.Certificate {
					c := testcert.Issue(t, inter, pki.CertOptions{DNSNames: serviceNames(s)}).TLSCertificate()
					c.Certificate = append(c.Certificate, inter.Cert.Raw)
					return c
				}
			}},
		{name: "CA generated again", confirm: "x509-candidate-authority", check: doctor.CheckCertChain, cli: doctor.CheckCertChain,
			explainKubectl: "x509-candidate-authority", want: []string{`holds a CA named "CN=doctor webhook CA"`, "generated again with a new key"},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = testcert.CA(t, "doctor webhook CA").CertPEM
			}},
		{name: "legacy Common Name only", confirm: "x509-legacy-common-name", check: doctor.CheckCertNames, cli: doctor.CheckCertNames,
			explainKubectl: "x509-legacy-common-name", want: []string{"only in its legacy Common Name", "x509ignoreCN=0"},
			setup: func(t *testing.T, s *setupState) {
				s.cert = func(string) tls.Certificate {
					return testcert.Issue(t, s.ca, pki.CertOptions{CommonName: s.service + "." + doctorNS + ".svc", CommonNameOnly: true}).TLSCertificate()
				}
			}},
		{name: "plain HTTP on the port", confirm: "plain-http", check: doctor.CheckReachable, cli: doctor.CheckReachable,
			explainKubectl: "plain-http", want: []string{"plain HTTP", `"HTTP/`},
			setup: func(t *testing.T, s *setupState) { s.replicas[0].mode = "http" }},
		{name: "TLS handshake that hangs", timeout: 3 * time.Second, confirm: "-", check: doctor.CheckReachable, cli: doctor.CheckReachable,
			want:  []string{"did not complete within 1s", "accepts connections but does not answer TLS"},
			setup: func(t *testing.T, s *setupState) { s.replicas[0].mode = "hang" }},
		{name: "client certificate required", confirm: "tls-client-cert-required", check: doctor.CheckReachable, cli: doctor.CheckReachable,
			explainKubectl: "tls-client-cert-required", want: []string{"asks for a client certificate", "presents no client certificate"},
			setup: func(t *testing.T, s *setupState) { s.replicas[0].mode = "clientcert" }},
		{name: "slow webhook", check: "", warning: doctor.CheckLatency,
			setup: func(t *testing.T, s *setupState) { s.review = &reviewTap{sleep: 1100 * time.Millisecond} }},
		{name: "wrong uid at an endpoint", confirm: "response-uid-mismatch", check: doctor.CheckDirect, cli: doctor.CheckDirect,
			explainKubectl: "response-uid-mismatch", want: []string{"the answer's response.uid is", "ConversionReview protocol"},
			setup: func(t *testing.T, s *setupState) { s.review = &reviewTap{uid: "11111111-1111-1111-1111-111111111111"} }},
		{name: "drops an object of batches", confirm: "", check: doctor.CheckDirect, cli: doctor.CheckDirect,
			want:  []string{"converted objects, want 2", "ConversionReview protocol"},
			setup: func(t *testing.T, s *setupState) { s.review = &reviewTap{dropBatch: true} }},
		{name: "wrong path: 404", confirm: "webhook-path-not-found", check: doctor.CheckDirect, cli: doctor.CheckDirect,
			explainKubectl: "webhook-path-not-found", want: []string{"HTTP 404", `"path":"/spec/conversion/webhook/clientConfig/service/path"`},
			setup: func(t *testing.T, s *setupState) {
				// The webhook serves /convert only; the CRD names another path.
				mux := http.NewServeMux()
				mux.Handle("/convert", s.handler)
				s.handler = mux
				s.crd.Spec.Conversion.Webhook.ClientConfig.Service.Path = ptrTo("/conversion")
			}},
		{name: "HTTP 500 on every review", confirm: "webhook-server-error", check: doctor.CheckDirect, cli: doctor.CheckDirect,
			explainKubectl: "webhook-server-error", want: []string{"HTTP 500", "result.status Failure"},
			setup: func(t *testing.T, s *setupState) { s.review = &reviewTap{status: 500} }},
		{name: "webhook refuses one direction", confirm: "conversion-webhook-failed", check: doctor.CheckDirect, cli: doctor.CheckDirect,
			explainKubectl: "conversion-webhook-failed", want: []string{"one direction only"},
			setup: func(t *testing.T, s *setupState) { s.review = &reviewTap{refuseTo: s.group + "/v1alpha1"} }},
	})
}

// The CRD and the Service placement broken in the ways users break them.
func TestDoctorDiagnosesBrokenCRDSetups(t *testing.T) {
	t.Parallel()
	runSetups(t, exposeService, []brokenSetup{
		{name: "invalid caBundle", raw: true, confirm: "error-resolving-resource", check: doctor.CheckConditions, cli: doctor.CheckConditions,
			explainKubectl: "resource-type-unknown", want: []string{"InvalidCABundle", "does not parse as PEM", "base64 -w0 ca.crt"},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = []byte("not a certificate")
			}},
		{name: "Service in another namespace", confirm: "service-not-found", check: doctor.CheckService, cli: doctor.CheckService,
			explainKubectl: "service-not-found",
			want:           []string{"exists in namespace " + doctorNS, `"path":"/spec/conversion/webhook/clientConfig/service/namespace","value":"` + doctorNS + `"`},
			setup: func(t *testing.T, s *setupState) {
				if err := sb.EnsureNamespace(context.Background(), "doctor-elsewhere"); err != nil {
					t.Fatal(err)
				}
				s.crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = "doctor-elsewhere"
			}},
		{name: "Service namespace missing", confirm: "service-not-found", check: doctor.CheckService, cli: doctor.CheckService,
			want: []string{"the namespace doctor-nowhere", "does not exist", "exists in namespace " + doctorNS},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Webhook.ClientConfig.Service.Namespace = "doctor-nowhere"
			}},
		{name: "strategy None, schemas differ", confirm: "", check: doctor.CheckStrategy, cli: doctor.CheckStrategy,
			want: []string{"/spec/replicas only in v1alpha1", "objects exist"},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Strategy, s.crd.Spec.Conversion.Webhook = "None", nil
			}},
		{name: "webhook, single version", check: "", warning: doctor.CheckStrategy,
			setup: func(t *testing.T, s *setupState) { s.crd.Spec.Versions = s.crd.Spec.Versions[1:] }},
	})
}

// doctor --all: every CRD with a conversion webhook, one line each, exit 1
// if any is broken, and for a broken one what else breaks while it is down.
func TestDoctorAll(t *testing.T) {
	// Not parallel: it diagnoses every CRD of the sandbox, and the
	// parallel tests' broken set-ups would be among them.
	healthy := newSetupState(t, brokenSetup{name: "all healthy"})
	healthy.install(t, exposeService, false)
	broken := newSetupState(t, brokenSetup{name: "all broken"})
	broken.install(t, exposeService, false)
	broken.replicas[0].server.Close()

	args := []string{"doctor", "--all", "--kubeconfig", sb.KubeconfigPath(), "--dial-timeout", "1s", "--timeout", "15s",
		"--pod-network-proxy", sb.PodNetworkProxy(), "-o", "json"}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	var got doctor.AllReport
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s%s", code, err, stdout.String(), stderr.String())
	}
	if code != 1 {
		t.Errorf("exit %d with a broken CRD, want 1\n%s", code, stderr.String())
	}
	find := func(name string) *doctor.Summary {
		for i := range got.CRDs {
			if got.CRDs[i].CRD == name {
				return &got.CRDs[i]
			}
		}
		t.Fatalf("--all does not list %s", name)
		return nil
	}
	if s := find(healthy.crd.Name); !s.Healthy {
		t.Errorf("%s: %+v, want healthy", healthy.crd.Name, s.Cause)
	}
	s := find(broken.crd.Name)
	if s.Healthy || s.Cause == nil || s.Cause.Check != doctor.CheckReachable {
		t.Errorf("%s: cause %+v, want webhook.reachable", broken.crd.Name, s.Cause)
	}
	impact := strings.Join(s.Impact, "\n")
	for _, want := range []string{"garbage collector", "through v1alpha1", "follows from the CRD's versions"} {
		if !strings.Contains(impact, want) {
			t.Errorf("impact lacks %q:\n%s", want, impact)
		}
	}
	if slices.ContainsFunc(got.CRDs, func(s doctor.Summary) bool { return s.CRD == "widgets."+plainWidgets.group }) {
		t.Errorf("--all lists a CRD without conversion webhook")
	}
	// The text form: one line each.
	stdout.Reset()
	_ = cli.Main(context.Background(), args[:len(args)-2], strings.NewReader(""), &stdout, &stderr)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(healthy.crd.Name) + ` +OK +healthy`),
		regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(broken.crd.Name) + ` +ERROR +webhook\.reachable at `),
		regexp.MustCompile(`(?m)^ +while it is down: `),
	} {
		if !want.MatchString(stdout.String()) {
			t.Errorf("text lacks %s:\n%s", want, stdout.String())
		}
	}
	t.Logf("\n%s", stdout.String())
}

// kubectlMessage reads the set-up's objects through v1alpha1 with kubectl,
// as a user would, and returns what kubectl says (or the CRD's resource
// without a version when it is not served at all).
func (s *setupState) kubectlMessage(t *testing.T, raw bool) string {
	t.Helper()
	// A GET converts the object (a LIST can be served from the watch
	// cache, converted when the objects entered it).
	args := []string{"--kubeconfig", sb.KubeconfigPath(), "get", "widgets.v1alpha1." + s.group, "w0", "-n", ns}
	if raw {
		args = []string{"--kubeconfig", sb.KubeconfigPath(), "get", "widgets." + s.group, "-n", ns}
	}
	resource := args[3]
	cmd := exec.Command("kubectl", args...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kubectl get %s succeeded:\n%s", resource, out)
	}
	return strings.TrimSpace(string(out))
}

// checkExplained holds explain to a message the sandbox wrote: its first
// explanation must be one of want.
func checkExplained(t *testing.T, msg, want string) {
	t.Helper()
	xs := explain.Explain(msg)
	if len(xs) == 0 || !slices.Contains(strings.Split(want, "|"), xs[0].ID) {
		var ids []string
		for _, x := range xs {
			ids = append(ids, x.ID)
		}
		t.Errorf("explain(%q) = %v, want %s first", msg, ids, want)
		return
	}
	t.Logf("kubectl said (explained as %s, class %s):\n%s", xs[0].ID, xs[0].Class, msg)
}
