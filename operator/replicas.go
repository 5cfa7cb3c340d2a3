package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
)

// endpoint is one address of the webhook's Service, as its EndpointSlices
// list it: what the API server may call.
type endpoint struct {
	name  string // the pod's name, or the address
	addr  string // IP:port
	ready bool
}

// replica is an endpoint and what it answered at v1alpha1.ServedPath.
type replica struct {
	endpoint
	served *v1alpha1.Served
	err    error // why it could not be asked, or its certificate not trusted
}

// conversion returns what the replica serves of the Conversion named
// name with uid (nil: nothing).
func (r *replica) conversion(name, uid string) *v1alpha1.ServedConversion {
	if r.served == nil {
		return nil
	}
	for i := range r.served.Conversions {
		c := &r.served.Conversions[i]
		if c.Name == name && (c.UID == uid || c.UID == "") {
			return c
		}
	}
	return nil
}

// replicas asks every endpoint of the webhook's Service what it serves,
// over TLS verified as the API server will verify it: against a caBundle,
// for NAME.NAMESPACE.svc. Answers are shared by every reconcile for
// minAge, so that a hundred Conversions cost one round of requests.
type replicas struct {
	c        client.Reader
	ns, svc  string
	portName string
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	minAge   time.Duration

	mu      sync.Mutex
	bundle  []byte
	http    *http.Client
	last    []replica
	lastAt  time.Time
	lastFor []byte // the bundle last used
}

func (p *replicas) serverName() string { return p.svc + "." + p.ns + ".svc" }

// endpoints lists the Service's endpoints from its EndpointSlices.
func (p *replicas) endpoints(ctx context.Context) ([]endpoint, error) {
	var slices_ discoveryv1.EndpointSliceList
	if err := p.c.List(ctx, &slices_, client.InNamespace(p.ns), client.MatchingLabels{discoveryv1.LabelServiceName: p.svc}); err != nil {
		return nil, fmt.Errorf("endpoints of service %s/%s: %w", p.ns, p.svc, err)
	}
	var out []endpoint
	seen := map[string]bool{}
	for _, s := range slices_.Items {
		var port int32
		for _, sp := range s.Ports {
			if sp.Port != nil && (len(s.Ports) == 1 || (sp.Name != nil && *sp.Name == p.portName)) {
				port = *sp.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			for _, a := range e.Addresses {
				addr := net.JoinHostPort(a, strconv.Itoa(int(port)))
				if seen[addr] {
					continue
				}
				seen[addr] = true
				name := addr
				if e.TargetRef != nil && e.TargetRef.Name != "" {
					name = e.TargetRef.Name
				}
				out = append(out, endpoint{name: name, addr: addr, ready: ready})
			}
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		if a.name != b.name {
			return cmpString(a.name, b.name)
		}
		return cmpString(a.addr, b.addr)
	})
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ask returns every endpoint with what it serves, verified against
// bundle; fresh answers when fresh is set.
func (p *replicas) ask(ctx context.Context, bundle []byte, fresh bool) ([]replica, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !fresh && p.last != nil && bytes.Equal(p.lastFor, bundle) && time.Since(p.lastAt) < p.minAge {
		return p.last, nil
	}
	eps, err := p.endpoints(ctx)
	if err != nil {
		return nil, err
	}
	if p.http == nil || !bytes.Equal(p.bundle, bundle) {
		p.http = p.client(bundle)
		p.bundle = bytes.Clone(bundle)
	}
	out := make([]replica, len(eps))
	var wg sync.WaitGroup
	for i, e := range eps {
		out[i].endpoint = e
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].served, out[i].err = p.get(ctx, e.addr)
		}()
	}
	wg.Wait()
	p.last, p.lastAt, p.lastFor = out, time.Now(), bytes.Clone(bundle)
	return out, nil
}

// document fetches the rule document of the generation a replica serves.
func (p *replicas) document(ctx context.Context, addr, name string) (*v1alpha1.ServedConversion, error) {
	p.mu.Lock()
	c := p.http
	p.mu.Unlock()
	if c == nil {
		return nil, errors.New("no replica asked yet")
	}
	var out v1alpha1.ServedConversion
	if err := getJSON(ctx, c, "https://"+addr+v1alpha1.ServedPath+"/"+name, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (p *replicas) client(bundle []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	dial := p.dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 2 * time.Second}).DialContext
	}
	return &http.Client{
		Timeout: 3 * time.Second,
		Transport: &http.Transport{
			DialContext:         dial,
			TLSClientConfig:     &tls.Config{RootCAs: pool, ServerName: p.serverName(), MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

func (p *replicas) get(ctx context.Context, addr string) (*v1alpha1.Served, error) {
	var s v1alpha1.Served
	if err := getJSON(ctx, p.http, "https://"+addr+v1alpha1.ServedPath, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		var unknown x509.UnknownAuthorityError
		var host x509.HostnameError
		var invalid x509.CertificateInvalidError
		if errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) {
			return &notTrustedError{err}
		}
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound && bytes.HasPrefix(body, []byte("404 page not found")) {
			return fmt.Errorf("GET %s: 404: the webhook does not report what it serves (is it run with --watch-conversions?)", url)
		}
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return json.Unmarshal(body, v)
}

// notTrustedError: a replica's serving certificate does not verify
// against the caBundle for the Service's name, as the API server's call
// would not.
type notTrustedError struct{ err error }

func (e *notTrustedError) Error() string {
	return "its serving certificate does not verify against the caBundle: " + e.err.Error()
}

func (e *notTrustedError) Unwrap() error { return e.err }
