package operator

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/pki"
)

// Reasons of the conditions.
const (
	ReasonLoaded             = "Loaded"
	ReasonLoadFailed         = "LoadFailed"
	ReasonCRDNotFound        = "CRDNotFound"
	ReasonCRDMismatch        = "CRDMismatch"
	ReasonStaticChecks       = "StaticChecksFailed"
	ReasonAllReplicasServe   = "AllReplicasServe"
	ReasonRollingOut         = "RollingOut"
	ReasonNoReadyReplica     = "NoReadyReplica"
	ReasonReplicaLoadFailed  = "ReplicaLoadFailed"
	ReasonConfigured         = "Configured"
	ReasonWaitingForReplicas = "WaitingForReplicas"
	ReasonNoCABundle         = "NoCABundle"
	ReasonNotTrusted         = "CertificateNotTrusted"
	ReasonNotAccepted        = "NotAccepted"
)

// observed is what a reconcile of one Conversion sees.
type observed struct {
	name, uid  string
	generation int64
	file       *rules.File // nil when the rules do not load
	loadErr    error
	staticErr  string // check.Static's errors, one line each
	crd        *apiextv1.CustomResourceDefinition
	replicas   []replica
	// bundle is the caBundle the CRD has or will get, and bundleErr why
	// there is none.
	bundle    []byte
	bundleErr string
	wantHook  webhookRef
	prev      v1alpha1.Status
}

// webhookRef is where the CRDs are pointed.
type webhookRef struct {
	namespace, name, path string
	port                  int32
	injectCAFrom          string // cert-manager.io/inject-ca-from, or ""
}

// decision is what a reconcile does.
type decision struct {
	status v1alpha1.Status
	// conversion is the CRD's new spec.conversion (nil: leave it).
	conversion *apiextv1.CustomResourceConversion
	// settled: nothing is rolling out (poll less often).
	settled bool
}

// reviewVersions are the ConversionReview versions the webhook answers.
var reviewVersions = []string{"v1", "v1beta1"}

// decide computes the status of a Conversion and the CRD's conversion
// stanza from what is observed. The CRD is switched only when every ready
// replica serves the Conversion's current generation over TLS that its
// caBundle verifies.
func decide(o observed, now metav1.Time) (d decision) {
	st := o.prev
	st.ObservedGeneration = o.generation
	set := func(t string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		c := metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: o.generation, LastTransitionTime: now}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	defer func() { d.status = st }()

	// Accepted: the rules load and pass the static checks against the CRD.
	accepted := false
	switch {
	case o.crd == nil:
		set(v1alpha1.ConditionAccepted, false, ReasonCRDNotFound, fmt.Sprintf("no CustomResourceDefinition %s: a Conversion is named after the CRD it converts", o.name))
	case o.file != nil && (o.file.Group != o.crd.Spec.Group || o.file.Kind != o.crd.Spec.Names.Kind):
		set(v1alpha1.ConditionAccepted, false, ReasonCRDMismatch, fmt.Sprintf("CRD %s is %s.%s, the rules convert %s.%s", o.crd.Name, o.crd.Spec.Names.Kind, o.crd.Spec.Group, o.file.Kind, o.file.Group))
	case o.loadErr != nil:
		set(v1alpha1.ConditionAccepted, false, ReasonLoadFailed, o.loadErr.Error())
	case o.staticErr != "":
		set(v1alpha1.ConditionAccepted, false, ReasonStaticChecks, o.staticErr)
	default:
		accepted = true
		set(v1alpha1.ConditionAccepted, true, ReasonLoaded, "the rules load and pass check's static checks against the CRD (and passed the laws and rollout safety at admission)")
	}
	if o.crd != nil {
		st.CRD = o.crd.Name
	}

	// Serving: every ready replica serves this generation.
	st.Replicas = nil
	var ready, serving int
	var lagging, failed, untrusted []string
	served := int64(-1)
	for _, r := range o.replicas {
		rep := v1alpha1.Replica{Name: r.name, Address: r.addr, Ready: r.ready}
		c := r.conversion(o.name, o.uid)
		switch {
		case r.err != nil:
			rep.Message = "not asked: " + r.err.Error()
		case c == nil:
			rep.Message = "does not serve this Conversion (is it outside the webhook's --selector?)"
		default:
			rep.ServedGeneration = c.Generation
			if c.Error != "" {
				rep.Message = c.Error
			}
		}
		st.Replicas = append(st.Replicas, rep)
		if !r.ready {
			continue
		}
		ready++
		var nt *notTrustedError
		if errors.As(r.err, &nt) {
			untrusted = append(untrusted, fmt.Sprintf("%s: %v", r.name, nt.err))
		}
		if r.err == nil && c != nil && c.Generation == o.generation {
			serving++
		} else if c != nil && c.FailedGeneration == o.generation {
			failed = append(failed, fmt.Sprintf("%s: %s", r.name, c.Error))
		} else {
			why := rep.Message
			if why == "" {
				why = fmt.Sprintf("serves generation %d", rep.ServedGeneration)
			}
			lagging = append(lagging, fmt.Sprintf("%s (%s)", r.name, why))
		}
		if served < 0 || rep.ServedGeneration < served {
			served = rep.ServedGeneration
		}
	}
	if served > 0 {
		st.ServedGeneration = served
	}
	allServe := ready > 0 && serving == ready
	switch {
	case ready == 0:
		set(v1alpha1.ConditionServing, false, ReasonNoReadyReplica, fmt.Sprintf("service %s/%s has no ready endpoint", o.wantHook.namespace, o.wantHook.name))
	case allServe:
		set(v1alpha1.ConditionServing, true, ReasonAllReplicasServe, fmt.Sprintf("all %d ready replicas serve generation %d", ready, o.generation))
	case len(failed) > 0:
		set(v1alpha1.ConditionServing, false, ReasonReplicaLoadFailed, fmt.Sprintf("generation %d does not load in %d of %d ready replicas, which keep serving their last good generation: %s", o.generation, len(failed), ready, strings.Join(failed, "; ")))
	default:
		set(v1alpha1.ConditionServing, false, ReasonRollingOut, fmt.Sprintf("%d of %d ready replicas serve generation %d; waiting for %s", serving, ready, o.generation, strings.Join(lagging, ", ")))
	}

	// CRDConfigured.
	if !accepted {
		set(v1alpha1.ConditionCRDConfigured, false, ReasonNotAccepted, "the CRD is left as it is while the Conversion is not accepted")
		return d
	}
	want := o.wantHook.conversion(o.bundle)
	cur := o.crd.Spec.Conversion
	pointsHere := pointsAt(cur, o.wantHook)
	switch {
	case o.bundleErr != "":
		set(v1alpha1.ConditionCRDConfigured, false, ReasonNoCABundle, o.bundleErr)
	case len(untrusted) > 0:
		verb := "is not switched to the webhook"
		if pointsHere {
			verb = "points at the webhook, but the API server's calls to these replicas fail"
		}
		set(v1alpha1.ConditionCRDConfigured, false, ReasonNotTrusted, fmt.Sprintf("the CRD %s: the caBundle does not verify the serving certificate of %s", verb, strings.Join(untrusted, "; ")))
	case !allServe && !pointsHere:
		set(v1alpha1.ConditionCRDConfigured, false, ReasonWaitingForReplicas, "the CRD is switched to the webhook once every ready replica serves this generation")
	case !allServe:
		// It points here already: older generations answer meanwhile.
		set(v1alpha1.ConditionCRDConfigured, true, ReasonConfigured, fmt.Sprintf("spec.conversion points at service %s/%s; generation %d is rolling out", o.wantHook.namespace, o.wantHook.name, o.generation))
	default:
		if !sameConversion(cur, want) {
			d.conversion = want
		}
		d.settled = d.conversion == nil
		set(v1alpha1.ConditionCRDConfigured, true, ReasonConfigured, fmt.Sprintf("spec.conversion points at service %s/%s, path %s, with a caBundle that verifies every ready replica", o.wantHook.namespace, o.wantHook.name, o.wantHook.path))
	}
	return d
}

// conversion is the CRD's spec.conversion for this webhook.
func (w webhookRef) conversion(bundle []byte) *apiextv1.CustomResourceConversion {
	port, path := w.port, w.path
	return &apiextv1.CustomResourceConversion{
		Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{
			ConversionReviewVersions: slices.Clone(reviewVersions),
			ClientConfig: &apiextv1.WebhookClientConfig{
				Service:  &apiextv1.ServiceReference{Namespace: w.namespace, Name: w.name, Path: &path, Port: &port},
				CABundle: bytes.Clone(bundle),
			},
		},
	}
}

// pointsAt says whether a CRD's conversion is this webhook.
func pointsAt(c *apiextv1.CustomResourceConversion, w webhookRef) bool {
	if c == nil || c.Strategy != apiextv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil {
		return false
	}
	s := c.Webhook.ClientConfig.Service
	return s.Namespace == w.namespace && s.Name == w.name
}

// sameConversion says whether a CRD's conversion already is want.
func sameConversion(cur, want *apiextv1.CustomResourceConversion) bool {
	if cur == nil || cur.Strategy != want.Strategy || cur.Webhook == nil || cur.Webhook.ClientConfig == nil || cur.Webhook.ClientConfig.Service == nil {
		return false
	}
	c, w := cur.Webhook.ClientConfig, want.Webhook.ClientConfig
	port := int32(443)
	if c.Service.Port != nil {
		port = *c.Service.Port
	}
	path := ""
	if c.Service.Path != nil {
		path = *c.Service.Path
	}
	return c.Service.Namespace == w.Service.Namespace && c.Service.Name == w.Service.Name &&
		port == *w.Service.Port && path == *w.Service.Path && c.URL == nil &&
		bytes.Equal(c.CABundle, w.CABundle) &&
		slices.Equal(cur.Webhook.ConversionReviewVersions, want.Webhook.ConversionReviewVersions)
}

// chooseBundle returns the caBundle the CRD is to have: its own when it
// already points at the webhook (renewal is cert-manager's cainjector's or
// `hubspoke certs rotate`'s, in their safe order, never the operator's),
// else the CA of the serving Secret.
func chooseBundle(crd *apiextv1.CustomResourceDefinition, w webhookRef, secretCA []byte, secretErr error) ([]byte, string) {
	if crd != nil && pointsAt(crd.Spec.Conversion, w) && len(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) > 0 {
		return crd.Spec.Conversion.Webhook.ClientConfig.CABundle, ""
	}
	if secretErr != nil {
		return nil, fmt.Sprintf("no caBundle to give the CRD: %v", secretErr)
	}
	if _, err := pki.ParseCertificates(secretCA); err != nil {
		return nil, fmt.Sprintf("no caBundle to give the CRD: the serving Secret's ca.crt: %v", err)
	}
	return secretCA, ""
}
