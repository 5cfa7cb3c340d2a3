package doctor

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hubspoke/hubspoke/explain"
)

// failure is one operation through the API server that failed.
type failure struct {
	op, version string // "read" or "write (dry-run create)", through version
	from, to    string // versions of the conversion, when known
	err         error
}

// checkLive reads up to Samples objects through every served version
// (converting from the versions they are stored at) and creates a copy of
// one with dryRun through every served version but the storage one (the
// API server converts it to the storage version and the reply back). The
// operations run side by side, each bounded by the diagnosis's time: the
// API server waits up to 30 s for a webhook that does not answer.
func (d *diagnosis) checkLive() []Finding {
	if len(d.served) == 0 {
		return []Finding{{Check: CheckLive, Severity: SeveritySkipped, Message: "no served version"}}
	}
	type outcome struct {
		what    string // what the operation waits for
		done    bool
		ok      string
		fail    *failure
		waited  string // what doctor's time ran out waiting for
		objects int
		items   []unstructured.Unstructured
	}
	var writeVersions []string
	for _, v := range d.served {
		if v != d.storage {
			writeVersions = append(writeVersions, v)
		}
	}
	var mu sync.Mutex
	reads := make([]outcome, len(d.served))
	writes := make([]outcome, len(writeVersions))
	for i, v := range d.served {
		reads[i].what = fmt.Sprintf("the API server to list %s through %s", d.crd.Spec.Names.Plural, v)
	}
	for i, v := range writeVersions {
		writes[i].what = fmt.Sprintf("the API server to create a %s through %s (dry run)", d.crd.Spec.Names.Kind, v)
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var wg sync.WaitGroup
		for i, v := range d.served {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var o outcome
				ctx, cancel := d.step(reads[i].what, d.o.Timeout)
				defer cancel()
				list, err := d.c.Dynamic.Resource(d.gvr(v)).List(ctx, metav1.ListOptions{Limit: d.o.Samples})
				switch {
				case err == nil:
					o.items, o.objects = list.Items, len(list.Items)
					o.ok = fmt.Sprintf("read %d through %s", len(list.Items), v)
				case d.timedOut(ctx, reads[i].what) != "":
					o.waited = d.timedOut(ctx, reads[i].what)
				default:
					f := d.failure("read", v, err)
					o.fail = &f
				}
				mu.Lock()
				o.what, o.done = reads[i].what, true
				reads[i] = o
				mu.Unlock()
			}()
		}
		wg.Wait()
		for i, v := range writeVersions {
			var smp []unstructured.Unstructured
			mu.Lock()
			for j, rv := range d.served {
				if rv == v {
					smp = reads[j].items
				}
			}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				var o outcome
				ctx, cancel := d.step(writes[i].what, d.o.Timeout)
				defer cancel()
				probe := d.probeObject(v, smp)
				ri := d.c.Dynamic.Resource(d.gvr(v))
				var err error
				if d.crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
					_, err = ri.Namespace(probe.GetNamespace()).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				} else {
					_, err = ri.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				}
				switch {
				case err == nil:
					o.ok = fmt.Sprintf("dry-run create through %s (%s -> %s -> %s)", v, v, d.storage, v)
				case apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err):
					// Converted to the storage version, then refused by validation.
					o.ok = fmt.Sprintf("dry-run create through %s (%s -> %s; the object was then refused: %s)", v, v, d.storage, apierrors.ReasonForError(err))
				case d.timedOut(ctx, writes[i].what) != "":
					o.waited = d.timedOut(ctx, writes[i].what)
				default:
					f := d.failure("write (dry-run create)", v, err)
					o.fail = &f
				}
				mu.Lock()
				o.what, o.done = writes[i].what, true
				writes[i] = o
				mu.Unlock()
			}()
		}
		wg.Wait()
	}()
	// A client that does not give up with its context must not hold
	// doctor past its time.
	select {
	case <-finished:
	case <-d.ctx.Done():
	}
	mu.Lock()
	all := append(slices.Clone(reads), writes...)
	mu.Unlock()
	for i := range all {
		if !all[i].done {
			all[i].waited = fmt.Sprintf("doctor's --timeout (%s) ran out while waiting for %s", d.o.Timeout, all[i].what)
		}
	}

	var fails []failure
	var okOps, waited []string
	objects := 0
	for _, o := range all {
		switch {
		case o.fail != nil:
			fails = append(fails, *o.fail)
		case o.waited != "":
			waited = append(waited, o.waited)
		default:
			okOps = append(okOps, o.ok)
		}
		objects = max(objects, o.objects)
	}
	var out []Finding
	switch {
	case len(fails) > 0:
		out = append(out, d.liveFailure(fails, okOps))
	case len(waited) > 0:
		out = append(out, Finding{Check: CheckLive, Severity: SeverityError, Message: strings.Join(waited, "; "),
			Cause: "the API server did not answer: it waits up to 30 s for a conversion webhook that does not answer (a hung handshake or a slow webhook; see the endpoints' checks)",
			Fix:   "see the webhook.reachable and conversion.latency findings; doctor --timeout longer than 30s shows the API server's own error"})
	default:
		d.liveOK = true
		msg := strings.Join(okOps, "; ")
		if objects == 0 {
			msg += " (no objects exist: reads converted nothing)"
		}
		out = append(out, Finding{Check: CheckLive, Severity: SeverityOK, Message: msg})
	}
	return out
}

// liveFailure is the conversion.live finding for failed operations, with
// the API server's error explained.
func (d *diagnosis) liveFailure(fails []failure, okOps []string) Finding {
	var parts []string
	for _, f := range fails {
		parts = append(parts, fmt.Sprintf("%s through %s: %v", f.op, f.version, f.err))
	}
	first := fails[0]
	f := Finding{Check: CheckLive, Severity: SeverityError, Message: strings.Join(parts, "; "), Explanation: explained(first.err.Error())}
	if f.Explanation != nil {
		f.Cause = f.Explanation.Cause
		f.Fix = firstFix(f.Explanation)
	} else {
		f.Cause = "the API server's error is not one explain recognises, so doctor asserts no cause: see the checks above and the webhook's log"
	}
	// A webhook that refuses (result.status Failure with its own message)
	// one direction while the other works converts one way only.
	if one := d.oneWayLive(fails, okOps); one != "" && f.Explanation != nil && f.Explanation.ID == "conversion-webhook-failed" {
		f.Cause = one + " " + f.Cause
		f.Fix = "make the webhook convert in both directions between every pair of served versions (the API server converts to the requested version on reads and to the storage version on writes); hubspoke's rules derive each inverse"
	}
	return f
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

// oneWayLive says "conversions to X fail while the other direction works"
// when every failure has the same target and a conversion from it
// succeeded.
func (d *diagnosis) oneWayLive(fails []failure, okOps []string) string {
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

// probeObject is the object created with dryRun through version v: a copy
// of a sample read through v (so that it is valid), or a bare object.
func (d *diagnosis) probeObject(v string, samples []unstructured.Unstructured) *unstructured.Unstructured {
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

// correlate revisits findings in the light of others.
func (d *diagnosis) correlate() {
	rv := d.r.Find(CheckReviewVersions)
	failing := false
	for _, c := range []string{CheckLive, CheckDirect} {
		for _, f := range d.r.FindAll(c) {
			failing = failing || f.Severity == SeverityError
		}
	}
	if rv != nil && rv.Severity == SeverityWarning && d.review == "v1beta1" && failing {
		rv.Severity = SeverityError
		rv.Cause = "the API server sends v1beta1 ConversionReviews and this webhook fails them (see the conversion checks below)"
	}
	live := d.r.Find(CheckLive)
	if live == nil || len(d.results) == 0 {
		return
	}
	allChain, anyEndpointError := true, false
	for _, r := range d.results {
		allChain = allChain && r.verified.chainOK
		for _, f := range r.findings {
			anyEndpointError = anyEndpointError || f.Severity == SeverityError
		}
	}
	// Never propose another caBundle when every served chain verifies
	// against the one the CRD holds.
	if x := live.Explanation; x != nil && live.Severity == SeverityError && allChain &&
		(x.ID == "x509-unknown-authority" || x.ID == "x509-candidate-authority") {
		live.Cause = "the API server refused a certificate as not signed by the caBundle's CA, yet every endpoint's chain verifies against the caBundle now: the API server used a connection or a caBundle from before a change (it keeps connections open across certificate changes), or it reached an endpoint that is gone"
		live.Fix = "run doctor again in a minute: new connections verify the certificates the endpoints serve now; if the failure stays, compare the endpoints above with the pods that really serve the Service"
	}
	// Live reads can succeed while endpoints are broken: say why they are
	// no evidence.
	if live.Severity == SeverityOK && anyEndpointError {
		live.Message += " — yet the endpoints' checks above fail: the API server serves reads from its watch cache (each object converted once, when it entered the cache) and keeps connections open across certificate changes, so the next new connection, write or cache refill fails as they do"
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
