package doctor

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/check/webhook"
	"github.com/hubspoke/hubspoke/explain"
	hschema "github.com/hubspoke/hubspoke/schema"
)

// failure is one conversion the API server could not do.
type failure struct {
	op, version string // "read" or "write (dry-run)", through version
	from, to    string // versions of the conversion, when known
	err         error
}

// checkLive reads up to Samples objects through every served version
// (converting from the versions they are stored at) and creates a copy of
// one with dryRun through every served version but the storage one (the
// API server converts it to the storage version and the reply back).
func (d *diagnosis) checkLive() {
	if len(d.served) == 0 {
		d.skip(CheckLive, "no served version")
		return
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: d.crd.Spec.Group, Version: v, Resource: d.crd.Spec.Names.Plural}
	}
	var fails []failure
	var okOps []string
	converted := false // a conversion through the webhook succeeded
	samples := map[string][]unstructured.Unstructured{}
	objects := 0
	for _, v := range d.served {
		list, err := d.c.Dynamic.Resource(gvr(v)).List(d.ctx, metav1.ListOptions{Limit: d.o.Samples})
		if err != nil {
			fails = append(fails, d.failure("read", v, err))
			continue
		}
		samples[v] = list.Items
		objects = max(objects, len(list.Items))
		okOps = append(okOps, fmt.Sprintf("read %d through %s", len(list.Items), v))
	}
	for _, v := range d.served {
		if v == d.storage {
			continue
		}
		probe := d.probe(v, samples[v])
		ri := d.c.Dynamic.Resource(gvr(v))
		var err error
		if d.crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			_, err = ri.Namespace(probe.GetNamespace()).Create(d.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		} else {
			_, err = ri.Create(d.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		}
		switch {
		case err == nil:
			converted = true
			okOps = append(okOps, fmt.Sprintf("dry-run create through %s (%s -> %s -> %s)", v, v, d.storage, v))
		case apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err):
			converted = true
			// Converted to the storage version, then refused by validation.
			okOps = append(okOps, fmt.Sprintf("dry-run create through %s (%s -> %s; the object was then refused: %s)", v, v, d.storage, apierrors.ReasonForError(err)))
		default:
			fails = append(fails, d.failure("write (dry-run create)", v, err))
		}
	}
	if len(fails) == 0 {
		d.liveProved = converted
		msg := strings.Join(okOps, "; ")
		if objects == 0 {
			msg += " (no objects exist: reads converted nothing)"
		}
		d.ok(CheckLive, "%s", msg)
		return
	}
	var parts []string
	for _, f := range fails {
		parts = append(parts, fmt.Sprintf("%s through %s: %v", f.op, f.version, f.err))
	}
	first := fails[0]
	f := Finding{Check: CheckLive, Severity: SeverityError, Message: strings.Join(parts, "; "), Explanation: explained(first.err.Error())}
	if f.Explanation != nil {
		f.Cause = f.Explanation.Cause
		if len(f.Explanation.Fixes) > 0 {
			f.Fix = f.Explanation.Fixes[0]
		}
	}
	// A webhook that refuses (result.status Failure with its own message)
	// one direction while the other works converts one way only.
	if one := d.oneWay(fails, okOps); one != "" && f.Explanation != nil && f.Explanation.ID == "conversion-webhook-failed" {
		f.Cause = one + " " + f.Cause
		f.Fix = "make the webhook convert in both directions between every pair of served versions (the API server converts to the requested version on reads and to the storage version on writes); hubspoke's rules derive each inverse"
	}
	d.add(f)
}

// failure records a failed operation, with the conversion's direction
// taken from the API server's message ("conversion webhook for GROUP/FROM,
// Kind=K failed").
func (d *diagnosis) failure(op, version string, err error) failure {
	f := failure{op: op, version: version, err: err}
	for _, x := range explain.Explain(err.Error()) {
		if gvk := x.Fields["gvk"]; gvk != "" {
			gv, _, _ := strings.Cut(gvk, ",")
			f.from = gv[strings.LastIndex(gv, "/")+1:]
			break
		}
	}
	switch {
	case f.from == "":
	case op == "read":
		f.to = version
	case f.from == version:
		f.to = d.storage
	default:
		f.to = version
	}
	return f
}

// oneWay says "conversions to X fail while the other direction works" when
// every failure has the same target and a conversion from it succeeded.
func (d *diagnosis) oneWay(fails []failure, okOps []string) string {
	to := fails[0].to
	if to == "" || len(okOps) == 0 {
		return ""
	}
	var froms []string
	for _, f := range fails {
		if f.to != to {
			return ""
		}
		froms = append(froms, f.from)
	}
	sort.Strings(froms)
	return fmt.Sprintf("Conversions to %s (from %s) fail while conversions from %s succeed: the webhook converts in one direction only.", to, strings.Join(dedupe(froms), ", "), to)
}

// probe is the object created with dryRun through version v: a copy of a
// sample read through v (so that it is valid), or a bare object.
func (d *diagnosis) probe(v string, samples []unstructured.Unstructured) *unstructured.Unstructured {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "hubspoke-doctor-probe-" + hex.EncodeToString(b[:])
	p := &unstructured.Unstructured{Object: map[string]any{}}
	if len(samples) > 0 {
		for k, val := range samples[0].Object {
			if k != "metadata" && k != "status" {
				p.Object[k] = val
			}
		}
		p.SetLabels(samples[0].GetLabels())
		p.SetAnnotations(samples[0].GetAnnotations())
		p.SetNamespace(samples[0].GetNamespace())
	}
	p.SetAPIVersion(d.crd.Spec.Group + "/" + v)
	p.SetKind(d.crd.Spec.Names.Kind)
	p.SetName(name)
	if d.crd.Spec.Scope == apiextensionsv1.NamespaceScoped && p.GetNamespace() == "" {
		p.SetNamespace("default")
	}
	return p
}

// checkDirect posts ConversionReviews to a reachable endpoint and checks
// the answers with the protocol checks of package check/webhook.
func (d *diagnosis) checkDirect() {
	if d.dialled == "" {
		d.skip(CheckDirect, "no endpoint reachable from here")
		return
	}
	crd := d.crd.DeepCopy()
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	data, err := json.Marshal(crd)
	if err != nil {
		d.skip(CheckDirect, "encode the CRD: %v", err)
		return
	}
	sc, err := hschema.Load(d.name, data)
	if err != nil {
		d.skip(CheckDirect, "read the CRD's schemas: %v", err)
		return
	}
	tlsConfig := &tls.Config{ServerName: d.host, RootCAs: d.caPool, MinVersion: tls.VersionTLS12}
	note := ""
	if !d.certOK {
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // the certificate's faults are reported above; check the protocol regardless
		note = " (certificate not verified: see the certificate checks)"
	}
	target := d.dialled
	dial := d.dial
	transport := &http.Transport{TLSClientConfig: tlsConfig, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, target)
	}}
	defer transport.CloseIdleConnections()
	u := d.url
	if u == "" {
		_, port, _ := net.SplitHostPort(d.dialled)
		u = "https://" + net.JoinHostPort(d.host, port) + d.path
	}
	client, err := webhook.New(webhook.FromCRD(sc, webhook.Options{URL: u, HTTPClient: &http.Client{Transport: transport}, Timeout: d.o.ReviewTimeout, ReviewVersion: d.review}))
	if err != nil {
		d.skip(CheckDirect, "%v", err)
		return
	}
	rep := webhook.Conformance(d.ctx, client, sc)
	if rep.Checks == 0 {
		d.skip(CheckDirect, "no sample objects could be generated from the CRD's schemas")
		return
	}
	var errs, warns []string
	for _, f := range rep.Findings {
		line := fmt.Sprintf("[%s] %s", f.Check, f.Message)
		if f.From != "" || f.To != "" {
			line = fmt.Sprintf("[%s %s->%s] %s", f.Check, f.From, f.To, f.Message)
		}
		if d.directMatters(f) {
			errs = append(errs, line)
		} else {
			warns = append(warns, line)
		}
	}
	switch {
	case len(errs) > 0:
		x := explained(strings.Join(errs, "\n"))
		fd := Finding{Check: CheckDirect, Severity: SeverityError, Message: fmt.Sprintf("%d of %d reviews sent to %s answered wrong%s: %s", len(errs), rep.Checks, d.dialled, note, strings.Join(errs, "; ")),
			Cause: "the webhook's answers break the ConversionReview protocol the API server enforces", Explanation: x,
			Fix: "fix the webhook; `hubspoke check --crd crd.yaml --webhook URL` reproduces these reviews"}
		d.add(fd)
	case len(warns) > 0:
		d.add(Finding{Check: CheckDirect, Severity: SeverityWarning, Message: fmt.Sprintf("%d reviews sent to %s%s; the API server's path works, other clients' may not: %s", rep.Checks, d.dialled, note, strings.Join(warns, "; ")),
			Cause: "answers the API server never asks for (malformed reviews, undeclared versions, objects already converted)"})
	default:
		d.ok(CheckDirect, "%d reviews sent to %s answered correctly (uid, count, order, apiVersion, identity) in every direction%s", rep.Checks, d.dialled, note)
	}
}

// directMatters tells the protocol findings that break the API server's
// conversions from those about requests it never sends.
func (d *diagnosis) directMatters(f check.Finding) bool {
	switch f.Check {
	case webhook.CheckSameVersion, webhook.CheckUnsupportedTarget, webhook.CheckMalformed:
		return false
	case webhook.CheckV1beta1:
		return d.review == "v1beta1"
	}
	return f.Severity != check.SeverityWarning
}

// correlate revisits findings in the light of later ones: a warning a
// later failure shows to be the cause, and errors about what doctor saw at
// an endpoint when the API server converts through the same Service
// without fault (doctor then reached something else: a proxy, a NAT, or
// another pod than the ones the API server uses).
func (d *diagnosis) correlate() {
	if d.liveProved {
		for i := range d.r.Findings {
			f := &d.r.Findings[i]
			switch f.Check {
			case CheckReachable, CheckCertChain, CheckCertNames, CheckCertExpiry, CheckDirect:
				if f.Severity == SeverityError {
					f.Severity = SeverityWarning
					f.Cause = fmt.Sprintf("yet conversions through the API server succeed, so it reaches a webhook that works: doctor reached %s through something else (a proxy, a NAT) or reached a replica the API server did not use; if conversions fail only sometimes, this replica is why. Give the serving certificate with --cert-file to check it. (%s)", orDefault(d.dialled, "the endpoint"), f.Cause)
				}
			}
		}
	}
	rv := d.r.Find(CheckReviewVersions)
	live, direct := d.r.Find(CheckLive), d.r.Find(CheckDirect)
	failing := (live != nil && live.Severity == SeverityError) || (direct != nil && direct.Severity == SeverityError)
	if rv != nil && rv.Severity == SeverityWarning && d.review == "v1beta1" && failing {
		rv.Severity = SeverityError
		rv.Cause = "the API server sends v1beta1 ConversionReviews and this webhook fails them (see the conversion checks below)"
	}
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}
