// Package sandbox runs a real Kubernetes API server for custom resources in
// the current process: k8s.io/apiextensions-apiserver on an embedded etcd,
// both on loopback with random ports, with nothing to download or install.
//
// A Sandbox serves CustomResourceDefinitions and their custom resources, and
// calls conversion webhooks for real. Service references in a CRD's webhook
// clientConfig resolve to webhooks registered with [Sandbox.RegisterService]
// or started with [Sandbox.ServeWebhook]; CRDs that name such a service get
// its CA bundle injected, as cert-manager's cainjector would do.
//
// Every caller on loopback is authenticated as a member of system:masters and
// every request is allowed: a sandbox is for tests and demos, never for data
// that matters (etcd runs without fsync in a temporary directory that Stop
// removes).
//
// In Go tests, [Start] gives a sandbox that is stopped when the test ends.
// Starting one takes about a second; start one per test package (in TestMain
// or a sync.Once) and install CRDs once.
//
// The API server and etcd log through klog and zap. A sandbox routes klog,
// which is process-wide, to Options.Logger (nil discards it).
package sandbox
