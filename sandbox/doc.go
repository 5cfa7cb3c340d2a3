// Package sandbox runs a real Kubernetes control plane on loopback for tests
// and demos: kube-apiserver (KubernetesVersion) and etcd as child
// processes, with random ports, RBAC, an admin client certificate and
// kubeconfig, the core API, CustomResourceDefinitions and your custom
// resources. There are no nodes: objects are stored and validated, not run.
//
// The binaries are built on first use from a small Go module the package
// carries (see EnsureAssets and AssetsDir), so the module that imports this
// package needs no k8s.io/kubernetes requirement and no replace directives,
// and links client-go only. The directory they are built into also serves
// controller-runtime's envtest as KUBEBUILDER_ASSETS.
//
// Conversion webhooks are reached through Services, as in a cluster: the
// API server resolves a CRD's clientConfig.service to a ready endpoint of
// the Service's EndpointSlice and checks the certificate against
// NAME.NAMESPACE.svc. [Sandbox.AddEndpoint] makes a server listening on
// loopback an endpoint ("pod") of a Service with an address in PodCIDR,
// which the API server reaches through an HTTP CONNECT proxy the sandbox
// serves as its egress selector's cluster network; no traffic leaves
// loopback. [Sandbox.ServeWebhook] serves a handler that way with a fresh
// certificate. CRDs that name such a Service get its CA bundle injected, as
// cert-manager's cainjector would do.
//
// In Go tests, [Start] gives a sandbox that is stopped when the test ends.
// Starting one takes a few seconds; start one per test package (in TestMain
// or a sync.Once) and install CRDs once.
//
// docs/sandbox.md in the repository says what differs from a cluster.
package sandbox
