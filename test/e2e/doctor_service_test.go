package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hubspoke/hubspoke/doctor"
	"github.com/hubspoke/hubspoke/internal/testcert"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/sandbox"
)

// exposeService makes the webhook an endpoint of a Service of the sandbox
// (ClusterIP, port 443 to 9443, an EndpointSlice with a pod IP the API
// server reaches through its egress proxy), as a Deployment behind a
// Service is in a cluster.
func exposeService(t *testing.T, s *setupState, r *replicaState) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := sb.AddEndpoint(ctx, sandbox.EndpointOptions{Namespace: doctorNS, Service: s.service, Addr: r.listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Remove(context.Background()) })
	r.endpoint = ep
	r.podAddr = net.JoinHostPort(ep.IP().String(), fmt.Sprint(sandbox.DefaultTargetPort))
	r.pod = s.service + "-" + ep.IP().String() // the sandbox's EndpointSlice names it so
	return ep.IP().String()
}

// The set-ups that break what lies between the API server and the webhook
// in a cluster: the Service, its port, its endpoints, the certificate's
// names against the Service's DNS name.
func TestDoctorDiagnosesBrokenServiceSetups(t *testing.T) {
	t.Parallel() // its own groups and namespaces; waits mostly on timeouts
	runSetups(t, exposeService, []brokenSetup{
		{name: "service healthy", check: ""},
		{name: "wrong Service name", confirm: "service-not-found", explainKubectl: "service-not-found", check: doctor.CheckService, cli: doctor.CheckService,
			want: []string{`-webhok, named in clientConfig.service, does not exist`, `"path":"/spec/conversion/webhook/clientConfig/service/name","value":"svc-wrong-service-name-webhook"`},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Webhook.ClientConfig.Service.Name = s.service[:len(s.service)-2] + "k" // webhook -> webhok
			}},
		{name: "wrong port", confirm: "service-port-not-found", check: doctor.CheckServicePort, cli: doctor.CheckServicePort,
			want: []string{"has no port 8443 (its ports: 443)", `"path":"/spec/conversion/webhook/clientConfig/service/port","value":443`},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Webhook.ClientConfig.Service.Port = ptrTo(int32(8443))
			}},
		{name: "no endpoints", confirm: "no-endpoints", explainKubectl: "no-endpoints", check: doctor.CheckEndpoints, cli: doctor.CheckEndpoints,
			want: []string{"no endpoint of Service doctor/", "no endpoints available for service"},
			after: func(t *testing.T, s *setupState) {
				if err := s.replicas[0].endpoint.Remove(context.Background()); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "endpoints not ready", confirm: "no-endpoints", check: doctor.CheckEndpointsReady, cli: doctor.CheckEndpointsReady,
			want: []string{"none of the 1 endpoints is ready", "/readyz"},
			after: func(t *testing.T, s *setupState) {
				if err := s.replicas[0].endpoint.SetReady(context.Background(), false); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "service caBundle of another CA", confirm: "x509-unknown-authority", explainKubectl: "x509-unknown-authority", check: doctor.CheckCertChain,
			want: []string{`issued by "CN=doctor webhook CA"`, `("CN=another CA")`, "base64 -w0 ca.crt"},
			setup: func(t *testing.T, s *setupState) {
				s.crd.Spec.Conversion.Webhook.ClientConfig.CABundle = s.otherCA.CertPEM
			}},
		{name: "certificate for the pod IP only", confirm: "x509-no-matching-san", explainKubectl: "x509-no-matching-san", check: doctor.CheckCertNames,
			want: []string{"do not include svc-certificate-for-the-webhook.doctor.svc", "DNS SANs svc-certificate-for-the-webhook.doctor.svc"},
			setup: func(t *testing.T, s *setupState) {
				s.cert = func(podIP string) tls.Certificate {
					return testcert.Issue(t, s.ca, pki.CertOptions{IPs: []net.IP{net.ParseIP(podIP)}}).TLSCertificate()
				}
			}},
		{name: "service expired certificate", confirm: "x509-expired", explainKubectl: "x509-expired", check: doctor.CheckCertExpiry,
			want: []string{"the serving certificate expired at", "renew"},
			setup: func(t *testing.T, s *setupState) {
				s.cert = func(string) tls.Certificate {
					return testcert.Issue(t, s.ca, pki.CertOptions{DNSNames: []string{s.service + "." + doctorNS + ".svc"},
						NotBefore: time.Now().Add(-72 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}).TLSCertificate()
				}
			}},
		{name: "service webhook down", confirm: "egress-proxy-dial-failed|connection-refused", explainKubectl: "connection-refused|egress-proxy-dial-failed", check: doctor.CheckReachable,
			want: []string{"connection refused", "the webhook process is down"},
			after: func(t *testing.T, s *setupState) {
				s.replicas[0].server.Close()
			}},
	})
}
