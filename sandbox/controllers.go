package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/hubspoke/hubspoke/pki"
)

// Controllers are the kube-controller-manager controllers a sandbox runs
// with Options.ControllerManager: those a custom resource's life needs
// with no nodes. The garbage collector deletes objects whose owners are
// gone (and the storage version migrator reads the objects from its
// caches); the namespace controller empties and finalizes a deleted
// namespace; the resource quota controller counts objects; the storage
// version migrator runs StorageVersionMigrations
// (storagemigration.k8s.io/v1); the service account controller gives each
// namespace its default ServiceAccount.
var Controllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"resourcequota-controller",
	"storage-version-migrator-controller",
	"serviceaccount-controller",
}

// ControllerManagerUser is the user kube-controller-manager authenticates
// as: a client certificate in the group system:masters, as the admin. (A
// cluster gives each controller a service account with a role of its own;
// the sandbox has no kubelet to mount their tokens.)
const ControllerManagerUser = "system:kube-controller-manager"

// controllerManagerArgs are kube-controller-manager's flags: the
// controllers of Controllers, loopback serving, no leader election, and
// the quick resyncs a test wants (a namespace deleted, a quota counted,
// discovery of new CRDs read again within seconds).
func controllerManagerArgs(port int, kubeconfig string, files map[string]string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + files["controller-manager.crt"],
		"--tls-private-key-file=" + files["controller-manager.key"],
		"--controllers=" + strings.Join(Controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--enable-garbage-collector=true",
		// The rate at which quota usage is recalculated, and discovery is
		// read again for resources to collect and count: a CRD installed
		// by a test is seen within seconds (the defaults are 5 minutes
		// and 30 seconds).
		"--resource-quota-sync-period=10s",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--v=0",
	}
}

// controllerManagerPKI issues kube-controller-manager's serving certificate
// (127.0.0.1) and client certificate, writes them into dir with a
// kubeconfig, and returns their paths ("controller-manager.kubeconfig" the
// kubeconfig's).
func controllerManagerPKI(ca *pki.CA, host, dir string) (map[string]string, error) {
	serving, err := ca.Issue(pki.CertOptions{CommonName: "kube-controller-manager", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	client, err := ca.Issue(pki.CertOptions{CommonName: ControllerManagerUser, Organization: []string{"system:masters"}, Usage: pki.ClientAuth})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos["controller-manager"] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
	cfg.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "controller-manager"}
	cfg.CurrentContext = "sandbox"
	kubeconfig, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode kubeconfig: %w", err)
	}
	files := map[string][]byte{
		"controller-manager.crt":        serving.CertPEM,
		"controller-manager.key":        serving.KeyPEM,
		"controller-manager.kubeconfig": kubeconfig,
	}
	paths := map[string]string{}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: pki: %w", err)
		}
		paths[name] = path
	}
	return paths, nil
}

// startControllerManager starts kube-controller-manager and returns once
// its /healthz answers 200 (its controllers are then started; each one
// begins its work once its caches are filled).
func startControllerManager(ctx context.Context, bin, dir string, ca *pki.CA, host string, log *slog.Logger) (*process, error) {
	files, err := controllerManagerPKI(ca, host, filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	var last error
	for range 3 { // a lost port race is retried
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		p, err := startProcess("kube-controller-manager", bin, controllerManagerArgs(ports[0], files["controller-manager.kubeconfig"], files),
			filepath.Join(dir, "kube-controller-manager.log"), log)
		if err != nil {
			return nil, err
		}
		last = waitHTTP(ctx, p, client, loopbackURL("https", ports[0])+"/healthz")
		if last == nil {
			return p, nil
		}
		p.stop(time.Second)
		if !logHas(p.logPath, "address already in use") {
			break
		}
	}
	return nil, last
}
