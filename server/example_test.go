package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/server"
)

// Run serves a review.Handler over HTTPS until its context is cancelled.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "hubspoke-certs")
	defer os.RemoveAll(dir)
	writeSelfSigned(dir) // in a cluster: a kubernetes.io/tls Secret mounted at dir

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

	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // for brevity only
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

func writeSelfSigned(dir string) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	kder, _ := x509.MarshalECPrivateKey(key)
	_ = os.WriteFile(filepath.Join(dir, server.CertFileName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	_ = os.WriteFile(filepath.Join(dir, server.KeyFileName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}
