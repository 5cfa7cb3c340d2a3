// Package doctor diagnoses a CustomResourceDefinition's conversion webhook
// on a live cluster, in the order an expert follows:
//
//  1. the CRD: conversion strategy, clientConfig, conversionReviewVersions,
//     served and storage versions, conditions, status.storedVersions
//     against the versions still defined, the caBundle;
//  2. the Service the clientConfig names: it exists, has the port, and the
//     port maps to a container port;
//  3. its EndpointSlices: endpoints exist and are ready;
//  4. the serving certificate (dialled at an endpoint when reachable):
//     it chains to the caBundle, its SANs include NAME.NAMESPACE.svc, it is
//     valid now and not about to expire;
//  5. conversions: through the API server (a sample object read through
//     every served version and written back with dryRun, which converts
//     both ways) and, when an endpoint is reachable, directly with the
//     ConversionReview protocol checks of package check/webhook.
//
// Each Finding names the check, what was seen, the cause and the exact fix
// (a command or a patch). A stage that cannot run because an earlier one
// failed is skipped, so the first error of a Report is the cause to fix
// first. Errors the API server returned are translated with package
// explain, the same table `hubspoke explain` uses.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
	CheckPlanned        = "crd.planned"
	CheckCABundle       = "crd.caBundle"
	CheckService        = "service"
	CheckServicePort    = "service.port"
	CheckEndpoints      = "endpoints"
	CheckEndpointsReady = "endpoints.ready"
	CheckReachable      = "webhook.reachable"
	CheckCertChain      = "certificate.chain"
	CheckCertNames      = "certificate.names"
	CheckCertExpiry     = "certificate.expiry"
	CheckLive           = "conversion.live"
	CheckDirect         = "conversion.direct"
)

// Checks lists every check in diagnosis order.
var Checks = []string{
	CheckCRD, CheckStrategy, CheckClientConfig, CheckReviewVersions, CheckVersions, CheckConditions,
	CheckStoredVersions, CheckPlanned, CheckCABundle, CheckService, CheckServicePort, CheckEndpoints, CheckEndpointsReady,
	CheckReachable, CheckCertChain, CheckCertNames, CheckCertExpiry, CheckLive, CheckDirect,
}

// Severity of a finding.
type Severity string

// Severities, from fine to broken.
const (
	SeverityOK      Severity = "ok"
	SeveritySkipped Severity = "skipped"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Finding is the result of one check.
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
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
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// Find returns the finding of a check, or nil.
func (r *Report) Find(check string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].Check == check {
			return &r.Findings[i]
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON, with the cause.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Cause  *Finding `json:"cause"`
		Errors int      `json:"errors"`
	}{r, r.Cause(), r.Errors()})
}

// WriteText writes the report for a terminal: each check on a line, with
// cause and fix under errors and warnings, then the cause to fix first.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "hubspoke doctor %s\n", r.CRD)
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", strings.ToUpper(string(f.Severity)), f.Check, f.Message)
		if f.Severity == SeverityError || f.Severity == SeverityWarning {
			if f.Cause != "" {
				fmt.Fprintf(tw, "  \t\tcause: %s\n", f.Cause)
			}
			if f.Fix != "" {
				fmt.Fprintf(tw, "  \t\tfix:   %s\n", f.Fix)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := r.Cause(); c != nil {
		_, err := fmt.Fprintf(w, "\nfix first: %s: %s\n", c.Check, firstNonEmpty(c.Cause, c.Message))
		return err
	}
	warnings := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityWarning {
			warnings++
		}
	}
	_, err := fmt.Fprintf(w, "\nno error found (%d warnings)\n", warnings)
	return err
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
	// Planned is the CRD about to be applied (its JSON or YAML), checked
	// against the live status.storedVersions and, with ValidateUpdate,
	// validated as the API server validates it replacing the live one; nil
	// checks the live CRD only.
	Planned []byte
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
	// DialTimeout bounds each connection attempt (default 3s).
	DialTimeout time.Duration
	// ReviewTimeout bounds each direct ConversionReview (default 10s).
	ReviewTimeout time.Duration
	// ExpiryWarning: a certificate expiring sooner is a warning (default 30 days).
	ExpiryWarning time.Duration
	// Samples is the number of objects read per served version (default 5).
	Samples int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.ReviewTimeout <= 0 {
		o.ReviewTimeout = 10 * time.Second
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
	d := &diagnosis{ctx: ctx, c: c, o: o, r: &Report{CRD: name}}
	if err := d.run(name); err != nil {
		return nil, err
	}
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

// explained returns the first explanation of msg, or nil.
func explained(msg string) *explain.Explanation {
	if xs := explain.Explain(msg); len(xs) > 0 {
		return &xs[0]
	}
	return nil
}
