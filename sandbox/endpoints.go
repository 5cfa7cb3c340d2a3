package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
)

// DefaultTargetPort is the container port of a Service the sandbox
// creates: kubebuilder's webhook port.
const DefaultTargetPort = 9443

// ManagedBy is the endpointslice.kubernetes.io/managed-by label of the
// EndpointSlices the sandbox writes, as the endpoint slice controller
// writes "endpointslice-controller.k8s.io".
const ManagedBy = "hubspoke-sandbox"

// Readiness probing, as the kubelet's HTTPS probe with its default
// thresholds, but every ProbePeriod rather than every ten seconds.
const (
	ProbePeriod      = 250 * time.Millisecond
	FailureThreshold = 3
	SuccessThreshold = 1
)

// EndpointOptions describe a process that serves a Service, as a pod does
// in a cluster.
type EndpointOptions struct {
	// Namespace and Service name the Service. If it does not exist it is
	// created (and its namespace): type ClusterIP, no selector, one port
	// named "https", 443, to target port 9443 (DefaultTargetPort). If it
	// exists, its ports are used as they are; their target ports must be
	// numbers.
	Namespace, Service string

	// Addr is where the process listens, host:port on loopback. The API
	// server reaches it as PODIP:TARGETPORT for each of the Service's ports.
	Addr string

	// ReadinessPath, if set, is probed over HTTPS on Addr as the kubelet
	// probes a pod (without verifying the certificate; 2xx and 3xx are
	// success), and the endpoint's ready condition follows it. If empty,
	// the endpoint is ready until SetReady says otherwise.
	ReadinessPath string

	// CABundle, if set, is the PEM CA that signed the process's serving
	// certificate: CRDs whose conversion webhook names the Service get it
	// as their caBundle, as cert-manager's cainjector would do.
	CABundle []byte

	// inProcess, if set, takes the pod network's connections for this
	// endpoint directly (ServeWebhook's server) instead of a dial to Addr.
	inProcess *connListener
}

// Endpoint is one process behind a Service: an address in the sandbox's
// pod network, listed in the Service's EndpointSlice, that the API server
// reaches through the sandbox's egress proxy.
type Endpoint struct {
	s    *Sandbox
	opts EndpointOptions
	ip   netip.Addr
	key  [2]string

	mu      sync.Mutex
	ready   bool
	removed bool
	changed chan struct{} // closed and replaced when ready changes

	stopProbe context.CancelFunc
	probeDone chan struct{}
}

// AddEndpoint makes a process on loopback an endpoint of a Service: it
// creates the Service if missing, gives the process a pod IP, routes the
// pod's ports to opts.Addr, and writes the Service's EndpointSlice. With a
// ReadinessPath, the endpoint starts not ready and becomes ready at the
// first successful probe (see WaitReady). Several endpoints may serve one
// Service: the API server picks a ready one at random each time it opens a
// connection, and keeps using a connection it has open, as in a cluster.
func (s *Sandbox) AddEndpoint(ctx context.Context, opts EndpointOptions) (*Endpoint, error) {
	if opts.Namespace == "" || opts.Service == "" {
		return nil, fmt.Errorf("sandbox: add endpoint: namespace and service are required")
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("sandbox: endpoint of %s/%s: address %q: %w", opts.Namespace, opts.Service, opts.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("sandbox: endpoint of %s/%s: address %q is not on loopback", opts.Namespace, opts.Service, opts.Addr)
	}
	opts.CABundle = bytes.Clone(opts.CABundle)
	svc, err := s.ensureService(ctx, opts.Namespace, opts.Service)
	if err != nil {
		return nil, err
	}
	ip, err := s.net.allocate()
	if err != nil {
		return nil, err
	}
	e := &Endpoint{s: s, opts: opts, ip: ip, key: [2]string{opts.Namespace, opts.Service}, ready: opts.ReadinessPath == "", changed: make(chan struct{})}
	for _, port := range targetPorts(svc) {
		s.net.route(netip.AddrPortFrom(ip, uint16(port)), podTarget{addr: opts.Addr, ln: opts.inProcess})
	}
	n := s.net
	n.mu.Lock()
	n.eps[e.key] = append(n.eps[e.key], e)
	if len(opts.CABundle) > 0 {
		n.cas[e.key] = opts.CABundle
	}
	n.mu.Unlock()
	if err := s.syncEndpointSlice(ctx, opts.Namespace, opts.Service); err != nil {
		return nil, errors.Join(err, e.Remove(context.Background()))
	}
	if len(opts.CABundle) > 0 && s.injector != nil {
		s.injector.resync()
	}
	if opts.ReadinessPath != "" {
		probeCtx, cancel := context.WithCancel(context.Background())
		e.stopProbe, e.probeDone = cancel, make(chan struct{})
		go e.probeLoop(probeCtx)
	}
	return e, nil
}

// IP returns the endpoint's address in the pod network.
func (e *Endpoint) IP() netip.Addr { return e.ip }

// Addr returns the loopback address the endpoint's process listens on.
func (e *Endpoint) Addr() string { return e.opts.Addr }

// Ready reports the endpoint's ready condition as last written.
func (e *Endpoint) Ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ready
}

// SetReady sets the endpoint's ready condition in the EndpointSlice; the
// API server sends no new connection to an endpoint that is not ready. An
// endpoint with a ReadinessPath gets its condition from the probe, which
// overrides this at its next change.
func (e *Endpoint) SetReady(ctx context.Context, ready bool) error {
	e.mu.Lock()
	if e.removed {
		e.mu.Unlock()
		return fmt.Errorf("sandbox: endpoint %s of %s/%s was removed", e.ip, e.key[0], e.key[1])
	}
	if e.ready == ready {
		e.mu.Unlock()
		return nil
	}
	e.ready = ready
	e.mu.Unlock()
	err := e.s.syncEndpointSlice(ctx, e.key[0], e.key[1])
	e.mu.Lock()
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	return err
}

// WaitReady waits until the endpoint's ready condition is true in the
// EndpointSlice (the first successful probe, for an endpoint with a
// ReadinessPath), or ctx ends.
func (e *Endpoint) WaitReady(ctx context.Context) error {
	for {
		e.mu.Lock()
		ready, removed, changed := e.ready, e.removed, e.changed
		e.mu.Unlock()
		switch {
		case removed:
			return fmt.Errorf("sandbox: endpoint %s of %s/%s was removed", e.ip, e.key[0], e.key[1])
		case ready:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("sandbox: endpoint %s (%s) of %s/%s not ready: %w", e.ip, e.opts.Addr, e.key[0], e.key[1], ctx.Err())
		}
	}
}

// Remove takes the endpoint out of the Service's EndpointSlice and the pod
// network, as when a pod is deleted: connections to its address are
// refused from then on. The process itself is the caller's to stop.
func (e *Endpoint) Remove(ctx context.Context) error {
	e.mu.Lock()
	if e.removed {
		e.mu.Unlock()
		return nil
	}
	e.removed = true
	close(e.changed) // wakes WaitReady
	e.changed = make(chan struct{})
	e.mu.Unlock()
	if e.stopProbe != nil {
		e.stopProbe()
		<-e.probeDone
	}
	n := e.s.net
	n.mu.Lock()
	for ap := range n.pods {
		if ap.Addr() == e.ip {
			delete(n.pods, ap)
		}
	}
	list := n.eps[e.key]
	for i, o := range list {
		if o == e {
			n.eps[e.key] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	n.mu.Unlock()
	if e.s.isStopping() {
		return nil
	}
	return e.s.syncEndpointSlice(ctx, e.key[0], e.key[1])
}

// probeLoop probes the endpoint's readiness path every ProbePeriod and
// writes its ready condition when the kubelet would change it.
func (e *Endpoint) probeLoop(ctx context.Context) {
	defer close(e.probeDone)
	client := &http.Client{
		Timeout: time.Second, // the kubelet's default timeoutSeconds
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // as the kubelet's probes
			DisableKeepAlives: true,
		},
	}
	url := "https://" + e.opts.Addr + e.opts.ReadinessPath
	var successes, failures int
	tick := time.NewTicker(ProbePeriod)
	defer tick.Stop()
	for {
		ok := probeReady(ctx, client, url)
		if ok {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
		}
		switch {
		case ok && successes >= SuccessThreshold && !e.Ready():
			_ = e.SetReady(ctx, true)
		case !ok && failures >= FailureThreshold && e.Ready():
			_ = e.SetReady(ctx, false)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func probeReady(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

// ensureService returns the Service, creating it (and its namespace) if
// missing.
func (s *Sandbox) ensureService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	svc, err := s.core.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type == intstr.String {
				return nil, fmt.Errorf("sandbox: service %s/%s: port %d targets the named port %q; the sandbox has no pods to resolve it: use a number", namespace, name, p.Port, p.TargetPort.StrVal)
			}
		}
		return svc, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("sandbox: get service %s/%s: %w", namespace, name, err)
	}
	if err := s.EnsureNamespace(ctx, namespace); err != nil {
		return nil, err
	}
	svc, err = s.core.CoreV1().Services(namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": ManagedBy}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{
				Name: "https", Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(DefaultTargetPort),
			}},
		},
	}, metav1.CreateOptions{FieldManager: ManagedBy})
	if apierrors.IsAlreadyExists(err) {
		return s.ensureService(ctx, namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: create service %s/%s: %w", namespace, name, err)
	}
	return svc, nil
}

// EnsureNamespace creates the namespace if it does not exist.
func (s *Sandbox) EnsureNamespace(ctx context.Context, name string) error {
	_, err := s.core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{FieldManager: ManagedBy})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sandbox: create namespace %s: %w", name, err)
	}
	return nil
}

// targetPorts returns the container ports a Service's ports target.
func targetPorts(svc *corev1.Service) []int32 {
	var ports []int32
	for _, p := range svc.Spec.Ports {
		port := p.TargetPort.IntVal
		if port == 0 {
			port = p.Port
		}
		ports = append(ports, port)
	}
	return ports
}

// sliceName is the name of the EndpointSlice the sandbox writes for a
// Service.
func sliceName(service string) string { return service + "-" + ManagedBy }

// syncEndpointSlice writes the Service's EndpointSlice from the endpoints
// registered for it, as the endpoint slice controller writes it from the
// Service's pods: one endpoint per pod IP, with its ready condition, and
// the Service's ports (named as the Service names them, numbered as they
// target). With no endpoints left the slice stays, empty.
func (s *Sandbox) syncEndpointSlice(ctx context.Context, namespace, service string) error {
	key := [2]string{namespace, service}
	n := s.net
	n.mu.Lock()
	mu := n.svcMu[key]
	if mu == nil {
		mu = &sync.Mutex{}
		n.svcMu[key] = mu
	}
	n.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()

	svc, err := s.core.CoreV1().Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: endpoints of %s/%s: %w", namespace, service, err)
	}
	var ports []discoveryv1.EndpointPort
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort.IntVal
		if target == 0 {
			target = p.Port
		}
		ports = append(ports, discoveryv1.EndpointPort{Name: new(p.Name), Port: new(target), Protocol: new(p.Protocol)})
	}
	n.mu.Lock()
	var endpoints []discoveryv1.Endpoint
	for _, e := range n.eps[key] {
		e.mu.Lock()
		ready := e.ready
		e.mu.Unlock()
		endpoints = append(endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: new(ready), Serving: new(ready), Terminating: new(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: service + "-" + e.ip.String()},
		})
	}
	n.mu.Unlock()

	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      sliceName(service),
			Namespace: namespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: service,
				discoveryv1.LabelManagedBy:   ManagedBy,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: service, UID: svc.UID,
				Controller: new(true), BlockOwnerDeletion: new(true)}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints,
		Ports:       ports,
	}
	slices := s.core.DiscoveryV1().EndpointSlices(namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := slices.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = slices.Create(ctx, want, metav1.CreateOptions{FieldManager: ManagedBy})
			return err
		}
		if err != nil {
			return err
		}
		cur.Labels, cur.OwnerReferences = want.Labels, want.OwnerReferences
		cur.Endpoints, cur.Ports = want.Endpoints, want.Ports
		_, err = slices.Update(ctx, cur, metav1.UpdateOptions{FieldManager: ManagedBy})
		return err
	})
	if err != nil {
		return fmt.Errorf("sandbox: write endpoint slice of %s/%s: %w", namespace, service, err)
	}
	return nil
}
