// Package operator is `hubspoke operator`: it rolls out Conversion
// objects (hubspoke.dev/v1alpha1, package api/v1alpha1) served live by
// hubspoke's webhook (`hubspoke serve --watch-conversions`), and changes a
// CRD only when that is safe.
//
//   - Admission: a validating webhook refuses a Conversion whose rules do
//     not load (a funcs rule naming a Go func the webhook's replicas lack
//     included), whose static checks or round-trip laws fail against the
//     live CRD (a short bounded run of package check), or whose answers
//     differ from those of a generation a replica serves, on generated and
//     on existing objects (check.Rollout, the rolling-update safety of
//     `hubspoke check --previous-rules` and `hubspoke deploy
//     --previous-rules`), unless spec.rollout.acknowledgeDifferences names
//     that generation and says why.
//   - Reconcile: it asks every endpoint of the webhook's Service, over TLS
//     verified with the caBundle the CRD has or will get, which generation
//     it serves, writes that in the Conversion's status (conditions
//     Accepted, Serving, CRDConfigured), and points the CRD's
//     spec.conversion at the webhook only once every ready replica serves
//     the current generation. With spec.storage it migrates the stored
//     objects (package migrate) once they are.
//   - Deletion: a finalizer keeps a Conversion, and so its webhook serving
//     it, while its CRD converts through it; an event says why and what to
//     do. A CRD that needs no conversion any more (one version, all objects
//     stored in it) is set to strategy None first.
package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
)

// Defaults of Options.
const (
	DefaultNamespace    = "hubspoke-system"
	DefaultService      = "hubspoke-webhook"
	DefaultPath         = "/convert"
	DefaultPort         = 443
	DefaultPortName     = "https"
	DefaultPoll         = 250 * time.Millisecond
	DefaultResync       = 30 * time.Second
	DefaultCheckObjects = 30
	DefaultCheckTimeout = 10 * time.Second
	// AdmissionPath is where the validating webhook is served.
	AdmissionPath = "/validate-conversion"
	// Finalizer keeps a Conversion while its CRD converts through it.
	Finalizer = "hubspoke.dev/crd-conversion"
	// FieldManager is the field manager of the operator's writes.
	FieldManager = "hubspoke-operator"
)

// Options configure the operator. Zero fields take the defaults above.
type Options struct {
	// Config reaches the API server (required).
	Config *rest.Config
	// Namespace and Service name the webhook's Service, which the CRDs are
	// pointed at (clientConfig.service), at Port and Path. PortName is the
	// name of its port in the EndpointSlices.
	Namespace, Service string
	Port               int32
	Path, PortName     string
	// CASecret is the Secret in Namespace whose ca.crt a CRD's caBundle is
	// made from when the operator first points it at the webhook (default
	// SERVICE-serving-tls, as deploy and the chart name it).
	CASecret string
	// InjectCAFrom, when set (cert-manager: NAMESPACE/CERTIFICATE), is
	// written as the cert-manager.io/inject-ca-from annotation of every CRD
	// the operator configures, so that cainjector keeps its caBundle.
	InjectCAFrom string
	// Selector picks the Conversions of this webhook (a label selector; the
	// webhook's --selector must be the same).
	Selector string
	// PodDial reaches the endpoints' addresses (default: a direct dial;
	// outside the pod network, through a proxy such as the sandbox's).
	PodDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Poll is how often replicas are asked while a generation rolls out;
	// Resync how often once it has.
	Poll, Resync time.Duration

	// AdmissionAddr (host:port) serves the validating webhook over HTTPS
	// with AdmissionCertDir's tls.crt and tls.key; empty: no admission.
	AdmissionAddr    string
	AdmissionCertDir string
	// CheckObjects is the number of generated objects per law and version
	// pair at admission; CheckTimeout bounds the whole check.
	CheckObjects int
	CheckTimeout time.Duration
	// LiveObjects is how many existing objects of the CRD admission
	// compares between the served and the new rules (0: 200).
	LiveObjects int

	// BackupDir receives the backups of spec.storage.backup.
	BackupDir string

	// MetricsAddr and HealthAddr serve /metrics and /healthz, /readyz
	// ("0": not served). LeaderElection elects one reconciler among the
	// operator's replicas (admission is served by all).
	MetricsAddr, HealthAddr string
	LeaderElection          bool
	// Logger receives the operator's records (nil: silent).
	Logger *slog.Logger
	// Registerer receives the admission's metrics (nil: controller-runtime's
	// registry).
	Registerer prometheus.Registerer
	// OnReady, when set, is called once the manager runs.
	OnReady func()
}

func (o *Options) defaults() error {
	if o.Config == nil {
		return errors.New("operator: no API server configuration")
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&o.Namespace, DefaultNamespace)
	def(&o.Service, DefaultService)
	def(&o.Path, DefaultPath)
	def(&o.PortName, DefaultPortName)
	def(&o.CASecret, o.Service+"-serving-tls")
	def(&o.MetricsAddr, "0")
	def(&o.HealthAddr, "0")
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.CheckObjects <= 0 {
		o.CheckObjects = DefaultCheckObjects
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = DefaultCheckTimeout
	}
	if o.LiveObjects <= 0 {
		o.LiveObjects = 200
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("operator: selector %q: %w", o.Selector, err)
	}
	if o.AdmissionAddr != "" && o.AdmissionCertDir == "" {
		return errors.New("operator: admission needs a certificate directory")
	}
	return nil
}

// Run runs the operator until ctx is cancelled.
func Run(ctx context.Context, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("operator: %w", err)
		}
	}
	sel, _ := labels.Parse(opts.Selector)
	conv := newConversion()
	mgrOpts := manager.Options{
		Scheme: scheme,
		Logger: logr.FromSlogHandler(opts.Logger.Handler()),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Only what the operator reads: the Conversions it is
			// assigned, CRDs, the webhook's EndpointSlices and its CA.
			conv: {Label: sel},
			&discoveryv1.EndpointSlice{}: {
				Namespaces: map[string]cache.Config{opts.Namespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: opts.Service}),
			},
			&corev1.Secret{}: {
				Namespaces: map[string]cache.Config{opts.Namespace: {}},
				Field:      fields.OneTermEqualSelector("metadata.name", opts.CASecret),
			},
		}},
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.HealthAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "hubspoke-operator",
		LeaderElectionNamespace: opts.Namespace,
		Controller:              config.Controller{SkipNameValidation: new(true)},
	}
	if opts.AdmissionAddr != "" {
		host, port, err := net.SplitHostPort(opts.AdmissionAddr)
		if err != nil {
			return fmt.Errorf("operator: admission address %q: %w", opts.AdmissionAddr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("operator: admission address %q: %w", opts.AdmissionAddr, err)
		}
		mgrOpts.WebhookServer = webhook.NewServer(webhook.Options{Host: host, Port: p, CertDir: opts.AdmissionCertDir, CertName: "tls.crt", KeyName: "tls.key"})
	}
	mgr, err := manager.New(opts.Config, mgrOpts)
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	hook := webhookRef{namespace: opts.Namespace, name: opts.Service, path: opts.Path, port: opts.Port, injectCAFrom: opts.InjectCAFrom}
	reps := &replicas{c: mgr.GetClient(), ns: opts.Namespace, svc: opts.Service, portName: opts.PortName, dial: opts.PodDial, minAge: opts.Poll}
	r := &reconciler{
		c: mgr.GetClient(), dyn: dyn, opts: opts, hook: hook, reps: reps,
		events: mgr.GetEventRecorder("hubspoke-operator"), log: opts.Logger,
	}
	enqueueAll := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return r.all(ctx)
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("conversion").
		For(conv).
		Watches(&apiextv1.CustomResourceDefinition{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			// A Conversion is named after its CRD.
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
		})).
		Watches(&discoveryv1.EndpointSlice{}, enqueueAll).
		Watches(&corev1.Secret{}, enqueueAll).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if opts.AdmissionAddr != "" {
		a := &admission{c: mgr.GetAPIReader(), dyn: dyn, opts: opts, hook: hook, reps: reps, secretCA: r.secretCA, log: opts.Logger}
		mgr.GetWebhookServer().Register(AdmissionPath, &webhook.Admission{Handler: a})
		if err := mgr.AddReadyzCheck("admission", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("operator: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if opts.OnReady != nil {
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if mgr.GetCache().WaitForCacheSync(ctx) {
				opts.OnReady()
			}
			<-ctx.Done()
			return nil
		})); err != nil {
			return err
		}
	}
	opts.Logger.Info("operator starting", "service", opts.Namespace+"/"+opts.Service, "selector", opts.Selector, "admission", opts.AdmissionAddr)
	return mgr.Start(ctx)
}

// newConversion returns an empty Conversion object.
func newConversion() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersionKind)
	return u
}
