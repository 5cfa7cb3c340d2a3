package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hubspoke/hubspoke/internal/cli"
)

// kubectlStdin runs kubectl against the sandbox with stdin as its standard
// input and returns its standard output and error, and its error.
func kubectlStdin(t *testing.T, stdin []byte, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	path, lerr := exec.LookPath("kubectl")
	if lerr != nil {
		t.Fatalf("kubectl is not installed: %v", lerr)
	}
	cmd := exec.Command(path, append([]string{"--kubeconfig", sb.KubeconfigPath()}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// hubspokeCLI runs the hubspoke command line in process and returns its
// standard output; a non-zero exit fails the test.
func hubspokeCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(context.Background(), args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("hubspoke %v: exit %d\n%s", args, code, errb.Bytes())
	}
	return out.Bytes()
}

// TestDeployDryRun: every manifest `hubspoke deploy` prints, in both
// certificate modes, passes `kubectl apply --dry-run=server` on the
// sandbox's kube-apiserver: validated, defaulted and admitted, with strict
// field validation, not stored.
func TestDeployDryRun(t *testing.T) {
	// Not parallel: it installs the cert-manager.io stand-in CRDs for real,
	// and TestRealCRDFixtures (parallel) installs the real
	// certificates.cert-manager.io; run beside it, the later write wins.
	crds, err := os.ReadFile("testdata/cert-manager-crds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := kubectlStdin(t, crds, "apply", "-f", "-"); err != nil {
		t.Fatalf("installing the cert-manager stand-in CRDs: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := kubectlStdin(t, nil, "wait", "--for=condition=Established", "crd/issuers.cert-manager.io", "crd/certificates.cert-manager.io"); err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	// A dry run creates nothing, so the objects in a namespace that the
	// same dry run "creates" would be refused as NotFound: create the
	// namespaces for real first, as a second apply would find them.
	for _, ns := range []string{"hubspoke-system", "conversion", "conv2"} {
		if err := sb.EnsureNamespace(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cert-manager", []string{"--certs", "cert-manager"}},
		{"hubspoke", []string{"--certs", "hubspoke", "-n", "conversion", "--name", "widgets-webhook"}},
		{"two CRDs", []string{"-f", "../../examples/evolving-widget/crd.yaml", "--rules", "../../examples/evolving-widget/conversion.yaml", "--certs", "hubspoke", "-n", "conv2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"deploy", "-f", "../../examples/widget/crd.yaml", "--rules", "../../examples/widget/conversion.yaml"}, tc.args...)
			manifests := hubspokeCLI(t, args...)
			out, stderr, err := kubectlStdin(t, manifests, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s%s", err, out, stderr)
			}
			n := strings.Count(string(manifests), "\n---\n") + 1
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != n {
				t.Errorf("kubectl answered for %d objects, deploy printed %d:\n%s", len(lines), n, out)
			}
			for _, l := range lines {
				if !strings.HasSuffix(l, "(server dry run)") {
					t.Errorf("not a server dry run: %q", l)
				}
			}
			t.Logf("%d objects pass --dry-run=server:\n%s", n, out)
		})
	}
}
