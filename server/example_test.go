package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/server"
)

// Run serves a review.Handler over HTTPS until its context is cancelled.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "hubspoke-certs")
	defer os.RemoveAll(dir)
	roots := writeCerts(dir) // in a cluster: a kubernetes.io/tls Secret mounted at dir

	reg := prometheus.NewRegistry()
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{widgetConverter{}}, Registerer: reg})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background()) // signal.NotifyContext(..., SIGTERM) in a main
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Options{
			Addr:          "127.0.0.1:0",
			CertDir:       dir,
			Handler:       h,
			Registerer:    reg,
			ShutdownDelay: time.Millisecond,
			OnReady:       func(a net.Addr) { ready <- a },
		})
	}()
	addr := <-ready

	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := c.Get("https://" + addr.String() + "/readyz")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("readyz: %d %s", resp.StatusCode, body)

	cancel()
	fmt.Println("Run returned:", <-done)
	// Output:
	// readyz: 200 ok
	// Run returned: <nil>
}

type widgetConverter struct{}

func (widgetConverter) Group() string      { return "example.com" }
func (widgetConverter) Kind() string       { return "Widget" }
func (widgetConverter) Versions() []string { return []string{"v1"} }
func (widgetConverter) Convert(dst, obj []byte, to string) ([]byte, error) {
	return append(dst, obj...), nil
}

// writeCerts writes a serving certificate for localhost, issued by a new
// CA, into dir as tls.crt and tls.key, and returns the CA (what a client
// trusts: the CRD's caBundle).
func writeCerts(dir string) *x509.CertPool {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "example CA"})
	if err != nil {
		panic(err)
	}
	kp, err := ca.Issue(pki.CertOptions{DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		panic(err)
	}
	if err := kp.WriteFiles(dir); err != nil {
		panic(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return roots
}
