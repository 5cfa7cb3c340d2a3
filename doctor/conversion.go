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

// checkLive lists up to Samples objects through the storage version, gets
// two of them through every other served version (a GET converts its
// object; a LIST may be served from the watch cache, converted when the
// objects entered it) and creates a copy of one with dryRun through each
// of those versions (the API server converts it to the storage version
// and the reply back). The versions are checked side by side, each
// operation bounded by the diagnosis's time: the API server waits up to
// 30 s for a webhook that does not answer.
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
	var others []string
	for _, v := range d.served {
		if v != d.storage {
			others = append(others, v)
		}
	}
	var mu sync.Mutex
	// The objects are listed through the storage version (no conversion
	// for objects stored at it), then read one by one through each other
	// served version: a GET converts its object, while a LIST can be
	// served from the watch cache, converted when the objects entered it.
	// A copy of one is then created with dryRun through that version: to
	// the storage version and back.
	list := &outcome{what: fmt.Sprintf("the API server to list %s through %s", d.crd.Spec.Names.Plural, d.storage)}
	gets := make([]*outcome, len(others))
	writes := make([]*outcome, len(others))
	for i, v := range others {
		gets[i] = &outcome{what: fmt.Sprintf("the API server to get %s through %s", d.crd.Spec.Names.Plural, v)}
		writes[i] = &outcome{what: fmt.Sprintf("the API server to create a %s through %s (dry run)", d.crd.Spec.Names.Kind, v)}
	}
	if !slices.Contains(d.served, d.storage) {
		list.what = fmt.Sprintf("the API server to list %s through %s", d.crd.Spec.Names.Plural, d.served[0])
	}
	set := func(dst *outcome, o outcome) {
		mu.Lock()
		o.what, o.done = dst.what, true
		*dst = o
		mu.Unlock()
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		listVersion := d.storage
		if !slices.Contains(d.served, d.storage) {
			listVersion = d.served[0]
		}
		var o outcome
		ctx, cancel := d.step(list.what, d.o.Timeout)
		l, err := d.c.Dynamic.Resource(d.gvr(listVersion)).List(ctx, metav1.ListOptions{Limit: d.o.Samples})
		switch {
		case err == nil:
			o.items, o.objects = l.Items, len(l.Items)
			o.ok = fmt.Sprintf("listed %d through %s", len(l.Items), listVersion)
		case d.timedOut(ctx, list.what) != "":
			o.waited = d.timedOut(ctx, list.what)
		default:
			f := d.failure("read", listVersion, err)
			o.fail = &f
		}
		cancel()
		names := o.items
		if len(names) > 2 {
			names = names[:2]
		}
		set(list, o)
		var wg sync.WaitGroup
		for i, v := range others {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var got []unstructured.Unstructured
				var g outcome
				ctx, cancel := d.step(gets[i].what, d.o.Timeout)
				// The objects are read side by side: each GET waits for
				// the webhook.
				type got1 struct {
					obj *unstructured.Unstructured
					err error
				}
				res := make([]got1, len(names))
				var gwg sync.WaitGroup
				for k, it := range names {
					gwg.Add(1)
					go func() {
						defer gwg.Done()
						ri := d.c.Dynamic.Resource(d.gvr(v))
						if it.GetNamespace() != "" {
							res[k].obj, res[k].err = ri.Namespace(it.GetNamespace()).Get(ctx, it.GetName(), metav1.GetOptions{})
						} else {
							res[k].obj, res[k].err = ri.Get(ctx, it.GetName(), metav1.GetOptions{})
						}
					}()
				}
				gwg.Wait()
				var read []string
				for k, r := range res {
					if apierrors.IsNotFound(r.err) {
						continue // deleted since the list
					}
					if r.err != nil {
						if t := d.timedOut(ctx, gets[i].what); t != "" {
							g.waited = t
						} else {
							f := d.failure("read", v, r.err)
							g.fail = &f
						}
						break
					}
					got = append(got, *r.obj)
					read = append(read, names[k].GetName())
				}
				cancel()
				if g.fail == nil && g.waited == "" {
					if len(read) > 0 {
						g.ok = fmt.Sprintf("got %s through %s (%s -> %s)", strings.Join(read, ", "), v, listVersion, v)
						g.objects = len(read)
					} else {
						g.ok = fmt.Sprintf("nothing to get through %s", v)
					}
				}
				set(gets[i], g)

				var w outcome
				ctx, cancel = d.step(writes[i].what, d.o.Timeout)
				defer cancel()
				probe := d.probeObject(v, got)
				ri := d.c.Dynamic.Resource(d.gvr(v))
				var err error
				if d.crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
					_, err = ri.Namespace(probe.GetNamespace()).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				} else {
					_, err = ri.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				}
				switch {
				case err == nil:
					w.ok = fmt.Sprintf("dry-run create through %s (%s -> %s -> %s)", v, v, d.storage, v)
				case apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err):
					// Converted to the storage version, then refused by validation.
					w.ok = fmt.Sprintf("dry-run create through %s (%s -> %s; the object was then refused: %s)", v, v, d.storage, apierrors.ReasonForError(err))
				case d.timedOut(ctx, writes[i].what) != "":
					w.waited = d.timedOut(ctx, writes[i].what)
				default:
					f := d.failure("write (dry-run create)", v, err)
					w.fail = &f
				}
				set(writes[i], w)
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
	all := []outcome{*list}
	for i := range gets {
		all = append(all, *gets[i], *writes[i])
	}
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
	// The failure explain names most precisely: an unrecognised error
	// inside a call failure says less than a recognised one beside it.
	first := fails[0]
	x := explained(first.err.Error())
	for _, fl := range fails {
		if y := explained(fl.err.Error()); y != nil && (x == nil || vague(x.ID)) && !vague(y.ID) {
			first, x = fl, y
			break
		}
	}
	f := Finding{Check: CheckLive, Severity: SeverityError, Message: strings.Join(parts, "; "), Explanation: x}
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

// vague are the explanations that recognise only the wrapper of an
// error explain does not know.
func vague(id string) bool {
	return id == "webhook-call-failed" || id == "failed-calling-webhook"
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
	allChain, anyChain, anyEndpointError := true, false, false
	var good []string
	for _, r := range d.results {
		allChain = allChain && r.verified.chainOK
		if r.verified.chainOK {
			anyChain = true
			good = append(good, r.ep.String())
		}
		for _, f := range r.findings {
			anyEndpointError = anyEndpointError || f.Severity == SeverityError
		}
	}
	// A replica whose chain fails while others' verify: the caBundle is
	// right, the replica is not.
	if anyChain && !allChain {
		for _, f := range d.r.FindAll(CheckCertChain) {
			if f.Severity != SeverityError || f.Endpoint == nil {
				continue
			}
			f.Cause = fmt.Sprintf("the other endpoints' certificates (%s) chain to the caBundle, so the caBundle is right and this replica serves another certificate: a pod not restarted after a rotation, an old Secret mounted, or another Deployment behind the Service; the API server fails the conversions it sends here, so they fail only sometimes", strings.Join(good, ", "))
			f.Fix = fmt.Sprintf("kubectl delete pod -n %s %s   # restarted, it mounts the Secret the others serve; if not, compare its Secret and its Deployment with theirs", d.svcNS, orDefault(f.Endpoint.Pod, "POD"))
		}
		if x := live.Explanation; x != nil && live.Severity == SeverityError && (x.ID == "x509-unknown-authority" || x.ID == "x509-candidate-authority") {
			live.Cause = "the API server reached a replica whose certificate does not chain to the caBundle; the certificate.chain findings above name it, while the others verify"
			live.Fix = "fix that replica (see certificate.chain), not the caBundle"
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
