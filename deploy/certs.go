package deploy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/pki"
)

// Validity of the certificates cert-manager issues (hubspoke mode uses
// pki's defaults, the same lengths).
const (
	certManagerCADuration      = "43800h" // 5 years, pki.DefaultCAValidity
	certManagerServingDuration = "2160h"  // 90 days, cert-manager's default
	certManagerRenewBefore     = "720h"   // 30 days
)

// certManager returns a CA chain so that renewing the serving certificate
// never changes the CA the CRDs trust: a self-signed Issuer signs a CA
// Certificate; an Issuer backed by that CA signs the serving Certificate,
// whose Secret (tls.crt, tls.key, ca.crt) the pods mount and whose ca.crt
// cainjector copies into each CRD's caBundle.
func (n names) certManager() []any {
	issuer := func(name string, spec map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": "cert-manager.io/v1",
			"kind":       "Issuer",
			"metadata":   n.unstructuredMeta(name),
			"spec":       spec,
		}
	}
	cert := func(name string, spec map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": "cert-manager.io/v1",
			"kind":       "Certificate",
			"metadata":   n.unstructuredMeta(name),
			"spec":       spec,
		}
	}
	ecdsa := map[string]any{"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}
	var dns []any
	for _, d := range pki.ServiceDNSNames(n.ns, n.name) {
		dns = append(dns, d)
	}
	return []any{
		issuer(n.name+"-selfsigned", map[string]any{"selfSigned": map[string]any{}}),
		cert(n.caSecretName(), map[string]any{
			"isCA":       true,
			"commonName": n.name + "." + n.ns + " webhook CA",
			"secretName": n.caSecretName(),
			"duration":   certManagerCADuration,
			"privateKey": ecdsa,
			"issuerRef":  map[string]any{"name": n.name + "-selfsigned", "kind": "Issuer", "group": "cert-manager.io"},
		}),
		issuer(n.caSecretName(), map[string]any{"ca": map[string]any{"secretName": n.caSecretName()}}),
		cert(n.name, map[string]any{
			"commonName":  pki.ServiceServerName(n.ns, n.name),
			"dnsNames":    dns,
			"secretName":  n.servingSecretName(),
			"duration":    certManagerServingDuration,
			"renewBefore": certManagerRenewBefore,
			"privateKey":  ecdsa,
			"usages":      []any{"server auth", "digital signature"},
			"issuerRef":   map[string]any{"name": n.caSecretName(), "kind": "Issuer", "group": "cert-manager.io"},
		}),
	}
}

func (n names) unstructuredMeta(name string) map[string]any {
	labels := map[string]any{}
	for k, v := range n.labels() {
		labels[k] = v
	}
	return map[string]any{"name": name, "namespace": n.ns, "labels": labels}
}

// caSecret holds hubspoke mode's CA and its key, for `hubspoke certs
// rotate`; no pod mounts it.
func (n names) caSecret(ca *pki.CA) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: n.meta(n.caSecretName()),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{pki.CertFile: ca.CertPEM, pki.KeyFile: ca.KeyPEM},
	}
}

// servingSecret is the Secret the pods mount: the serving certificate and
// key, and the CA bundle as ca.crt (as cert-manager writes it).
func (n names) servingSecret(kp *pki.KeyPair, caBundle []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: n.meta(n.servingSecretName()),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{pki.CertFile: kp.CertPEM, pki.KeyFile: kp.KeyPEM, pki.CAFile: caBundle},
	}
}
