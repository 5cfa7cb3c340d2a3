// Package doctor diagnoses a CustomResourceDefinition's conversion webhook
// on a live cluster, in the order an expert follows:
//
//  1. the CRD: conversion strategy (and, for None, whether the versions'
//     schemas differ), clientConfig, conversionReviewVersions, served and
//     storage versions, conditions (each reason with its own fix),
//     status.storedVersions against the versions still defined, the
//     caBundle;
//  2. the Service the clientConfig names: it exists (or where it is
//     instead), has the port, and the port maps to a container port;
//  3. its EndpointSlices: endpoints exist and are ready;
//  4. every endpoint, ready ones first (or the URL's host): the TLS
//     handshake (plain HTTP, a hung handshake, a required client
//     certificate), the served chain verified as the API server verifies
//     it, by crypto/x509 (chain to the caBundle, key usage, the name
//     NAME.NAMESPACE.svc, validity), each kind of failure with its fix;
//  5. conversions: ConversionReviews sent to every endpoint for every pair
//     of versions the API server converts between, one object and a
//     batch, with objects read from the cluster, checked as the API server
//     checks the answers, and timed; and live, through the API server
//     (objects read through every served version, a copy created with
//     dryRun through each non-storage version, both directions).
//
// Each Finding names the check, what was seen and where (an endpoint's
// address and pod), the cause and the exact fix (a command or a patch). A
// stage that cannot run because an earlier one failed is skipped, so the
// first error of a Report is the cause to fix first. Errors the API server
// returned are translated with package explain, the same table `hubspoke
// explain` uses. doctor never waits longer than Options.Timeout, and every
// step has its own bound.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hubspoke/hubspoke/explain"
)

// The checks, in diagnosis order. A check's stage is the part before the
// first dot.
const (
	CheckCRD            = "crd"
	CheckStrategy       = "crd.strategy"
	CheckClientConfig   = "crd.clientConfig"
	CheckReviewVersions = "crd.conversionReviewVersions"
	CheckVersions       = "crd.versions"
	CheckConditions     = "crd.conditions"
	CheckStoredVersions = "crd.storedVersions"
	CheckMigration      = "crd.storageMigration"
	CheckPlanned        = "crd.planned"
	CheckCABundle       = "crd.caBundle"
	CheckService        = "service"
	CheckServicePort    = "service.port"
	CheckEndpoints      = "endpoints"
	CheckEndpointsReady = "endpoints.ready"
	CheckReachable      = "webhook.reachable"
	CheckCertChain      = "certificate.chain"
	CheckCertUsage      = "certificate.usage"
	CheckCertNames      = "certificate.names"
	CheckCertExpiry     = "certificate.expiry"
	CheckDirect         = "conversion.direct"
	CheckLatency        = "conversion.latency"
	CheckLive           = "conversion.live"
)

// Checks lists every check in diagnosis order.
var Checks = []string{
	CheckCRD, CheckStrategy, CheckClientConfig, CheckReviewVersions, CheckVersions, CheckConditions,
	CheckStoredVersions, CheckMigration, CheckPlanned, CheckCABundle, CheckService, CheckServicePort, CheckEndpoints, CheckEndpointsReady,
	CheckReachable, CheckCertChain, CheckCertUsage, CheckCertNames, CheckCertExpiry, CheckDirect, CheckLatency, CheckLive,
}

// perEndpoint are the checks run at each endpoint.
var perEndpoint = []string{CheckReachable, CheckCertChain, CheckCertUsage, CheckCertNames, CheckCertExpiry, CheckDirect, CheckLatency}

// Severity of a finding.
type Severity string

// Severities, from fine to broken.
const (
	SeverityOK      Severity = "ok"
	SeveritySkipped Severity = "skipped"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Endpoint is where a per-endpoint check ran: a Service's endpoint (a pod
// address and, when the EndpointSlice names it, the pod), or a
// clientConfig.url's host.
type Endpoint struct {
	// Address is host:port as dialled.
	Address string `json:"address"`
	// Pod is the endpoint's pod, when known.
	Pod string `json:"pod,omitempty"`
	// Ready is the endpoint's ready condition (always true for a URL):
	// the API server sends reviews only to ready endpoints.
	Ready bool `json:"ready"`
}

func (e *Endpoint) String() string {
	if e == nil {
		return ""
	}
	s := e.Address
	if e.Pod != "" {
		s += " (pod " + e.Pod + ")"
	}
	if !e.Ready {
		s += " [not ready]"
	}
	return s
}

// Finding is the result of one check (at one endpoint, for the checks run
// at each).
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Endpoint is where the check ran, for the checks run at each
	// endpoint (webhook.reachable, certificate.*, conversion.direct,
	// conversion.latency).
	Endpoint *Endpoint `json:"endpoint,omitempty"`
	// Message says what was seen.
	Message string `json:"message"`
	// Cause says why it breaks conversions (errors and warnings).
	Cause string `json:"cause,omitempty"`
	// Fix is the command or patch that repairs it.
	Fix string `json:"fix,omitempty"`
	// Explanation is the explain entry of the error the API server or the
	// webhook returned, when one was recognised.
	Explanation *explain.Explanation `json:"explanation,omitempty"`
}

// Report is a diagnosis: every check run, in diagnosis order.
type Report struct {
	CRD      string    `json:"crd"`
	Findings []Finding `json:"findings"`
}

// Cause returns the first error, the one to fix first, or nil.
func (r *Report) Cause() *Finding {
	for i := range r.Findings {
		if r.Findings[i].Severity == SeverityError {
			return &r.Findings[i]
		}
	}
	return nil
}

// Errors counts the findings of severity error.
func (r *Report) Errors() int { return r.count(SeverityError) }

// Warnings counts the findings of severity warning.
func (r *Report) Warnings() int { return r.count(SeverityWarning) }

func (r *Report) count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Find returns the first finding of a check, or nil.
func (r *Report) Find(check string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Check == check {
			return &r.Findings[i]
		}
	}
	return nil
}

// FindAll returns every finding of a check (one per endpoint for the
// checks run at each).
func (r *Report) FindAll(check string) []*Finding {
	var out []*Finding
	for i := range r.Findings {
		if r.Findings[i].Check == check {
			out = append(out, &r.Findings[i])
		}
	}
	return out
}

// reportOutput is a Report as -o json and -o yaml print it: with the
// cause to fix first and the counts.
type reportOutput struct {
	*Report
	Cause    *Finding `json:"cause"`
	Errors   int      `json:"errors"`
	Warnings int      `json:"warnings"`
}

// WriteJSON writes the report as indented JSON, with the cause.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(reportOutput{r, r.Cause(), r.Errors(), r.Warnings()})
}

// WriteYAML writes the report as YAML, the same fields as WriteJSON.
func (r *Report) WriteYAML(w io.Writer) error {
	data, err := yaml.Marshal(reportOutput{r, r.Cause(), r.Errors(), r.Warnings()})
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// WriteText writes the report for a terminal: each check on a line, with
// cause and fix under errors and warnings, then the cause to fix first.
// Findings of one check that say the same at several endpoints share a
// line that names them.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "hubspoke doctor %s\n", r.CRD)
	for i := 0; i < len(r.Findings); {
		f := r.Findings[i]
		j := i + 1
		var eps []string
		if f.Endpoint != nil {
			eps = append(eps, f.Endpoint.String())
			for j < len(r.Findings) && sameSaying(f, r.Findings[j]) {
				eps = append(eps, r.Findings[j].Endpoint.String())
				j++
			}
		}
		msg := f.Message
		switch {
		case len(eps) == 1:
			msg = eps[0] + ": " + msg
		case len(eps) > 1:
			msg = fmt.Sprintf("%d endpoints (%s): %s", len(eps), strings.Join(eps, ", "), msg)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", strings.ToUpper(string(f.Severity)), f.Check, msg)
		if f.Severity == SeverityError || f.Severity == SeverityWarning {
			if f.Cause != "" {
				fmt.Fprintf(tw, "  \t\tcause: %s\n", f.Cause)
			}
			if f.Fix != "" {
				fmt.Fprintf(tw, "  \t\tfix:   %s\n", f.Fix)
			}
		}
		i = j
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := r.Cause(); c != nil {
		where := ""
		if c.Endpoint != nil {
			where = " at " + c.Endpoint.String()
		}
		_, err := fmt.Fprintf(w, "\nfix first: %s%s: %s\n", c.Check, where, firstNonEmpty(c.Cause, c.Message))
		return err
	}
	_, err := fmt.Fprintf(w, "\nno error found (%d warnings)\n", r.Warnings())
	return err
}

// sameSaying reports whether two findings of the same check say the same
// thing at two endpoints.
func sameSaying(a, b Finding) bool {
	return a.Endpoint != nil && b.Endpoint != nil && a.Check == b.Check && a.Severity == b.Severity &&
		a.Message == b.Message && a.Cause == b.Cause && a.Fix == b.Fix
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Clients reach the cluster.
type Clients struct {
	Kube       kubernetes.Interface
	Extensions apiextensionsclient.Interface
	Dynamic    dynamic.Interface
}

// NewClients builds the clients from a rest config.
func NewClients(cfg *rest.Config) (Clients, error) {
	var c Clients
	var err error
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Extensions, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	return c, nil
}

// Options tune a diagnosis.
type Options struct {
	// Planned is the CRD about to be applied (its JSON or YAML; of a file
	// of several documents, the first CRD), read as every CRD file is
	// (schema.Load: strict field validation, problems at file:line:col),
	// checked against the live status.storedVersions and, with
	// ValidateUpdate, validated as the API server validates it replacing
	// the live one; nil checks the live CRD only.
	Planned []byte
	// PlannedFile names Planned in error positions; default "the planned
	// CRD".
	PlannedFile string
	// ValidateUpdate is the API server's validation of crd replacing live
	// (schema/crdvalidation.Update): each reason "field: message". It is
	// not called by default, as it links the API server's validation code;
	// without it crd.planned does not run.
	ValidateUpdate func(crd, live *apiextensionsv1.CustomResourceDefinition) []string
	// ServingCert is the webhook's serving certificate (PEM), used when no
	// endpoint can be dialled from here (e.g. pod IPs outside the cluster).
	ServingCert []byte
	// Dial connects to a clientConfig.url's host (default: a net.Dialer),
	// as the API server does through its egress "controlplane" context.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// PodDial connects to a Service's endpoint, a pod address, as the API
	// server does through its egress "cluster" context (default: Dial).
	// ConnectDialer makes one that reaches the pod network through a proxy.
	PodDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds the whole diagnosis (default 60s): what has not
	// finished by then is reported as such, with what it waited for.
	Timeout time.Duration
	// DialTimeout bounds each connection and TLS handshake (default 3s).
	DialTimeout time.Duration
	// ReviewTimeout bounds each direct ConversionReview (default:
	// LatencyError, so that a review that runs out of time is one the
	// API server would be close to giving up on).
	ReviewTimeout time.Duration
	// LatencyWarning: a review slower than this is a warning (default 1s).
	LatencyWarning time.Duration
	// LatencyError: a review that takes this long is an error (default
	// 10s, a third of the API server's 30 s webhook timeout).
	LatencyError time.Duration
	// ExpiryWarning: a certificate expiring sooner is a warning (default 30 days).
	ExpiryWarning time.Duration
	// Samples is the number of objects read per served version (default 5).
	Samples int64
	// Progress, if set, is told what doctor is waiting for, step by step.
	Progress func(step string)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.LatencyWarning <= 0 {
		o.LatencyWarning = time.Second
	}
	if o.LatencyError <= 0 {
		o.LatencyError = 10 * time.Second
	}
	if o.ReviewTimeout <= 0 {
		o.ReviewTimeout = o.LatencyError
	}
	if o.ExpiryWarning <= 0 {
		o.ExpiryWarning = 30 * 24 * time.Hour
	}
	if o.Samples <= 0 {
		o.Samples = 5
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	if o.PodDial == nil {
		o.PodDial = o.Dial
	}
}

// Run diagnoses the CRD named name (plural.group). The error is for an
// operational failure (the API server unreachable, access denied); what is
// wrong with the set-up is in the Report.
func Run(ctx context.Context, c Clients, name string, o Options) (*Report, error) {
	o.defaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	d := &diagnosis{ctx: ctx, c: c, o: o, r: &Report{CRD: name}}
	if err := d.run(name); err != nil {
		return nil, err
	}
	d.finish()
	return d.r, nil
}

func (d *diagnosis) add(f Finding) *Finding {
	d.r.Findings = append(d.r.Findings, f)
	return &d.r.Findings[len(d.r.Findings)-1]
}

func (d *diagnosis) ok(check, format string, args ...any) {
	d.add(Finding{Check: check, Severity: SeverityOK, Message: fmt.Sprintf(format, args...)})
}

func (d *diagnosis) skip(check, format string, args ...any) {
	d.add(Finding{Check: check, Severity: SeveritySkipped, Message: fmt.Sprintf(format, args...)})
}

// skipFrom marks every check from first on that has not run as skipped.
func (d *diagnosis) skipFrom(first string, why string) {
	d.skipThrough(first, Checks[len(Checks)-1], why)
}

// skipThrough marks the checks from first through last that have not run
// as skipped.
func (d *diagnosis) skipThrough(first, last string, why string) {
	on := false
	for _, c := range Checks {
		if c == first {
			on = true
		}
		if on && d.r.Find(c) == nil {
			d.skip(c, "%s", why)
		}
		if c == last {
			return
		}
	}
}

// step starts a bounded step: it says what doctor waits for, and returns
// a context that ends after limit (or with the whole diagnosis).
func (d *diagnosis) step(what string, limit time.Duration) (context.Context, context.CancelFunc) {
	if d.o.Progress != nil {
		d.o.Progress(what)
	}
	return context.WithTimeout(d.ctx, limit)
}

// timedOut says, for an error of a step, that doctor's own time ran out
// and what it was waiting for; "" for any other error.
func (d *diagnosis) timedOut(ctx context.Context, what string) string {
	switch {
	case d.ctx.Err() != nil:
		return fmt.Sprintf("doctor's --timeout (%s) ran out while waiting for %s", d.o.Timeout, what)
	case ctx.Err() != nil:
		return fmt.Sprintf("no answer within %s while waiting for %s", deadlineOf(ctx), what)
	}
	return ""
}

func deadlineOf(ctx context.Context) string {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl).Round(time.Second).String()
	}
	return "its bound"
}

// explained returns the first explanation of msg, or nil.
func explained(msg string) *explain.Explanation {
	if xs := explain.Explain(msg); len(xs) > 0 {
		return &xs[0]
	}
	return nil
}

// finish puts the findings in diagnosis order (per-endpoint ones by
// endpoint within their check), relates them, and fills in the names
// doctor knows where texts say CRD-NAME or NAMESPACE.
func (d *diagnosis) finish() {
	order := map[string]int{}
	for i, c := range Checks {
		order[c] = i
	}
	sort.SliceStable(d.r.Findings, func(i, j int) bool {
		return order[d.r.Findings[i].Check] < order[d.r.Findings[j].Check]
	})
	d.correlate()
	fill := strings.NewReplacer("CRD-NAME", d.name)
	ns := d.svcNS
	for i := range d.r.Findings {
		f := &d.r.Findings[i]
		f.Cause, f.Fix = fill.Replace(f.Cause), fill.Replace(f.Fix)
		if ns != "" {
			f.Fix = strings.ReplaceAll(f.Fix, "-n NAMESPACE", "-n "+ns)
		}
		if x := f.Explanation; x != nil {
			x.Cause = fill.Replace(x.Cause)
			for k := range x.Fixes {
				x.Fixes[k] = fill.Replace(x.Fixes[k])
				if ns != "" {
					x.Fixes[k] = strings.ReplaceAll(x.Fixes[k], "-n NAMESPACE", "-n "+ns)
				}
			}
		}
	}
}
