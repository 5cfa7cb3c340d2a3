package sandbox

import (
	"fmt"
	"io"
	"net"
	"net/http"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	extensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	basecompatibility "k8s.io/component-base/compatibility"
)

// AdminUser is the user every loopback caller is authenticated as; it is a
// member of system:masters.
const AdminUser = "hubspoke-sandbox-admin"

// newAPIServer builds an apiextensions-apiserver on a fresh loopback listener
// backed by the etcd at etcdURL. It returns the server, not yet running, and
// a client configuration for it.
//
// The configuration follows options.Config but leaves out everything that
// needs a core Kubernetes API server (delegated authentication and
// authorization, the core API informers, admission, priority and fairness).
func newAPIServer(etcdURL string, resolver webhook.ServiceResolver) (*extensionsapiserver.CustomResourceDefinitions, *rest.Config, error) {
	o := options.NewCustomResourceDefinitionsServerOptions(io.Discard, io.Discard)

	// A component-globals registry of our own, so that several sandboxes
	// (or a sandbox and other servers) in one process do not collide.
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := compatibility.DefaultBuildEffectiveVersion()
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, nil, fmt.Errorf("sandbox: register component globals: %w", err)
	}
	o.ServerRunOptions.ComponentGlobalsRegistry = registry

	ro := o.RecommendedOptions
	ro.Authentication = nil
	ro.Authorization = nil
	ro.CoreAPI = nil
	ro.Admission = nil
	ro.Features.EnablePriorityAndFairness = false
	ro.Etcd.StorageConfig.Transport.ServerList = []string{etcdURL}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: listen: %w", err)
	}
	closeListener := true
	defer func() {
		if closeListener {
			ln.Close()
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	ss := ro.SecureServing
	ss.Listener = ln
	ss.BindAddress = addr.IP
	ss.BindPort = addr.Port
	ss.ExternalAddress = addr.IP
	ss.ServerCert.CertDirectory = "" // never write certificates to disk

	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(addr.IP.String(), nil, []string{"localhost"})
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: serving certificate: %w", err)
	}
	if ss.ServerCert.GeneratedCert, err = dynamiccertificates.NewStaticCertKeyContent("sandbox serving certificate", certPEM, keyPEM); err != nil {
		return nil, nil, fmt.Errorf("sandbox: serving certificate: %w", err)
	}

	if err := o.Complete(); err != nil {
		return nil, nil, fmt.Errorf("sandbox: complete options: %w", err)
	}
	if err := registry.Set(); err != nil {
		return nil, nil, fmt.Errorf("sandbox: component globals: %w", err)
	}
	if err := o.Validate(); err != nil {
		return nil, nil, fmt.Errorf("sandbox: validate options: %w", err)
	}

	cfg := genericapiserver.NewRecommendedConfig(extensionsapiserver.Codecs)
	if err := o.ServerRunOptions.ApplyTo(&cfg.Config); err != nil {
		return nil, nil, fmt.Errorf("sandbox: apply run options: %w", err)
	}
	if err := ro.ApplyTo(cfg); err != nil {
		return nil, nil, fmt.Errorf("sandbox: apply options: %w", err)
	}
	if err := o.APIEnablement.ApplyTo(&cfg.Config, extensionsapiserver.DefaultAPIResourceConfigSource(), extensionsapiserver.Scheme); err != nil {
		return nil, nil, fmt.Errorf("sandbox: apply api enablement: %w", err)
	}
	cfg.Authentication.Authenticator = authenticator.RequestFunc(authenticateLoopback)
	cfg.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()

	definitions := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, openapinamer.NewDefinitionNamer(extensionsapiserver.Scheme))
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, openapinamer.NewDefinitionNamer(extensionsapiserver.Scheme, scheme.Scheme))

	config := &extensionsapiserver.Config{
		GenericConfig: cfg,
		ExtraConfig: extensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: options.NewCRDRESTOptionsGetter(*ro.Etcd, cfg.ResourceTransformers, cfg.StorageObjectCountTracker),
			ServiceResolver:      resolver,
			AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, cfg.LoopbackClientConfig, noopoteltrace.NewTracerProvider()),
		},
	}
	completed := config.Complete()
	// Complete turns discovery off (the apiextensions server normally runs
	// behind kube-apiserver, which serves /apis); standing alone it must
	// serve discovery itself, or kubectl and client-go get 404 on /apis.
	completed.GenericConfig.EnableDiscovery = true

	srv, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: create api server: %w", err)
	}
	closeListener = false

	restConfig := &rest.Config{
		Host:            "https://" + addr.String(),
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM},
		UserAgent:       "hubspoke-sandbox",
		QPS:             -1, // no client-side throttling against a local server
	}
	return srv, restConfig, nil
}

// authenticateLoopback makes every caller on loopback an administrator and
// leaves everyone else unauthenticated (401).
func authenticateLoopback(req *http.Request) (*authenticator.Response, bool, error) {
	if !isLoopback(req.RemoteAddr) {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   AdminUser,
		Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated},
	}}, true, nil
}
