package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/schema"
)

// Protocol check names (the Check field of findings from Conformance).
const (
	CheckUID               = "protocol-uid"
	CheckResponseKind      = "protocol-response-kind"
	CheckBatch             = "protocol-batch"
	CheckSameVersion       = "protocol-same-version"
	CheckUnsupportedTarget = "protocol-unsupported-target"
	CheckMalformed         = "protocol-malformed-review"
	CheckV1beta1           = "protocol-v1beta1"
	CheckObjectRules       = "protocol-object-rules"
	CheckReachable         = "protocol-reachable"
)

// Samples returns up to n valid sample objects of version v of crd,
// generated from its schema (valid as the API server judges them: schema
// and CEL rules), with distinct names and uids.
func Samples(crd *schema.CRD, v *schema.Version, n int) ([][]byte, error) {
	objs, _, err := check.ValidObjects(crd, v, n, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(objs))
	for i, obj := range objs {
		md, _ := obj["metadata"].(map[string]any)
		md["name"] = fmt.Sprintf("sample-%d", i)
		md["namespace"] = "default"
		md["uid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Conformance checks the webhook's side of the ConversionReview protocol
// with sample objects of every version of crd.
func Conformance(ctx context.Context, c *Client, crd *schema.CRD) *check.Report {
	r := &check.Report{}
	add := func(checkName, from, to, msg string) {
		r.Add(check.Finding{Check: checkName, From: from, To: to, Message: msg})
	}
	samples := map[string][][]byte{}
	for _, v := range crd.Versions() {
		if v.Structural == nil {
			continue
		}
		s, err := Samples(crd, v, 5)
		if err != nil {
			r.Add(check.Finding{Check: check.CheckGeneratorNote, Severity: check.SeverityWarning, From: v.Name, Message: err.Error()})
			continue
		}
		samples[v.Name] = s
	}
	av := func(v string) string { return c.Group() + "/" + v }
	versions := c.Versions()

	// Batch order and count, uid echo, response kind, object rules: every
	// ordered pair of versions, three objects per review.
	for _, from := range versions {
		for _, to := range versions {
			objs := samples[from]
			if len(objs) > 3 {
				objs = objs[:3]
			}
			if from != to {
				objs = convertible(ctx, c, objs, av(to))
			}
			if len(objs) == 0 || ctx.Err() != nil {
				continue
			}
			r.Checks++
			uid := newUID()
			resp, err := c.Review(ctx, "v1", uid, av(to), objs)
			if err != nil {
				add(CheckReachable, from, to, err.Error())
				return r
			}
			if !claimsSuccess(resp) {
				if from == to {
					// The API server never sends objects already at the
					// desired version, so refusing them breaks nothing.
					r.Add(check.Finding{Check: CheckSameVersion, Severity: check.SeverityWarning, From: from, To: to,
						Message: fmt.Sprintf("objects already at the desired version are refused (%v); the API server does not send them, other clients might", resp.Err())})
					continue
				}
				add(CheckBatch, from, to, fmt.Sprintf("a review of %d valid objects failed: %v", len(objs), resp.Err()))
				continue
			}
			var verdict *apirules.ResponseError
			if errors.As(resp.Verdict, &verdict) {
				add(verdictCheck(verdict), from, to, verdict.Error()+": the API server rejects the response")
				continue
			}
			if from == to {
				for i := range objs {
					if !check.EqualJSON(objs[i], resp.Objects[i]) {
						add(CheckSameVersion, from, to, fmt.Sprintf("object %d already at %s came back changed", i, to))
						break
					}
				}
			}
		}
	}
	// A mixed batch: one object of each version.
	var mixed [][]byte
	var mixedFrom []string
	for _, v := range versions {
		if s := convertible(ctx, c, samples[v], av(c.Hub())); len(s) > 0 && v != c.Hub() {
			mixed = append(mixed, s[0])
			mixedFrom = append(mixedFrom, v)
		}
	}
	if len(mixed) > 1 && ctx.Err() == nil {
		r.Checks++
		to := c.Hub()
		resp, err := c.Review(ctx, "v1", newUID(), av(to), mixed)
		switch {
		case err != nil:
			add(CheckReachable, "", to, err.Error())
		case resp.Err() != nil:
			add(CheckBatch, strings.Join(mixedFrom, ","), to, fmt.Sprintf("a batch mixing versions failed: %v", resp.Err()))
		}
	}
	// The remaining reviews convert one spoke object to the hub (an object
	// not already at the desired version, as the API server sends).
	first := firstSample(samples, versions, c.Hub())
	if first == nil || ctx.Err() != nil {
		return r
	}
	// Unsupported target version.
	r.Checks++
	if resp, err := c.Review(ctx, "v1", newUID(), c.Group()+"/v999nope", [][]byte{first}); err != nil {
		add(CheckReachable, "", "", err.Error())
	} else if claimsSuccess(resp) {
		add(CheckUnsupportedTarget, "", "v999nope", "a review asking for an undeclared version succeeded; it must fail with result.status Failure")
	}
	// Malformed reviews must fail without taking the webhook down.
	for _, body := range []string{`{`, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"x","desiredAPIVersion":"` + av(c.Hub()) + `","objects":[{"apiVersion":1}]}}`} {
		r.Checks++
		resp, err := c.Post(ctx, []byte(body))
		switch {
		case err != nil:
			add(CheckMalformed, "", "", fmt.Sprintf("malformed review %.40q: %v", body, err))
		case resp.HTTPStatus == http.StatusOK && resp.Status == "Success":
			add(CheckMalformed, "", "", fmt.Sprintf("malformed review %.40q succeeded; it must fail", body))
		}
	}
	r.Checks++
	if resp, err := c.Review(ctx, "v1", newUID(), av(c.Hub()), [][]byte{first}); err != nil || !claimsSuccess(resp) {
		add(CheckMalformed, "", "", "the webhook stopped answering correctly after malformed reviews")
	}
	// apiextensions.k8s.io/v1beta1 reviews are answered in v1beta1.
	r.Checks++
	uid := newUID()
	if resp, err := c.Review(ctx, "v1beta1", uid, av(c.Hub()), [][]byte{first}); err != nil {
		add(CheckReachable, "", "", err.Error())
	} else {
		switch {
		case resp.Err() != nil:
			add(CheckV1beta1, "", c.Hub(), fmt.Sprintf("a v1beta1 review failed: %v", resp.Err()))
		case resp.APIVersion != "apiextensions.k8s.io/v1beta1":
			add(CheckV1beta1, "", c.Hub(), fmt.Sprintf("a v1beta1 review was answered as %q; answer in the request's version", resp.APIVersion))
		case resp.UID != uid:
			add(CheckV1beta1, "", c.Hub(), "a v1beta1 review's uid is not echoed")
		}
	}
	return r
}

// convertible returns, of objs, those the webhook says it converts to
// desired one at a time: a batch is judged on objects it converts alone,
// so that a deliberate refusal of one object is not taken for a batch
// defect.
func convertible(ctx context.Context, c *Client, objs [][]byte, desired string) [][]byte {
	var out [][]byte
	for _, o := range objs {
		if ctx.Err() != nil {
			break
		}
		if resp, err := c.Review(ctx, "v1", newUID(), desired, [][]byte{o}); err == nil && claimsSuccess(resp) {
			out = append(out, o)
		}
	}
	return out
}

func firstSample(samples map[string][][]byte, versions []string, not string) []byte {
	for _, v := range versions {
		if s := samples[v]; len(s) > 0 && v != not {
			return s[0]
		}
	}
	return nil
}

// claimsSuccess reports whether the webhook answered a review as converted
// (HTTP 200, result.status Success), whatever else the API server would
// find wrong with the answer.
func claimsSuccess(resp *Response) bool {
	return resp.HTTPStatus == http.StatusOK && resp.Status == "Success"
}

// verdictCheck is the protocol check a rule of the API server's, broken
// by a successful answer, belongs to.
func verdictCheck(v *apirules.ResponseError) string {
	switch v.Rule {
	case apirules.RuleUID:
		return CheckUID
	case apirules.RuleReviewKind, apirules.RuleJSON, apirules.RuleResponse:
		return CheckResponseKind
	}
	return CheckBatch // the count, or a converted object's rules
}
