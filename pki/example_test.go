package pki_test

import (
	"crypto/x509"
	"fmt"
	"log"
	"time"

	"github.com/hubspoke/hubspoke/pki"
)

// A CA and a serving certificate for the Service hubspoke-webhook in
// hubspoke-system: the certificate goes into a kubernetes.io/tls Secret,
// the CA's PEM into the CRD's caBundle.
func Example() {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "hubspoke-webhook CA"})
	if err != nil {
		log.Fatal(err)
	}
	serving, err := ca.IssueService("hubspoke-system", "hubspoke-webhook", pki.CertOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(serving.Cert.DNSNames)
	caBundle := pki.Bundle(ca.Cert)
	roots, err := pki.ParseCertificates(caBundle)
	if err != nil {
		log.Fatal(err)
	}
	err = pki.Verify([]*x509.Certificate{serving.Cert}, roots, pki.ServiceServerName("hubspoke-system", "hubspoke-webhook"), time.Now())
	fmt.Println("the API server would accept it:", err == nil)
	// Output:
	// [hubspoke-webhook hubspoke-webhook.hubspoke-system hubspoke-webhook.hubspoke-system.svc hubspoke-webhook.hubspoke-system.svc.cluster.local]
	// the API server would accept it: true
}

// A rotation in the safe order: the bundle holds both CAs while the
// serving certificate switches, and the old CA leaves last.
func ExampleBundle() {
	oldCA, _ := pki.NewCA(pki.CAOptions{CommonName: "old"})
	newCA, _ := pki.NewCA(pki.CAOptions{CommonName: "new"})

	// 1. Add the new CA next to the old one; wait until the API server uses it.
	both, _ := pki.ParseCertificates(pki.Bundle(oldCA.Cert, newCA.Cert))
	// 2. Switch the serving certificate: both are trusted meanwhile.
	oldServing, _ := oldCA.IssueService("ns", "webhook", pki.CertOptions{})
	newServing, _ := newCA.IssueService("ns", "webhook", pki.CertOptions{})
	for _, kp := range []*pki.KeyPair{oldServing, newServing} {
		err := pki.Verify([]*x509.Certificate{kp.Cert}, both, "webhook.ns.svc", time.Now())
		fmt.Println("trusted during the switch:", err == nil)
	}
	// 3. Drop the old CA.
	last := pki.Without(both, oldCA.Cert)
	fmt.Println("CAs left:", len(last), last[0].Subject.CommonName)
	// Output:
	// trusted during the switch: true
	// trusted during the switch: true
	// CAs left: 1 new
}

// Renew when fewer than 30 days are left.
func ExampleExpiresWithin() {
	ca, _ := pki.NewCA(pki.CAOptions{})
	now := time.Now()
	kp, _ := ca.Issue(pki.CertOptions{DNSNames: []string{"x"}, NotAfter: now.Add(20 * 24 * time.Hour)})
	fmt.Println(pki.ExpiresWithin(kp.Cert, now, 30*24*time.Hour))
	fmt.Println(pki.ExpiresWithin(ca.Cert, now, 30*24*time.Hour))
	// Output:
	// true
	// false
}

// A client certificate for a Kubernetes cluster's administrator, as
// kubeadm's admin.conf holds one: the API server takes the CommonName as
// the user and each Organization as a group.
func ExampleCA_Issue_client() {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "cluster CA"})
	if err != nil {
		log.Fatal(err)
	}
	admin, err := ca.Issue(pki.CertOptions{
		CommonName:   "kubernetes-admin",
		Organization: []string{"system:masters"},
		Usage:        pki.ClientAuth,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(admin.Cert.Subject)
	fmt.Println(admin.Cert.ExtKeyUsage[0] == x509.ExtKeyUsageClientAuth, len(admin.Cert.ExtKeyUsage))
	// Output:
	// CN=kubernetes-admin,O=system:masters
	// true 1
}
