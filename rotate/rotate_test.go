package rotate_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/pki"
	"github.com/hubspoke/hubspoke/rotate"
)

const ns, name = "hubspoke-system", "hubspoke-webhook"

// cluster is a fake cluster holding a deployment made by deploy with
// --certs hubspoke, and a model of what the pods serve. After every write
// it checks the invariant that keeps every request working: the
// certificate the pods serve, and the one in the Secret (which a pod may
// load at any moment), chain to every CRD's caBundle.
type cluster struct {
	t          *testing.T
	core       *fake.Clientset
	ext        *apiextfake.Clientset
	served     *x509.Certificate
	secretCert *x509.Certificate
	bundles    map[string][]*x509.Certificate
	writes     []string
	violations []string
	failAt     int // fail the failAt-th write (from 1); 0: never
}

func newCluster(t *testing.T, caOpts pki.CAOptions, certOpts pki.CertOptions) *cluster {
	t.Helper()
	in, err := deploy.LoadInputs([]string{"../examples/widget/crd.yaml", "../examples/evolving-widget/crd.yaml"},
		[]string{"../examples/widget/conversion.yaml", "../examples/evolving-widget/conversion.yaml"}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	caOpts.CommonName = "first CA"
	ca, err := pki.NewCA(caOpts)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.IssueService(ns, name, certOpts)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Render(in, deploy.Options{Certs: deploy.Hubspoke, CA: ca, Serving: serving})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, bundles: map[string][]*x509.Certificate{}, served: serving.Cert, secretCert: serving.Cert}
	var coreObjs, extObjs []runtime.Object
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Secret:
			coreObjs = append(coreObjs, o)
		case *apiextv1.CustomResourceDefinition:
			extObjs = append(extObjs, o)
			c.bundles[o.Name] = mustParse(t, o.Spec.Conversion.Webhook.ClientConfig.CABundle)
		}
	}
	// A CRD of another webhook, which rotate must leave alone.
	other := &apiextv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.org"},
		Spec: apiextv1.CustomResourceDefinitionSpec{Conversion: &apiextv1.CustomResourceConversion{
			Strategy: apiextv1.WebhookConverter, Webhook: &apiextv1.WebhookConversion{ClientConfig: &apiextv1.WebhookClientConfig{
				Service: &apiextv1.ServiceReference{Namespace: "other", Name: name}, CABundle: []byte("untouched")}}}}}
	extObjs = append(extObjs, other)
	c.core = fake.NewClientset(coreObjs...)
	c.ext = apiextfake.NewClientset(extObjs...)
	c.core.PrependReactor("update", "secrets", c.onWrite)
	c.ext.PrependReactor("update", "customresourcedefinitions", c.onWrite)
	c.check("start")
	return c
}

func mustParse(t *testing.T, pemData []byte) []*x509.Certificate {
	t.Helper()
	certs, err := pki.ParseCertificates(pemData)
	if err != nil {
		t.Fatal(err)
	}
	return certs
}

func (c *cluster) onWrite(a k8stesting.Action) (bool, runtime.Object, error) {
	obj := a.(k8stesting.UpdateAction).GetObject()
	c.writes = append(c.writes, fmt.Sprintf("%s", a.GetResource().Resource))
	if c.failAt == len(c.writes) {
		return true, nil, errors.New("injected failure")
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		if o.Name == deploy.ServingSecretName(name) {
			c.secretCert = mustParse(c.t, o.Data[pki.CertFile])[0]
		}
	case *apiextv1.CustomResourceDefinition:
		if o.Name == "gadgets.example.org" {
			c.violations = append(c.violations, "wrote the CRD of another webhook")
			break
		}
		c.bundles[o.Name] = mustParse(c.t, o.Spec.Conversion.Webhook.ClientConfig.CABundle)
	}
	c.check(fmt.Sprintf("write %d (%s)", len(c.writes), a.GetResource().Resource))
	return false, nil, nil
}

func (c *cluster) check(when string) {
	for crd, b := range c.bundles {
		for what, cert := range map[string]*x509.Certificate{"served": c.served, "in the Secret": c.secretCert} {
			if err := pki.Verify([]*x509.Certificate{cert}, b, pki.ServiceServerName(ns, name), time.Now()); err != nil {
				c.violations = append(c.violations, fmt.Sprintf("%s: the certificate %s is not trusted by %s: %v", when, what, crd, err))
			}
		}
	}
}

func (c *cluster) rotate(opts rotate.Options) (*rotate.Result, error) {
	opts.Namespace, opts.Name = ns, name
	if opts.TrustWait == 0 {
		opts.TrustWait = time.Millisecond
	}
	opts.PollInterval = time.Millisecond
	opts.ServingWait = func(_ context.Context, cert *x509.Certificate) error {
		c.served = cert // the pods now serve it
		c.check("pods serve the new certificate")
		return nil
	}
	return rotate.Rotate(context.Background(), rotate.Clients{Core: c.core, APIExtensions: c.ext}, opts)
}

func stepNames(r *rotate.Result) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.Name)
	}
	return out
}

func TestRotate(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		ca        pki.CAOptions
		cert      pki.CertOptions
		opts      rotate.Options
		steps     []string
		newCA     bool
		newServed bool
	}{
		{"nothing due", pki.CAOptions{}, pki.CertOptions{}, rotate.Options{}, nil, false, false},
		{"serving certificate expiring", pki.CAOptions{}, pki.CertOptions{NotAfter: now.Add(10 * 24 * time.Hour)}, rotate.Options{},
			[]string{"renew-serving"}, false, false},
		{"forced renewal", pki.CAOptions{}, pki.CertOptions{}, rotate.Options{Force: true}, []string{"renew-serving"}, false, false},
		{"CA expiring", pki.CAOptions{NotAfter: now.Add(100 * 24 * time.Hour)}, pki.CertOptions{NotAfter: now.Add(50 * 24 * time.Hour)}, rotate.Options{},
			[]string{"new-ca", "add-ca", "switch-serving", "drop-old-ca"}, true, true},
		{"forced CA rotation", pki.CAOptions{}, pki.CertOptions{}, rotate.Options{ForceCA: true},
			[]string{"new-ca", "add-ca", "switch-serving", "drop-old-ca"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.ca, tc.cert)
			before := c.secretCert
			res, err := c.rotate(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.steps, stepNames(res)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			for _, v := range c.violations {
				t.Error(v)
			}
			if diff := cmp.Diff([]string{"evolvingwidgets.example.com", "widgets.example.com"}, res.CRDs); diff != "" {
				t.Errorf("CRDs (-want +got):\n%s", diff)
			}
			if renewed := !c.secretCert.Equal(before); renewed != (len(tc.steps) > 0) {
				t.Errorf("serving certificate renewed: %v", renewed)
			}
			for crd, b := range c.bundles {
				if len(b) != 1 {
					t.Errorf("%s: %d CAs left in caBundle, want 1", crd, len(b))
				}
				if tc.newCA == (b[0].Subject.CommonName == "first CA") {
					t.Errorf("%s: caBundle holds %q", crd, b[0].Subject.CommonName)
				}
			}
			// Run again: nothing is due any more.
			res, err = c.rotate(rotate.Options{})
			if err != nil || len(res.Steps) != 0 {
				t.Errorf("second run: steps %v, err %v", stepNames(res), err)
			}
		})
	}
}

// TestResume stops a CA rotation at each of its writes and runs it again:
// it completes, and the invariant holds throughout.
func TestResume(t *testing.T) {
	full := newCluster(t, pki.CAOptions{}, pki.CertOptions{})
	if _, err := full.rotate(rotate.Options{ForceCA: true}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= len(full.writes); i++ {
		t.Run(fmt.Sprintf("fail write %d of %d (%s)", i, len(full.writes), full.writes[i-1]), func(t *testing.T) {
			c := newCluster(t, pki.CAOptions{}, pki.CertOptions{})
			c.failAt = i
			if _, err := c.rotate(rotate.Options{ForceCA: true}); err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			c.failAt = 0
			if _, err := c.rotate(rotate.Options{}); err != nil {
				t.Fatal(err)
			}
			for _, v := range c.violations {
				t.Error(v)
			}
			for crd, b := range c.bundles {
				if len(b) != 1 || !c.secretCert.Equal(c.served) || pki.Verify([]*x509.Certificate{c.served}, b, pki.ServiceServerName(ns, name), time.Now()) != nil {
					t.Errorf("%s: not finished: %d CAs in caBundle", crd, len(b))
				}
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	c := newCluster(t, pki.CAOptions{}, pki.CertOptions{})
	res, err := c.rotate(rotate.Options{ForceCA: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 4 || len(c.writes) != 0 {
		t.Errorf("dry run: steps %v, writes %v", stepNames(res), c.writes)
	}
}

// TestLoad reads back what deploy rendered, also in the middle of a
// rotation (two CAs in the bundle), and deploy renders it again unchanged.
func TestLoad(t *testing.T) {
	c := newCluster(t, pki.CAOptions{}, pki.CertOptions{})
	st, err := rotate.Load(context.Background(), rotate.Clients{Core: c.core, APIExtensions: c.ext}, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Serving.Cert.Equal(c.secretCert) || len(mustParse(t, st.CABundle)) != 1 {
		t.Fatalf("loaded serving %v, %d CAs", st.Serving.Cert.Subject, len(mustParse(t, st.CABundle)))
	}
	// Stop a CA rotation after the new CA is trusted, before the switch.
	c.failAt = 4 // new-ca (1 secret write), add-ca (2 CRD writes), then the serving Secret
	if _, err := c.rotate(rotate.Options{ForceCA: true}); err == nil {
		t.Fatal("the injected failure did not stop the rotation")
	}
	st, err = rotate.Load(context.Background(), rotate.Clients{Core: c.core, APIExtensions: c.ext}, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	bundle := mustParse(t, st.CABundle)
	if len(bundle) != 2 || !pki.Contains(bundle, st.CA.Cert) {
		t.Fatalf("mid-rotation bundle: %d CAs, new CA in it: %v", len(bundle), pki.Contains(bundle, st.CA.Cert))
	}
	in, err := deploy.LoadInputs([]string{"../examples/widget/crd.yaml"}, []string{"../examples/widget/conversion.yaml"}, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	// The old serving certificate with the two-CA bundle renders (it
	// chains to the old CA, still in the bundle).
	objs, err := deploy.Render(in, deploy.Options{Certs: deploy.Hubspoke, CA: st.CA, Serving: st.Serving, CABundle: st.CABundle})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if crd, ok := o.(*apiextv1.CustomResourceDefinition); ok && string(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) != string(st.CABundle) {
			t.Errorf("%s: caBundle is not the cluster's", crd.Name)
		}
	}
}

// fakeClock is a clock that moves only when rotate sleeps.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
	// during, when set, runs at each sleep, before the time moves.
	during func(d time.Duration)
}

func (f *fakeClock) Now() time.Time { return f.now }

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	f.sleeps = append(f.sleeps, d)
	if f.during != nil {
		f.during(d)
	}
	f.now = f.now.Add(d)
	return ctx.Err()
}

// trustsAll reports whether every CRD's caBundle holds ca.
func (c *cluster) trustsAll(ca *x509.Certificate) bool {
	for _, b := range c.bundles {
		if !pki.Contains(b, ca) {
			return false
		}
	}
	return true
}

// TestTrustWait: between the moment the last caBundle holds the new CA
// and the switch of the serving certificate to it, the whole trust wait
// passes on rotate's clock.
func TestTrustWait(t *testing.T) {
	const trustWait = 7 * time.Minute
	c := newCluster(t, pki.CAOptions{}, pki.CertOptions{})
	clock := &fakeClock{now: time.Now()}
	var trustedAt, switchedAt time.Time
	c.core.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if sec := a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret); sec.Name == deploy.ServingSecretName(name) {
			cert := mustParse(t, sec.Data[pki.CertFile])[0]
			if cert.Issuer.CommonName != "first CA" && switchedAt.IsZero() {
				switchedAt = clock.now
			}
		}
		return false, nil, nil
	})
	c.ext.PrependReactor("update", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// Runs before onWrite records the bundle: look at the one written.
		crd := a.(k8stesting.UpdateAction).GetObject().(*apiextv1.CustomResourceDefinition)
		written := mustParse(t, crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
		others := true
		for n, b := range c.bundles {
			if n != crd.Name && len(b) < 2 {
				others = false
			}
		}
		if len(written) == 2 && others && trustedAt.IsZero() {
			trustedAt = clock.now
		}
		return false, nil, nil
	})
	res, err := c.rotate(rotate.Options{ForceCA: true, TrustWait: trustWait, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"new-ca", "add-ca", "switch-serving", "drop-old-ca"}, stepNames(res)); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	if trustedAt.IsZero() || switchedAt.IsZero() {
		t.Fatalf("trusted at %v, switched at %v", trustedAt, switchedAt)
	}
	if got := switchedAt.Sub(trustedAt); got < trustWait {
		t.Errorf("the serving certificate switched %v after every caBundle held the new CA, want at least the trust wait %v (sleeps %v)", got, trustWait, clock.sleeps)
	}
	for _, v := range c.violations {
		t.Error(v)
	}
}

// TestSwitchRefusedWhileABundleLacksTheNewCA: a caBundle that loses the new
// CA during the trust wait (an old cainjector replacing it, a hand edit)
// stops the rotation before the serving certificate switches; run again,
// it resumes and completes.
func TestSwitchRefusedWhileABundleLacksTheNewCA(t *testing.T) {
	c := newCluster(t, pki.CAOptions{}, pki.CertOptions{})
	before := c.secretCert
	clock := &fakeClock{now: time.Now()}
	clock.during = func(d time.Duration) {
		if d != time.Hour {
			return
		}
		// Put the first CA back alone in one CRD's bundle, bypassing
		// rotate's writes.
		gvr := apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
		obj, err := c.ext.Tracker().Get(gvr, "", "widgets.example.com")
		if err != nil {
			t.Fatal(err)
		}
		crd := obj.(*apiextv1.CustomResourceDefinition).DeepCopy()
		b := mustParse(t, crd.Spec.Conversion.Webhook.ClientConfig.CABundle)
		crd.Spec.Conversion.Webhook.ClientConfig.CABundle = pki.Bundle(b[0])
		if err := c.ext.Tracker().Update(gvr, crd, ""); err != nil {
			t.Fatal(err)
		}
		c.bundles[crd.Name] = b[:1]
	}
	_, err := c.rotate(rotate.Options{ForceCA: true, TrustWait: time.Hour, Now: clock.Now, Sleep: clock.Sleep})
	if err == nil || !strings.Contains(err.Error(), "refusing to switch the serving certificate: CRDs [widgets.example.com] do not trust its CA yet") {
		t.Fatalf("err = %v, want the switch refused", err)
	}
	if !c.secretCert.Equal(before) {
		t.Error("the serving certificate switched while a caBundle lacked its CA")
	}
	for _, v := range c.violations {
		t.Error(v)
	}
	clock.during = nil
	if _, err := c.rotate(rotate.Options{Now: clock.Now, Sleep: clock.Sleep}); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if c.secretCert.Equal(before) {
		t.Error("the second run did not finish the rotation")
	}
	for _, v := range c.violations {
		t.Error(v)
	}
}
