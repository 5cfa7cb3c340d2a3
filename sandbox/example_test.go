package sandbox_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log"
	"net/http"

	"github.com/hubspoke/hubspoke/sandbox"
)

// A sandbox with a conversion webhook served in-process: the CRD names the
// Service hubspoke-system/hubspoke-webhook; the webhook is its endpoint, the
// API server reaches it through the Service, and the sandbox injects the
// webhook's CA as the CRD's caBundle.
//
// (Not run by go test: TestStart is this package's one sandbox.)
func Example() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Stop()

	var converter http.Handler // your ConversionReview handler
	if _, err := sb.ServeWebhook("hubspoke-system", "hubspoke-webhook", converter); err != nil {
		log.Fatal(err)
	}
	crd, err := sandbox.ReadCRDFile("examples/widget/crd.yaml")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sb.InstallCRD(ctx, crd); err != nil {
		log.Fatal(err)
	}
	fmt.Println("KUBECONFIG=" + sb.KubeconfigPath())
	// Use sb.RESTConfig() with client-go, or the kubeconfig with kubectl.
}

// A webhook server run by the caller (here: another process listening on
// 127.0.0.1:9443, with a certificate for NAME.NAMESPACE.svc) made a "pod"
// of a Service, ready when its /readyz answers, as the kubelet would probe
// it. Several such endpoints may serve one Service.
//
// (Not run by go test.)
func ExampleSandbox_AddEndpoint() {
	ctx := context.Background()
	sb, err := sandbox.New(ctx, sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Stop()
	cert, err := sandbox.NewServiceCert("hubspoke-system", "hubspoke-webhook")
	if err != nil {
		log.Fatal(err)
	}
	// ... start the webhook process with cert.Cert and cert.Key ...
	ep, err := sb.AddEndpoint(ctx, sandbox.EndpointOptions{
		Namespace: "hubspoke-system", Service: "hubspoke-webhook",
		Addr: "127.0.0.1:9443", ReadinessPath: "/readyz", CABundle: cert.CA,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := ep.WaitReady(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("pod", ep.IP(), "is a ready endpoint of hubspoke-system/hubspoke-webhook")
}

// A webhook serving certificate for a service reference, as the API server
// checks it when it calls a webhook through clientConfig.service.
func ExampleNewServiceCert() {
	cert, err := sandbox.NewServiceCert("hubspoke-system", "hubspoke-webhook")
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cert.CA) // the CRD's caBundle
	block, _ := pem.Decode(cert.Cert)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		log.Fatal(err)
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "hubspoke-webhook.hubspoke-system.svc", Roots: roots})
	fmt.Println("valid for hubspoke-webhook.hubspoke-system.svc:", err == nil)
	// Output: valid for hubspoke-webhook.hubspoke-system.svc: true
}
