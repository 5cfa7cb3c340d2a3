package operator

import (
	"errors"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/pki"
)

var hook = webhookRef{namespace: "hubspoke-system", name: "hubspoke-webhook", path: "/convert", port: 443}

func widgetsCRD(conv *apiextv1.CustomResourceConversion) *apiextv1.CustomResourceDefinition {
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com", Names: apiextv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
			Conversion: conv,
		},
	}
}

// rep is a replica serving widgets.example.com at generation gen (0: not
// at all), with a load error of failed when set.
func rep(name string, ready bool, gen, failed int64, err error) replica {
	r := replica{endpoint: endpoint{name: name, addr: "10.244.0.1:8443", ready: ready}, err: err}
	if err == nil {
		r.served = &v1alpha1.Served{Synced: true}
		if gen > 0 || failed > 0 {
			c := v1alpha1.ServedConversion{Name: "widgets.example.com", UID: "u", Generation: gen}
			if failed > 0 {
				c.FailedGeneration, c.Error = failed, "conversion widgets.example.com: boom"
			}
			r.served.Conversions = append(r.served.Conversions, c)
		}
	}
	return r
}

func cond(st v1alpha1.Status, t string) metav1.Condition {
	c := meta.FindStatusCondition(st.Conditions, t)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

func TestDecide(t *testing.T) {
	bundle := []byte("CA")
	file := &rules.File{Group: "example.com", Kind: "Widget", Hub: "v1"}
	ours := hook.conversion(bundle)
	tests := []struct {
		name        string
		crd         *apiextv1.CustomResourceDefinition
		replicas    []replica
		file        *rules.File
		loadErr     error
		bundleErr   string
		wantSwitch  bool
		accepted    string // reason
		serving     string
		configured  string
		wantStatus  metav1.ConditionStatus // of CRDConfigured
		wantServed  int64
		wantSettled bool
	}{
		{
			name: "every ready replica serves: switch", crd: widgetsCRD(&apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}),
			replicas: []replica{rep("a", true, 3, 0, nil), rep("b", true, 3, 0, nil), rep("c", false, 0, 0, nil)},
			file:     file, wantSwitch: true, accepted: ReasonLoaded, serving: ReasonAllReplicasServe, configured: ReasonConfigured, wantStatus: metav1.ConditionTrue, wantServed: 3,
		},
		{
			name: "one replica behind: wait", crd: widgetsCRD(nil),
			replicas: []replica{rep("a", true, 3, 0, nil), rep("b", true, 2, 0, nil)},
			file:     file, accepted: ReasonLoaded, serving: ReasonRollingOut, configured: ReasonWaitingForReplicas, wantStatus: metav1.ConditionFalse, wantServed: 2,
		},
		{
			name: "no ready replica: never switch", crd: widgetsCRD(nil),
			replicas: []replica{rep("a", false, 3, 0, nil)},
			file:     file, accepted: ReasonLoaded, serving: ReasonNoReadyReplica, configured: ReasonWaitingForReplicas, wantStatus: metav1.ConditionFalse,
		},
		{
			name: "a replica cannot be asked: wait", crd: widgetsCRD(nil),
			replicas: []replica{rep("a", true, 3, 0, nil), rep("b", true, 0, 0, errors.New("connection refused"))},
			file:     file, accepted: ReasonLoaded, serving: ReasonRollingOut, configured: ReasonWaitingForReplicas, wantStatus: metav1.ConditionFalse,
		},
		{
			name: "certificate not trusted: never switch", crd: widgetsCRD(nil),
			replicas: []replica{rep("a", true, 3, 0, nil), rep("b", true, 0, 0, &notTrustedError{errors.New("x509: unknown authority")})},
			file:     file, accepted: ReasonLoaded, serving: ReasonRollingOut, configured: ReasonNotTrusted, wantStatus: metav1.ConditionFalse,
		},
		{
			name: "the generation fails in a replica", crd: widgetsCRD(ours),
			replicas: []replica{rep("a", true, 2, 3, nil), rep("b", true, 3, 0, nil)},
			file:     file, accepted: ReasonLoaded, serving: ReasonReplicaLoadFailed, configured: ReasonConfigured, wantStatus: metav1.ConditionTrue, wantServed: 2,
		},
		{
			name: "already configured: nothing to write", crd: widgetsCRD(ours),
			replicas: []replica{rep("a", true, 3, 0, nil)},
			file:     file, accepted: ReasonLoaded, serving: ReasonAllReplicasServe, configured: ReasonConfigured, wantStatus: metav1.ConditionTrue, wantServed: 3, wantSettled: true,
		},
		{
			name: "rules do not load: CRD left alone", crd: widgetsCRD(nil),
			replicas: []replica{rep("a", true, 2, 3, nil)},
			loadErr:  errors.New("conversion widgets.example.com: spec.hub: missing"), accepted: ReasonLoadFailed, serving: ReasonReplicaLoadFailed, configured: ReasonNotAccepted, wantStatus: metav1.ConditionFalse, wantServed: 2,
		},
		{
			name: "no CRD", replicas: []replica{rep("a", true, 3, 0, nil)},
			file: file, accepted: ReasonCRDNotFound, serving: ReasonAllReplicasServe, configured: ReasonNotAccepted, wantStatus: metav1.ConditionFalse, wantServed: 3,
		},
		{
			name: "another kind", crd: widgetsCRD(nil), replicas: []replica{rep("a", true, 3, 0, nil)},
			file: &rules.File{Group: "example.com", Kind: "Gadget"}, accepted: ReasonCRDMismatch, serving: ReasonAllReplicasServe, configured: ReasonNotAccepted, wantStatus: metav1.ConditionFalse, wantServed: 3,
		},
		{
			name: "no CA", crd: widgetsCRD(nil), replicas: []replica{rep("a", true, 3, 0, nil)},
			file: file, bundleErr: "no caBundle to give the CRD: secret not found", accepted: ReasonLoaded, serving: ReasonAllReplicasServe, configured: ReasonNoCABundle, wantStatus: metav1.ConditionFalse, wantServed: 3,
		},
	}
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observed{name: "widgets.example.com", uid: "u", generation: 3, file: tt.file, loadErr: tt.loadErr, crd: tt.crd,
				replicas: tt.replicas, bundle: bundle, bundleErr: tt.bundleErr, wantHook: hook}
			if tt.loadErr != nil {
				o.file = nil
			}
			d := decide(o, now)
			if got := d.conversion != nil; got != tt.wantSwitch {
				t.Errorf("switch the CRD = %v, want %v", got, tt.wantSwitch)
			}
			if d.conversion != nil && !sameConversion(d.conversion, ours) {
				t.Errorf("the CRD's conversion would be %+v", d.conversion)
			}
			for _, c := range []struct{ t, want string }{
				{v1alpha1.ConditionAccepted, tt.accepted}, {v1alpha1.ConditionServing, tt.serving}, {v1alpha1.ConditionCRDConfigured, tt.configured},
			} {
				if got := cond(d.status, c.t); got.Reason != c.want || got.ObservedGeneration != 3 {
					t.Errorf("%s = %s (%s), want reason %s", c.t, got.Reason, got.Message, c.want)
				}
			}
			if got := cond(d.status, v1alpha1.ConditionCRDConfigured).Status; got != tt.wantStatus {
				t.Errorf("CRDConfigured = %s, want %s", got, tt.wantStatus)
			}
			if d.status.ServedGeneration != tt.wantServed {
				t.Errorf("servedGeneration = %d, want %d", d.status.ServedGeneration, tt.wantServed)
			}
			if d.settled != tt.wantSettled {
				t.Errorf("settled = %v, want %v", d.settled, tt.wantSettled)
			}
			if len(d.status.Replicas) != len(tt.replicas) {
				t.Errorf("replicas in status: %+v", d.status.Replicas)
			}
		})
	}
}

func TestServingMessages(t *testing.T) {
	o := observed{name: "widgets.example.com", uid: "u", generation: 3, file: &rules.File{Group: "example.com", Kind: "Widget"}, crd: widgetsCRD(nil), wantHook: hook, bundle: []byte("CA"),
		replicas: []replica{rep("pod-a", true, 2, 3, nil), rep("pod-b", true, 2, 0, nil), rep("pod-c", true, 3, 0, nil)}}
	d := decide(o, metav1.Now())
	got := cond(d.status, v1alpha1.ConditionServing).Message
	want := "generation 3 does not load in 1 of 3 ready replicas, which keep serving their last good generation: pod-a: conversion widgets.example.com: boom"
	if got != want {
		t.Errorf("Serving message:\n%s\nwant\n%s", got, want)
	}
	o.replicas = o.replicas[1:]
	d = decide(o, metav1.Now())
	if got, want := cond(d.status, v1alpha1.ConditionServing).Message, "1 of 2 ready replicas serve generation 3; waiting for pod-b (serves generation 2)"; got != want {
		t.Errorf("Serving message:\n%s\nwant\n%s", got, want)
	}
}

func TestChooseBundle(t *testing.T) {
	authority, err := pki.NewCA(pki.CAOptions{CommonName: "test CA"})
	if err != nil {
		t.Fatal(err)
	}
	ca := authority.CertPEM
	ours := widgetsCRD(hook.conversion([]byte("CURRENT")))
	if b, e := chooseBundle(ours, hook, ca, nil); string(b) != "CURRENT" || e != "" {
		t.Errorf("a CRD already converting here keeps its caBundle: %q %q", b, e)
	}
	if b, e := chooseBundle(widgetsCRD(nil), hook, ca, nil); string(b) != string(ca) || e != "" {
		t.Errorf("a CRD switched gets the Secret's CA: %q %q", b, e)
	}
	if _, e := chooseBundle(widgetsCRD(nil), hook, nil, errors.New(`secrets "x" not found`)); !strings.Contains(e, `no caBundle to give the CRD: secrets "x" not found`) {
		t.Errorf("no Secret: %q", e)
	}
	if _, e := chooseBundle(widgetsCRD(nil), hook, []byte("junk"), nil); !strings.Contains(e, "the serving Secret's ca.crt") {
		t.Errorf("a ca.crt that is not PEM: %q", e)
	}
}
