package deploy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
)

// AdmissionPath is where the operator serves its validating webhook
// (operator.AdmissionPath).
const AdmissionPath = "/validate-conversion"

// AdmissionWebhookName is the name of the operator's validating webhook.
const AdmissionWebhookName = "conversions.hubspoke.dev"

// admissionWebhook returns the ValidatingWebhookConfiguration that sends
// every create and update of a Conversion to the operator's Service
// namespace/service (port 443, AdmissionPath). It fails closed: a
// Conversion nobody checked is never stored. caBundle may be nil when
// cert-manager's cainjector fills it (injectFrom).
func admissionWebhook(name, namespace, service string, caBundle []byte, injectFrom string, labels map[string]string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	scope := admissionregistrationv1.ClusterScope
	timeout := int32(30)
	port := int32(ServicePort)
	path := AdmissionPath
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: AdmissionWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: service, Path: &path, Port: &port},
				CABundle: caBundle,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{v1alpha1.Group}, APIVersions: []string{v1alpha1.Version},
					Resources: []string{v1alpha1.Resource}, Scope: &scope,
				},
			}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if injectFrom != "" {
		c.Annotations = map[string]string{InjectCAFrom: injectFrom}
	}
	return c
}

// AdmissionWebhook returns the operator's ValidatingWebhookConfiguration
// for an operator behind the Service namespace/service whose serving
// certificate caBundle verifies.
func AdmissionWebhook(namespace, service string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return admissionWebhook(service, namespace, service, caBundle, "", nil)
}
