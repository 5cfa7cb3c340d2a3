package sandbox

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hubspoke/hubspoke/pki"
)

// AdminUser is the user of the sandbox's kubeconfig and RESTConfig: a
// client certificate in the group system:masters, as kubeadm's admin.conf.
const AdminUser = "hubspoke-sandbox-admin"

// The sandbox cluster's networks. Neither is routed: Service cluster IPs
// are allocated and stored but nothing forwards to them, and pod IPs exist
// only in the egress proxy's table (see [Sandbox.AddEndpoint]).
const (
	ServiceCIDR = "10.96.0.0/12"
	PodCIDR     = "10.244.0.0/16"
)

// clusterPKI is what kube-apiserver and its clients need, from package
// pki: a CA that signs the serving certificate and the admin's client
// certificate, and the service-account signing key.
type clusterPKI struct {
	ca             *pki.CA
	serving, admin *pki.KeyPair
	saKey          crypto.Signer
}

func newClusterPKI() (*clusterPKI, error) {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "hubspoke sandbox cluster CA"})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	serving, err := ca.Issue(pki.CertOptions{
		CommonName: "kube-apiserver",
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		// 10.96.0.1 is the kubernetes Service's cluster IP: the first of
		// ServiceCIDR.
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 96, 0, 1)},
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	admin, err := ca.Issue(pki.CertOptions{CommonName: AdminUser, Organization: []string{"system:masters"}, Usage: pki.ClientAuth})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	saKey, err := pki.NewKey()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return &clusterPKI{ca: ca, serving: serving, admin: admin, saKey: saKey}, nil
}

// write puts the PKI's files in dir and returns their paths.
func (p *clusterPKI) write(dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: pki: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(p.saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("sandbox: pki: %w", err)
	}
	saKey, err := pki.EncodePrivateKey(p.saKey)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	files := map[string][]byte{
		"sa.pub":        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"ca.crt":        p.ca.CertPEM,
		"apiserver.crt": p.serving.CertPEM,
		"apiserver.key": p.serving.KeyPEM,
		"admin.crt":     p.admin.CertPEM,
		"admin.key":     p.admin.KeyPEM,
		"sa.key":        saKey,
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

// egressConfig is kube-apiserver's egress selector configuration: traffic
// to the cluster network (webhooks and aggregated API servers reached
// through Services) goes through the sandbox's HTTP CONNECT proxy on a Unix
// socket, the control plane's and etcd's directly.
func egressConfig(socket string) string {
	return `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: ` + strconv.Quote(socket) + `
- name: controlplane
  connection:
    proxyProtocol: Direct
- name: etcd
  connection:
    proxyProtocol: Direct
`
}

// startEtcd starts etcd in dir on loopback, tuned for tests: no fsync,
// fast ticks. It returns once etcd answers /health.
func startEtcd(ctx context.Context, bin, dir string, log *slog.Logger) (*process, string, error) {
	var last error
	for range 3 { // a lost port race is retried
		ports, err := freePorts(2)
		if err != nil {
			return nil, "", err
		}
		client, peer := loopbackURL("http", ports[0]), loopbackURL("http", ports[1])
		p, err := startProcess("etcd", bin, []string{
			"--name=sandbox",
			"--data-dir=" + filepath.Join(dir, "etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=sandbox=" + peer,
			"--unsafe-no-fsync=true",
			"--heartbeat-interval=10",
			"--election-timeout=100",
			"--log-level=warn",
		}, filepath.Join(dir, "etcd.log"), log)
		if err != nil {
			return nil, "", err
		}
		last = waitHTTP(ctx, p, http.DefaultClient, client+"/health")
		if last == nil {
			return p, client, nil
		}
		p.stop(time.Second)
		if !logHas(p.logPath, "address already in use") {
			break
		}
	}
	return nil, "", last
}

// apiServerArgs are kube-apiserver's flags: those of a kubeadm cluster
// where they matter to a client (RBAC and Node authorization, admission
// defaults, service accounts, aggregator routing to endpoints), loopback
// everywhere else.
func apiServerArgs(port int, etcdURL string, files map[string]string, egressFile string) []string {
	return []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// Endpoints may not be on loopback: the kubernetes Service in
		// default gets none (clients reach the API server directly).
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=" + etcdURL,
		"--tls-cert-file=" + files["apiserver.crt"],
		"--tls-private-key-file=" + files["apiserver.key"],
		"--client-ca-file=" + files["ca.crt"],
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + files["sa.pub"],
		"--service-account-signing-key-file=" + files["sa.key"],
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--enable-aggregator-routing=true",
		"--egress-selector-config-file=" + egressFile,
		"--allow-privileged=true",
		// Never write generated certificates elsewhere.
		"--cert-dir=" + filepath.Dir(files["ca.crt"]),
		"--v=0",
	}
}

// startAPIServer starts kube-apiserver and returns once /readyz answers
// 200 to the admin.
func startAPIServer(ctx context.Context, bin, dir, etcdURL string, files map[string]string, egressFile string, cfg func(host string) *rest.Config, log *slog.Logger) (*process, *rest.Config, error) {
	var last error
	for range 3 { // a lost port race is retried
		ports, err := freePorts(1)
		if err != nil {
			return nil, nil, err
		}
		restConfig := cfg(loopbackURL("https", ports[0]))
		p, err := startProcess("kube-apiserver", bin, apiServerArgs(ports[0], etcdURL, files, egressFile),
			filepath.Join(dir, "kube-apiserver.log"), log)
		if err != nil {
			return nil, nil, err
		}
		client, err := rest.HTTPClientFor(restConfig)
		if err != nil {
			p.stop(time.Second)
			return nil, nil, fmt.Errorf("sandbox: http client: %w", err)
		}
		last = waitHTTP(ctx, p, client, restConfig.Host+"/readyz")
		client.CloseIdleConnections()
		if last == nil {
			return p, restConfig, nil
		}
		p.stop(time.Second)
		if !logHas(p.logPath, "address already in use") {
			break
		}
	}
	return nil, nil, last
}

// waitHTTP polls url until it answers 200, p exits or ctx ends.
func waitHTTP(ctx context.Context, p *process, client *http.Client, url string) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = probe(ctx, client, url); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exited()
		case <-ctx.Done():
			return fmt.Errorf("sandbox: %s not ready: %w (last probe: %w); the end of its log (%s):\n%s", p.name, ctx.Err(), last, p.logPath, p.logTail(20))
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(url + " answered " + resp.Status)
	}
	return nil
}
