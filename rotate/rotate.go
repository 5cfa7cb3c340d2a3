// Package rotate renews the certificates of a webhook deployed with
// `hubspoke deploy --certs hubspoke`, in the order that never fails a
// request:
//
//  1. a new CA goes into the CA Secret and next to the old CA in the
//     caBundle of every CRD whose conversion webhook is the Service;
//     rotate waits until the API server returns the new bundle, then
//     Options.TrustWait more, so that every API server instance has
//     rebuilt its webhook client;
//  2. the serving certificate Secret switches to a certificate of the new
//     CA (both CAs are trusted meanwhile); rotate waits until the pods
//     serve it (Options.ServingWait);
//  3. the old CA leaves the caBundles.
//
// Each step is decided from what the cluster holds, so a rotation that
// stopped half way (a crash, a timeout) resumes where it stopped when run
// again. When the CA is still good and only the serving certificate is
// expiring, rotate renews just that, from the same CA (one step, safe).
//
// After each step a conversion through the API server (a read of one object
// through every served version other than the storage version) must
// succeed, or rotate stops before the next step.
package rotate

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/pki"
)

// Defaults of [Options].
const (
	DefaultRenewBefore   = 30 * 24 * time.Hour
	DefaultCARenewBefore = 365 * 24 * time.Hour
	DefaultTrustWait     = 10 * time.Second
	// DefaultPropagationWait covers the kubelet's update of a Secret volume
	// (its sync period, one minute, plus its cache's TTL) and the
	// webhook's certificate reload interval (10 s).
	DefaultPropagationWait = 2 * time.Minute
)

// Clients are the API clients rotate uses.
type Clients struct {
	Core          kubernetes.Interface
	APIExtensions apiextclient.Interface
	// Dynamic, when set, is used for the conversion probe after each step.
	Dynamic dynamic.Interface
}

// Options describe a rotation.
type Options struct {
	Namespace, Name string // of the deployment (deploy.Options)
	// RenewBefore: renew the serving certificate when it expires within
	// this (DefaultRenewBefore).
	RenewBefore time.Duration
	// CARenewBefore: rotate the CA when it expires within this
	// (DefaultCARenewBefore).
	CARenewBefore time.Duration
	// ForceCA rotates the CA now; Force renews the serving certificate now.
	ForceCA, Force bool
	// TrustWait is waited after the API server returns the new caBundle,
	// before the serving certificate switches.
	TrustWait time.Duration
	// ServingWait returns once every pod serves cert. Default: wait
	// DefaultPropagationWait.
	ServingWait func(ctx context.Context, cert *x509.Certificate) error
	// DryRun decides and reports the steps without writing anything.
	DryRun bool
	// PollInterval is how often rotate reads back what it wrote (default 200ms).
	PollInterval time.Duration
	Logger       *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx's error):
	// the trust wait, and the default ServingWait. Default: a timer. Tests
	// give a clock of their own, with Now.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Step is one change rotate made (or, with DryRun, would make).
type Step struct {
	Name   string // "add-ca", "switch-serving", "drop-old-ca", "renew-serving"
	Detail string
}

// Result says what a rotation did.
type Result struct {
	Steps []Step
	// CRDs are the CRDs whose conversion webhook is the Service.
	CRDs []string
	// Probes counts the conversions through the API server that succeeded.
	Probes int
}

type rotator struct {
	c    Clients
	o    Options
	log  *slog.Logger
	res  *Result
	crds []string
}

// Rotate renews what is due, in the safe order, resuming a rotation that
// stopped half way. Nothing due is not an error: Result.Steps is empty.
func Rotate(ctx context.Context, c Clients, o Options) (*Result, error) {
	if o.Namespace == "" || o.Name == "" {
		return nil, errors.New("rotate: namespace and name are required")
	}
	if o.RenewBefore == 0 {
		o.RenewBefore = DefaultRenewBefore
	}
	if o.CARenewBefore == 0 {
		o.CARenewBefore = DefaultCARenewBefore
	}
	if o.TrustWait == 0 {
		o.TrustWait = DefaultTrustWait
	}
	if o.PollInterval == 0 {
		o.PollInterval = 200 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.ServingWait == nil {
		o.ServingWait = func(ctx context.Context, _ *x509.Certificate) error {
			return o.Sleep(ctx, DefaultPropagationWait)
		}
	}
	r := &rotator{c: c, o: o, log: o.Logger, res: &Result{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	err := r.run(ctx)
	return r.res, err
}

func (r *rotator) run(ctx context.Context) error {
	o := r.o
	ca, caSecret, err := r.loadCA(ctx)
	if err != nil {
		return err
	}
	serving, err := r.loadServing(ctx)
	if err != nil {
		return err
	}
	crds, err := r.webhookCRDs(ctx)
	if err != nil {
		return err
	}
	r.res.CRDs = r.crds
	now := o.Now()
	signed := serving.Cert.CheckSignatureFrom(ca.Cert) == nil
	switch {
	case len(bundlesLacking(crds, ca.Cert)) > 0:
		// Step 1 stopped after the CA Secret was written (or the bundle
		// was edited by hand): resume there.
		r.log.Info("resuming: the CA in the CA Secret is missing from caBundles")
		if err := r.addCA(ctx, ca.Cert); err != nil {
			return err
		}
		if !signed {
			if err := r.switchServing(ctx, ca, "switch-serving", true); err != nil {
				return err
			}
		}
		return r.dropOtherCAs(ctx, ca.Cert)
	case !signed:
		r.log.Info("resuming: every caBundle trusts the new CA; the serving certificate is not yet its")
		if err := r.switchServing(ctx, ca, "switch-serving", true); err != nil {
			return err
		}
		return r.dropOtherCAs(ctx, ca.Cert)
	case len(extraCAs(crds, ca.Cert)) > 0:
		r.log.Info("resuming: the serving certificate is the new CA's; old CAs are still trusted")
		return r.dropOtherCAs(ctx, ca.Cert)
	case o.ForceCA || pki.ExpiresWithin(ca.Cert, now, o.CARenewBefore):
		next, err := pki.NewCA(pki.CAOptions{CommonName: o.Name + "." + o.Namespace + " webhook CA"})
		if err != nil {
			return err
		}
		if err := r.writeCA(ctx, caSecret, next); err != nil {
			return err
		}
		if err := r.addCA(ctx, next.Cert); err != nil {
			return err
		}
		if err := r.switchServing(ctx, next, "switch-serving", true); err != nil {
			return err
		}
		return r.dropOtherCAs(ctx, next.Cert)
	case o.Force || pki.ExpiresWithin(serving.Cert, now, o.RenewBefore):
		// The same CA signs the new certificate: every API server trusts
		// it already, so there is nothing to wait for.
		return r.switchServing(ctx, ca, "renew-serving", false)
	default:
		r.log.Info("nothing to renew", "servingNotAfter", serving.Cert.NotAfter, "caNotAfter", ca.Cert.NotAfter)
		return nil
	}
}

func (r *rotator) step(name, detail string) {
	r.res.Steps = append(r.res.Steps, Step{Name: name, Detail: detail})
	verb := "step"
	if r.o.DryRun {
		verb = "would run step"
	}
	r.log.Info(verb, "step", name, "detail", detail)
}

func (r *rotator) loadCA(ctx context.Context) (*pki.CA, *corev1.Secret, error) {
	name := deploy.CASecretName(r.o.Name)
	s, err := r.c.Core.CoreV1().Secrets(r.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("rotate: the CA Secret %s/%s (deployed with --certs hubspoke?): %w", r.o.Namespace, name, err)
	}
	ca, err := pki.ParseCA(s.Data[pki.CertFile], s.Data[pki.KeyFile])
	if err != nil {
		return nil, nil, fmt.Errorf("rotate: Secret %s/%s: %w", r.o.Namespace, name, err)
	}
	return ca, s, nil
}

func (r *rotator) loadServing(ctx context.Context) (*pki.KeyPair, error) {
	name := deploy.ServingSecretName(r.o.Name)
	s, err := r.c.Core.CoreV1().Secrets(r.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("rotate: the serving Secret %s/%s: %w", r.o.Namespace, name, err)
	}
	kp, err := pki.ParseKeyPair(s.Data[pki.CertFile], s.Data[pki.KeyFile])
	if err != nil {
		return nil, fmt.Errorf("rotate: Secret %s/%s: %w", r.o.Namespace, name, err)
	}
	return kp, nil
}

// webhookCRDs returns the CRDs converted by the Service, with their
// bundles parsed.
func (r *rotator) webhookCRDs(ctx context.Context) (map[string][]*x509.Certificate, error) {
	list, err := r.c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("rotate: listing CRDs: %w", err)
	}
	out := map[string][]*x509.Certificate{}
	r.crds = r.crds[:0]
	for i := range list.Items {
		crd := &list.Items[i]
		cc := r.clientConfig(crd)
		if cc == nil {
			continue
		}
		var bundle []*x509.Certificate
		if len(cc.CABundle) > 0 {
			if bundle, err = pki.ParseCertificates(cc.CABundle); err != nil {
				return nil, fmt.Errorf("rotate: CRD %s: caBundle: %w", crd.Name, err)
			}
		}
		out[crd.Name] = bundle
		r.crds = append(r.crds, crd.Name)
	}
	slices.Sort(r.crds)
	if len(out) == 0 {
		return nil, fmt.Errorf("rotate: no CRD converts through the Service %s/%s", r.o.Namespace, r.o.Name)
	}
	return out, nil
}

func (r *rotator) clientConfig(crd *apiextv1.CustomResourceDefinition) *apiextv1.WebhookClientConfig {
	cv := crd.Spec.Conversion
	if cv == nil || cv.Strategy != apiextv1.WebhookConverter || cv.Webhook == nil || cv.Webhook.ClientConfig == nil {
		return nil
	}
	svc := cv.Webhook.ClientConfig.Service
	if svc == nil || svc.Namespace != r.o.Namespace || svc.Name != r.o.Name {
		return nil
	}
	return cv.Webhook.ClientConfig
}

func bundlesLacking(crds map[string][]*x509.Certificate, ca *x509.Certificate) []string {
	var out []string
	for name, b := range crds {
		if !pki.Contains(b, ca) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func extraCAs(crds map[string][]*x509.Certificate, ca *x509.Certificate) []*x509.Certificate {
	var out []*x509.Certificate
	for _, b := range crds {
		for _, c := range b {
			if !c.Equal(ca) && !pki.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// writeCA stores the new CA in the CA Secret, keeping the previous one
// under ca.crt for reference.
func (r *rotator) writeCA(ctx context.Context, s *corev1.Secret, next *pki.CA) error {
	r.step("new-ca", fmt.Sprintf("CA Secret %s/%s: new CA %q, valid until %s", s.Namespace, s.Name,
		next.Cert.Subject.CommonName, next.Cert.NotAfter.Format(time.RFC3339)))
	if r.o.DryRun {
		return nil
	}
	s = s.DeepCopy()
	s.Data[pki.CAFile] = s.Data[pki.CertFile] // the previous CA, for reference
	s.Data[pki.CertFile], s.Data[pki.KeyFile] = next.CertPEM, next.KeyPEM
	if _, err := r.c.Core.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("rotate: writing the new CA to Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// addCA puts ca next to what each bundle holds, waits until the API server
// returns it, then TrustWait.
func (r *rotator) addCA(ctx context.Context, ca *x509.Certificate) error {
	r.step("add-ca", fmt.Sprintf("add CA %q to the caBundle of %v", ca.Subject.CommonName, r.crds))
	if r.o.DryRun {
		return nil
	}
	if err := r.setBundles(ctx, func(b []*x509.Certificate) []*x509.Certificate { return append(b, ca) }); err != nil {
		return err
	}
	r.log.Info("caBundles hold the new CA; waiting for every API server to use them", "wait", r.o.TrustWait)
	if err := r.o.Sleep(ctx, r.o.TrustWait); err != nil {
		return err
	}
	return r.probe(ctx, "after adding the new CA")
}

func (r *rotator) dropOtherCAs(ctx context.Context, keep *x509.Certificate) error {
	r.step("drop-old-ca", fmt.Sprintf("leave only CA %q in the caBundle of %v", keep.Subject.CommonName, r.crds))
	if r.o.DryRun {
		return nil
	}
	if err := r.setBundles(ctx, func([]*x509.Certificate) []*x509.Certificate { return []*x509.Certificate{keep} }); err != nil {
		return err
	}
	// The serving Secret's ca.crt follows.
	name := deploy.ServingSecretName(r.o.Name)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := r.c.Core.CoreV1().Secrets(r.o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data[pki.CAFile] = pki.Bundle(keep)
		_, err = r.c.Core.CoreV1().Secrets(r.o.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("rotate: Secret %s/%s: %w", r.o.Namespace, name, err)
	}
	return r.probe(ctx, "after dropping the old CA")
}

// setBundles rewrites the caBundle of every CRD of the Service with edit
// and waits until a read returns every new bundle.
func (r *rotator) setBundles(ctx context.Context, edit func([]*x509.Certificate) []*x509.Certificate) error {
	crds := r.c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions()
	want := map[string][]byte{}
	for _, name := range r.crds {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cc := r.clientConfig(crd)
			if cc == nil {
				return fmt.Errorf("its conversion no longer names the Service %s/%s", r.o.Namespace, r.o.Name)
			}
			var bundle []*x509.Certificate
			if len(cc.CABundle) > 0 {
				if bundle, err = pki.ParseCertificates(cc.CABundle); err != nil {
					return fmt.Errorf("caBundle: %w", err)
				}
			}
			cc.CABundle = pki.Bundle(edit(bundle)...)
			want[name] = cc.CABundle
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("rotate: CRD %s: %w", name, err)
		}
	}
	// Read back until every bundle is what was written.
	return wait.PollUntilContextTimeout(ctx, r.o.PollInterval, time.Minute, true, func(ctx context.Context) (bool, error) {
		for name, b := range want {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("rotate: reading CRD %s back: %w", name, err)
			}
			if cc := r.clientConfig(crd); cc == nil || !bytes.Equal(cc.CABundle, b) {
				return false, nil
			}
		}
		return true, nil
	})
}

// switchServing issues a serving certificate from ca into the serving
// Secret (ca.crt: the bundle the CRDs hold) and waits until it is served.
func (r *rotator) switchServing(ctx context.Context, ca *pki.CA, stepName string, waitServed bool) error {
	kp, err := ca.IssueService(r.o.Namespace, r.o.Name, pki.CertOptions{})
	if err != nil {
		return err
	}
	name := deploy.ServingSecretName(r.o.Name)
	r.step(stepName, fmt.Sprintf("Secret %s/%s: serving certificate of CA %q, valid until %s", r.o.Namespace, name,
		ca.Cert.Subject.CommonName, kp.Cert.NotAfter.Format(time.RFC3339)))
	if r.o.DryRun {
		return nil
	}
	crds, err := r.webhookCRDs(ctx)
	if err != nil {
		return err
	}
	if lacking := bundlesLacking(crds, ca.Cert); len(lacking) > 0 {
		return fmt.Errorf("rotate: refusing to switch the serving certificate: CRDs %v do not trust its CA yet", lacking)
	}
	var trusted []*x509.Certificate
	for _, b := range crds {
		trusted = append(trusted, b...)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := r.c.Core.CoreV1().Secrets(r.o.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[pki.CertFile], s.Data[pki.KeyFile], s.Data[pki.CAFile] = kp.CertPEM, kp.KeyPEM, pki.Bundle(trusted...)
		_, err = r.c.Core.CoreV1().Secrets(r.o.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("rotate: Secret %s/%s: %w", r.o.Namespace, name, err)
	}
	if waitServed {
		r.log.Info("serving Secret updated; waiting until the pods serve it")
		if err := r.o.ServingWait(ctx, kp.Cert); err != nil {
			return fmt.Errorf("rotate: waiting for the pods to serve the new certificate: %w", err)
		}
	}
	return r.probe(ctx, "after switching the serving certificate")
}

// probe reads one object of each CRD through every served version but the
// storage version: a conversion through the API server and the webhook.
func (r *rotator) probe(ctx context.Context, when string) error {
	if r.c.Dynamic == nil {
		return nil
	}
	for _, name := range r.crds {
		crd, err := r.c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("rotate: probe %s: %w", when, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Storage {
				continue
			}
			gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
			if _, err := r.c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return fmt.Errorf("rotate: a conversion through the API server failed %s (%s): %w; stopping before the next step", when, gvr, err)
			}
			r.res.Probes++
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// State is what a hubspoke-mode deployment holds in the cluster.
type State struct {
	CA      *pki.CA      // the CA Secret's (the newest during a rotation)
	Serving *pki.KeyPair // the serving Secret's
	// CABundle holds every CA in the caBundles of the Service's CRDs, each
	// once: one CA, or two during a rotation.
	CABundle []byte
	CRDs     []string
}

// Load reads the certificates and the caBundles of the deployment
// namespace/name, so that `hubspoke deploy --certs hubspoke --reuse-certs`
// renders what the cluster holds instead of new certificates.
func Load(ctx context.Context, c Clients, namespace, name string) (*State, error) {
	r := &rotator{c: c, o: Options{Namespace: namespace, Name: name}}
	ca, _, err := r.loadCA(ctx)
	if err != nil {
		return nil, err
	}
	serving, err := r.loadServing(ctx)
	if err != nil {
		return nil, err
	}
	crds, err := r.webhookCRDs(ctx)
	if err != nil {
		return nil, err
	}
	var all []*x509.Certificate
	for _, name := range r.crds {
		all = append(all, crds[name]...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("rotate: the CRDs %v of %s/%s hold no caBundle", r.crds, namespace, name)
	}
	return &State{CA: ca, Serving: serving, CABundle: pki.Bundle(all...), CRDs: slices.Clone(r.crds)}, nil
}
