package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/check/webhook"
)

// endpointResult is what doctor found at one endpoint.
type endpointResult struct {
	ep          Endpoint
	h           handshake
	unreachable bool // the dial failed as if the address were not reachable from here
	verified    verified
	findings    []Finding
}

// samples are the objects sent in direct reviews, by version.
type samples struct {
	byVersion   map[string][][]byte
	fromCluster bool // the storage version's were read from the cluster
	note        string
}

// checkEndpointsDirectly runs the per-endpoint checks at every endpoint
// (ready ones first) or at the URL's host, in parallel, each bounded.
func (d *diagnosis) checkEndpointsDirectly() {
	var targets []Endpoint
	if d.url != "" {
		if u, err := url.Parse(d.url); err == nil {
			port := u.Port()
			if port == "" {
				port = "443"
			}
			targets = append(targets, Endpoint{Address: net.JoinHostPort(u.Hostname(), port), Ready: true})
		}
	} else {
		targets = d.endpoints
	}
	if len(targets) == 0 {
		d.skipThrough(CheckReachable, CheckLatency, "no endpoint to dial")
		return
	}
	smp := d.readSamples()
	results := make([]*endpointResult, len(targets))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = d.probe(&targets[i], smp)
		}()
	}
	wg.Wait()
	d.results = results
	reached := slices.ContainsFunc(results, func(r *endpointResult) bool { return !r.unreachable })
	if !reached {
		var why []string
		for _, r := range results {
			why = append(why, fmt.Sprintf("%s (%v)", r.ep.Address, r.h.err))
		}
		if d.url != "" {
			d.skip(CheckReachable, "the URL's host is not reachable from here: %s (the live check shows whether the API server reaches it)", strings.Join(why, "; "))
		} else {
			d.skip(CheckReachable, "not reachable from here: %s (pod IPs usually are not, outside the cluster: --pod-network-proxy reaches them)", strings.Join(why, "; "))
		}
		if chain := parsePEM(d.o.ServingCert); len(chain) > 0 {
			v := d.verifyChain(nil, chain)
			for _, f := range v.findings {
				f.Message = "the certificate of --cert-file: " + f.Message
				d.add(f)
			}
		} else {
			d.skipThrough(CheckCertChain, CheckCertExpiry, "no endpoint reachable from here; --cert-file gives the serving certificate to check")
		}
		d.skipThrough(CheckDirect, CheckLatency, "no endpoint reachable from here")
		return
	}
	for _, r := range results {
		for _, f := range r.findings {
			d.add(f)
		}
	}
}

// probe runs the per-endpoint checks at one endpoint: the handshake, the
// certificate, and reviews for every pair of versions, timed.
func (d *diagnosis) probe(ep *Endpoint, smp samples) *endpointResult {
	r := &endpointResult{ep: *ep}
	add := func(f Finding) {
		f.Endpoint = &r.ep
		r.findings = append(r.findings, f)
	}
	skip := func(check, why string) {
		add(Finding{Check: check, Severity: SeveritySkipped, Message: why})
	}
	if d.o.Progress != nil {
		d.o.Progress("a TLS handshake with " + ep.String())
	}
	r.h = d.shake(d.ctx, ep.Address)
	timedOut := r.h.connected && r.h.err != nil && (errors.Is(r.h.err, context.DeadlineExceeded) || errors.Is(r.h.err, os.ErrDeadlineExceeded))
	if !r.h.connected && unreachable(r.h.err) {
		r.unreachable = true
	}
	if r.h.err != nil {
		add(d.reachFinding(&r.ep, r.h, timedOut))
		if len(r.h.chain) > 0 {
			r.verified = d.verifyChain(&r.ep, r.h.chain)
			for _, f := range r.verified.findings {
				add(f)
			}
		} else {
			for _, c := range []string{CheckCertChain, CheckCertUsage, CheckCertNames, CheckCertExpiry} {
				skip(c, "no certificate: the TLS handshake failed")
			}
		}
		skip(CheckDirect, "the TLS handshake failed")
		skip(CheckLatency, "the TLS handshake failed")
		return r
	}
	msg := "TLS handshake (" + tls.VersionName(r.h.version) + ")"
	if r.h.clientCertAsked {
		msg += "; the webhook asks for an optional client certificate and accepts none"
	}
	add(Finding{Check: CheckReachable, Severity: SeverityOK, Message: msg})
	if len(r.h.chain) == 0 {
		for _, c := range []string{CheckCertChain, CheckCertUsage, CheckCertNames, CheckCertExpiry} {
			skip(c, "the webhook presented no certificate")
		}
	} else {
		r.verified = d.verifyChain(&r.ep, r.h.chain)
		for _, f := range r.verified.findings {
			add(f)
		}
	}
	direct, latency := d.reviewEndpoint(&r.ep, r.verified.ok, smp)
	add(direct)
	add(latency)
	return r
}

// readSamples reads up to Samples objects through the storage version:
// what the API server sends in reviews. A read that fails or needs too
// long (objects stored at another version need the webhook) leaves the
// samples to the schemas.
func (d *diagnosis) readSamples() samples {
	smp := samples{byVersion: map[string][][]byte{}}
	if d.storage == "" {
		return smp
	}
	ctx, cancel := d.step("the API server: list "+d.crd.Spec.Names.Plural+" through "+d.storage+" (sample objects)", min(10*time.Second, d.o.Timeout/4))
	defer cancel()
	list, err := d.c.Dynamic.Resource(d.gvr(d.storage)).List(ctx, metav1.ListOptions{Limit: d.o.Samples})
	switch {
	case err != nil:
		smp.note = "objects generated from the schemas (the cluster's could not be read: " + firstLine(err.Error()) + ")"
	case len(list.Items) == 0:
		smp.note = "objects generated from the schemas (none exist)"
	default:
		for _, it := range list.Items {
			if b, err := json.Marshal(it.Object); err == nil {
				smp.byVersion[d.storage] = append(smp.byVersion[d.storage], b)
			}
		}
		smp.fromCluster = true
		smp.note = plural(len(smp.byVersion[d.storage]), "object") + " read from the cluster"
	}
	return smp
}

// generated returns n sample objects of version v made from its schema,
// or minimal objects when the schema gives none.
func (d *diagnosis) generated(v string, n int) [][]byte {
	if d.sc != nil {
		if ver := d.sc.Version(v); ver != nil && ver.Structural != nil {
			if objs, err := webhook.Samples(d.sc, ver, n); err == nil && len(objs) > 0 {
				return objs
			}
		}
	}
	var out [][]byte
	for i := range n {
		obj := map[string]any{"apiVersion": d.crd.Spec.Group + "/" + v, "kind": d.crd.Spec.Names.Kind,
			"metadata": map[string]any{"name": fmt.Sprintf("hubspoke-doctor-%d", i), "uid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}}
		if d.crd.Spec.Scope != "Cluster" {
			obj["metadata"].(map[string]any)["namespace"] = "default"
		}
		b, _ := json.Marshal(obj)
		out = append(out, b)
	}
	return out
}

// review is one ConversionReview sent to an endpoint.
type review struct {
	from, to string
	objects  int
	took     time.Duration
	timedOut bool
	status   int
	err      error  // the request failed (transport)
	fault    string // what is wrong with the answer; "" when right
	refused  bool   // result.status Failure with the webhook's message
	out      [][]byte
}

func (rv review) String() string {
	return fmt.Sprintf("%s->%s (%s)", rv.from, rv.to, plural(rv.objects, "object"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (rv review) ok() bool { return rv.err == nil && !rv.timedOut && rv.fault == "" }

// pairs are the conversions the API server makes for this CRD: from the
// storage version to each other served version (reads) and back
// (writes), and from each other version in status.storedVersions
// (objects not migrated yet) to the served ones.
func (d *diagnosis) pairs() (first, then [][2]string) {
	seen := map[[2]string]bool{}
	addTo := func(list *[][2]string, from, to string) {
		p := [2]string{from, to}
		if from != to && !seen[p] {
			seen[p] = true
			*list = append(*list, p)
		}
	}
	for _, v := range d.served {
		addTo(&first, d.storage, v)
	}
	for _, v := range d.served {
		addTo(&then, v, d.storage)
	}
	for _, old := range d.crd.Status.StoredVersions {
		if old == d.storage {
			continue
		}
		for _, v := range append(slices.Clone(d.served), d.storage) {
			addTo(&then, old, v)
		}
	}
	return first, then
}

// reviewEndpoint sends the API server's reviews to one endpoint (one
// object and a batch, for every pair of versions), checks each answer as
// the API server does (package apirules) and times it: the
// conversion.direct and conversion.latency findings.
func (d *diagnosis) reviewEndpoint(ep *Endpoint, certOK bool, smp samples) (direct, latency Finding) {
	direct = Finding{Check: CheckDirect}
	latency = Finding{Check: CheckLatency}
	first, then := d.pairs()
	if len(first)+len(then) == 0 {
		direct.Severity, direct.Message = SeveritySkipped, "one version: the API server converts nothing"
		latency.Severity, latency.Message = SeveritySkipped, "no review to time"
		return direct, latency
	}
	tlsConfig := &tls.Config{ServerName: d.host, RootCAs: d.caPool, MinVersion: tls.VersionTLS12}
	note := ""
	if !certOK {
		tlsConfig.InsecureSkipVerify = true //nolint:gosec // the certificate's faults are reported by the certificate checks; check the conversions regardless
		note = " (certificate not verified: see the certificate checks)"
	}
	addr := ep.Address
	transport := &http.Transport{TLSClientConfig: tlsConfig, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.dial(ctx, network, addr)
	}, TLSHandshakeTimeout: d.o.DialTimeout}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	target := d.url
	if target == "" {
		target = "https://" + net.JoinHostPort(d.host, fmt.Sprint(d.port)) + d.path
	}
	if u, err := url.Parse(target); err == nil {
		q := u.Query()
		q.Set("timeout", "30s") // as the API server sends it
		u.RawQuery = q.Encode()
		target = u.String()
	}

	objectsOf := map[string][][]byte{}
	source := smp.note
	for v, objs := range smp.byVersion {
		objectsOf[v] = objs
	}
	var mu sync.Mutex
	var reviews []review
	run := func(pairs [][2]string) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for _, p := range pairs {
			mu.Lock()
			objs := objectsOf[p[0]]
			mu.Unlock()
			if len(objs) == 0 {
				objs = d.generated(p[0], int(d.o.Samples))
			}
			if len(objs) == 0 {
				continue
			}
			batches := [][][]byte{objs[:1]}
			if len(objs) > 1 {
				batches = append(batches, objs)
			}
			for _, batch := range batches {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					rv := d.sendReview(client, target, p[0], p[1], batch)
					mu.Lock()
					reviews = append(reviews, rv)
					// Objects the webhook converted to a version are what
					// clients send at that version: the next phase
					// converts them back.
					if rv.ok() && len(rv.out) > len(objectsOf[p[1]]) && p[0] == d.storage {
						objectsOf[p[1]] = rv.out
					}
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
	}
	if d.o.Progress != nil {
		d.o.Progress("ConversionReviews at " + ep.String())
	}
	run(first)
	run(then)
	sort.SliceStable(reviews, func(i, j int) bool {
		if reviews[i].from != reviews[j].from {
			return reviews[i].from < reviews[j].from
		}
		if reviews[i].to != reviews[j].to {
			return reviews[i].to < reviews[j].to
		}
		return reviews[i].objects < reviews[j].objects
	})
	if len(reviews) == 0 {
		direct.Severity, direct.Message = SeveritySkipped, "no object to send: none could be read or generated from the schemas"
		latency.Severity, latency.Message = SeveritySkipped, "no review to time"
		return direct, latency
	}
	direct = d.directFinding(reviews, note, source)
	latency = d.latencyFinding(reviews)
	return direct, latency
}

// sendReview posts one review and judges the answer as the API server
// does.
func (d *diagnosis) sendReview(client *http.Client, target, from, to string, objs [][]byte) review {
	rv := review{from: from, to: to, objects: len(objs)}
	req := apirules.Request{APIVersion: "apiextensions.k8s.io/" + d.review, UID: newUID(), DesiredAPIVersion: d.crd.Spec.Group + "/" + to, Objects: objs}
	raw := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		raw[i] = o
	}
	body, err := json.Marshal(map[string]any{"apiVersion": req.APIVersion, "kind": "ConversionReview",
		"request": map[string]any{"uid": req.UID, "desiredAPIVersion": req.DesiredAPIVersion, "objects": raw}})
	if err != nil {
		rv.err = err
		return rv
	}
	ctx, cancel := context.WithTimeout(d.ctx, d.o.ReviewTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		rv.err = err
		return rv
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, */*")
	start := time.Now()
	resp, err := client.Do(hreq)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		rv.status = resp.StatusCode
	}
	rv.took = time.Since(start)
	if err != nil {
		if ctx.Err() != nil && d.ctx.Err() == nil {
			rv.timedOut = true
		}
		rv.err = err
		return rv
	}
	if rv.status != http.StatusOK {
		rv.fault = fmt.Sprintf("HTTP %d: %s", rv.status, strings.TrimSpace(truncate(string(answer), 200)))
		return rv
	}
	out, err := apirules.Response(req, answer)
	if err != nil {
		rv.fault = err.Error()
		rv.refused = strings.HasPrefix(rv.fault, "the conversion failed: ")
		return rv
	}
	rv.out = make([][]byte, len(out))
	for i, o := range out {
		rv.out[i] = bytes.Clone(o)
	}
	return rv
}

// directFinding judges an endpoint's reviews: conversion.direct.
func (d *diagnosis) directFinding(reviews []review, note, source string) Finding {
	f := Finding{Check: CheckDirect}
	var failed, timedOut []review
	var pairs []string
	for _, rv := range reviews {
		p := rv.from + "->" + rv.to
		if !slices.Contains(pairs, p) {
			pairs = append(pairs, p)
		}
		switch {
		case rv.timedOut:
			timedOut = append(timedOut, rv)
		case !rv.ok():
			failed = append(failed, rv)
		}
	}
	if len(failed) == 0 {
		if len(timedOut) == len(reviews) {
			f.Severity, f.Message = SeveritySkipped, fmt.Sprintf("no review was answered within %s: see conversion.latency", d.o.ReviewTimeout)
			return f
		}
		f.Severity = SeverityOK
		f.Message = fmt.Sprintf("%d reviews (%s, one object and a batch; %s) answered as the API server requires: uid, count, order, apiVersion, kind, name, namespace, uid of each object%s",
			len(reviews)-len(timedOut), strings.Join(pairs, ", "), source, note)
		return f
	}
	var lines []string
	for _, rv := range failed {
		what := rv.fault
		if rv.err != nil {
			what = rv.err.Error()
		}
		lines = append(lines, rv.String()+": "+what)
	}
	f.Severity = SeverityError
	lines = dedupeLines(lines)
	if len(lines) > 3 {
		lines = append(lines[:3], fmt.Sprintf("and %d more", len(lines)-3))
	}
	f.Message = fmt.Sprintf("%d of %d reviews failed%s: %s", len(failed), len(reviews), note, strings.Join(lines, "; "))
	first := failed[0]
	switch {
	case first.err != nil:
		f.Explanation = explained(first.err.Error())
		f.Cause = "the review could not be sent or no answer came back: " + firstLine(first.err.Error())
		if f.Explanation != nil {
			f.Cause, f.Fix = f.Explanation.Cause, firstFix(f.Explanation)
		}
	case first.status == http.StatusNotFound:
		f.Cause = fmt.Sprintf("the webhook answers HTTP 404 at %s: clientConfig names a path the webhook does not serve, so the API server fails every conversion (the server could not find the requested resource)", orDefault(d.path, hostPath(d.url)))
		f.Fix = d.patch("/spec/conversion/webhook/clientConfig/service/path", `"/convert"`) + "   # the path of the webhook's conversion handler"
		if d.url != "" {
			f.Fix = d.patch("/spec/conversion/webhook/clientConfig/url", `"https://HOST:PORT/convert"`) + "   # the path of the webhook's conversion handler"
		}
	case first.status == http.StatusBadRequest || first.status == http.StatusUnsupportedMediaType || first.status == http.StatusUnprocessableEntity:
		f.Cause = fmt.Sprintf("the webhook could not read the apiextensions.k8s.io/%s ConversionReview the API server sends (HTTP %d)", d.review, first.status)
		f.Fix = "read the webhook's log for the request; it must decode the review version the API server sends (the first of conversionReviewVersions it supports)"
	case first.status >= 500:
		f.Cause = fmt.Sprintf("the webhook failed while converting and answered HTTP %d instead of a ConversionReview: the API server fails the request (an error on the server ... has prevented the request from succeeding)", first.status)
		f.Fix = "read the webhook's log; return conversion errors as result.status Failure with a message, not as HTTP errors"
	case first.status != 0 && first.status != http.StatusOK:
		f.Cause = fmt.Sprintf("the webhook's address answers HTTP %d and no ConversionReview: another handler, or a proxy, answers there", first.status)
		f.Fix = "point clientConfig at the conversion handler, which must accept POST with Content-Type application/json from a client without credentials"
	case first.refused:
		if one := oneWay(reviews, failed); one != "" {
			f.Cause = one
			f.Fix = "make the webhook convert in both directions between every pair of served versions (the API server converts to the requested version on reads and to the storage version on writes); hubspoke's rules derive each inverse"
		} else {
			f.Cause = "the webhook refuses these conversions with its own message (result.status Failure); the API server fails the requests with it"
			f.Fix = "read the webhook's log; `hubspoke check --crd crd.yaml --webhook URL` sends reviews in every direction and names the pair that fails"
		}
	default:
		f.Cause = "the webhook's answers break the ConversionReview protocol the API server enforces: it refuses them (" + firstLine(first.fault) + ")"
		f.Fix = "fix the webhook; `hubspoke check --crd crd.yaml --webhook URL` reproduces these reviews"
	}
	return f
}

// oneWay says "converts in one direction only" when every failed review
// has the same target version and a review from that version succeeded.
func oneWay(all, failed []review) string {
	to := failed[0].to
	var froms []string
	for _, rv := range failed {
		if rv.to != to || !rv.refused {
			return ""
		}
		froms = append(froms, rv.from)
	}
	back := slices.ContainsFunc(all, func(rv review) bool { return rv.from == to && rv.ok() })
	if !back {
		return ""
	}
	sort.Strings(froms)
	froms = slices.Compact(froms)
	return fmt.Sprintf("the webhook converts in one direction only: conversions to %s (from %s) are refused while conversions from %s succeed; reads through %s and writes of objects stored at %s fail", to, strings.Join(froms, ", "), to, to, strings.Join(froms, ", "))
}

// latencyFinding times an endpoint's reviews: conversion.latency.
func (d *diagnosis) latencyFinding(reviews []review) Finding {
	f := Finding{Check: CheckLatency}
	var took []time.Duration
	var slowest review
	var timedOut []review
	for _, rv := range reviews {
		if rv.timedOut {
			timedOut = append(timedOut, rv)
			continue
		}
		if rv.err != nil {
			continue
		}
		took = append(took, rv.took)
		if rv.took > slowest.took {
			slowest = rv
		}
	}
	if len(timedOut) > 0 {
		var which []string
		for _, rv := range timedOut {
			which = append(which, rv.String())
		}
		f.Severity = SeverityError
		f.Message = fmt.Sprintf("%d review(s) got no answer within %s: %s", len(timedOut), d.o.ReviewTimeout, strings.Join(which, ", "))
		f.Cause = fmt.Sprintf("a review that takes %s or more is at a third of the API server's 30 s webhook timeout: under load (a LIST of many objects, the garbage collector's or a controller's resync, a rollout) requests fail with context deadline exceeded", d.o.LatencyError)
		f.Fix = "find why the webhook is slow (its logs, CPU throttling: kubectl top pod; hubspoke_conversion_duration_seconds); give it more CPU or replicas"
		return f
	}
	if len(took) == 0 {
		f.Severity, f.Message = SeveritySkipped, "no review was answered"
		return f
	}
	slices.Sort(took)
	p50, maxTook := took[len(took)/2], took[len(took)-1]
	msg := fmt.Sprintf("p50 %s, max %s over %d reviews (one object and a batch, both directions; slowest %s)", roundDur(p50), roundDur(maxTook), len(took), slowest)
	switch {
	case maxTook >= d.o.LatencyError:
		f.Severity = SeverityError
		f.Message = msg
		f.Cause = fmt.Sprintf("a review took %s, a third of the API server's 30 s webhook timeout or more: under load requests fail with context deadline exceeded", roundDur(maxTook))
		f.Fix = "find why the webhook is slow (its logs, CPU throttling: kubectl top pod); give it more CPU or replicas"
	case maxTook > d.o.LatencyWarning:
		f.Severity = SeverityWarning
		f.Message = msg
		f.Cause = fmt.Sprintf("a review took more than %s: every read and write of a converted object waits for it", d.o.LatencyWarning)
		f.Fix = "check the webhook's CPU (kubectl top pod) and its conversion code; a conversion webhook answers in milliseconds"
	default:
		f.Severity = SeverityOK
		f.Message = msg
	}
	return f
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func hostPath(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Path
	}
	return ""
}

// dedupeLines drops repeated lines, keeping the order.
func dedupeLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
