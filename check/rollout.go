package check

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"

	"github.com/hubspoke/hubspoke/schema"
)

// Rollout checks that two conversions of crd can serve side by side, as
// the old and the new pods of a webhook do during a rolling update, when
// the API server's requests land on either at random: they must serve the
// same versions, and convert every generated object to every version with
// the same outcome (both refuse, or both give the same object once the API
// server has coerced it). Each difference is a rollout-agreement error
// with an object that shows it: Output is next's answer, Expected prev's.
func Rollout(ctx context.Context, crd *schema.CRD, next, prev Converter, opts Options) *Report {
	r := &Report{}
	if opts.Seed == 0 {
		opts.Seed = rand.Uint64()>>1 + 1
	}
	r.Seed = opts.Seed
	r.Checks++
	nv, pv := next.Versions(), prev.Versions()
	var common []string
	for _, v := range nv {
		if slices.Contains(pv, v) {
			common = append(common, v)
		} else {
			r.Add(Finding{Check: LawRollout, From: v, Message: fmt.Sprintf("version %s is served by the new conversion only: during the rollout, requests for it fail when they reach an old pod", v)})
		}
	}
	for _, v := range pv {
		if !slices.Contains(nv, v) {
			r.Add(Finding{Check: LawRollout, From: v, Message: fmt.Sprintf("version %s is served by the old conversion only: during the rollout, requests for it fail when they reach a new pod", v)})
		}
	}
	if next.Group() != prev.Group() || next.Kind() != prev.Kind() {
		r.Add(Finding{Check: LawRollout, Message: fmt.Sprintf("the conversions are for different resources: %s %s and %s %s", next.Group(), next.Kind(), prev.Group(), prev.Kind())})
		return r
	}
	e := newLawEnv(crd, next, opts)
	old := newLawEnv(crd, prev, opts)
	old.vals = e.vals
	for _, v := range common {
		if ver := crd.Version(v); ver != nil && ver.Structural != nil {
			if g, err := NewGenerator(crd, ver); err == nil {
				e.versions = append(e.versions, v)
				e.gens[v] = g
			}
		}
	}
	var jobs []job
	for _, a := range e.versions {
		for _, b := range e.versions {
			if a != b {
				jobs = append(jobs, job{LawRollout, a, b, e.agree(old, a, b)})
			}
		}
	}
	opts.Laws = nil
	e.opts = opts
	e.runJobs(ctx, r, jobs, slog.New(slog.DiscardHandler))
	for _, v := range e.versions {
		if s := e.samples[v]; s != nil {
			r.Generated = append(r.Generated, s.stats)
		}
	}
	return r
}

// agree: e's and old's conversions of the same object from a to b have
// the same outcome.
func (e *lawEnv) agree(old *lawEnv, a, b string) func(*sample) []*Finding {
	return func(in *sample) []*Finding {
		got, gotNotes := e.step(in, a, b)
		want, wantNotes := old.step(in, a, b)
		switch {
		case got == nil && want == nil:
			return nil
		case got == nil:
			return []*Finding{{Check: LawRollout, From: a, To: b, Expected: want.obj,
				Message: fmt.Sprintf("the new conversion fails where the old one succeeds: %s", stepErr(firstMessage(gotNotes)))}}
		case want == nil:
			return []*Finding{{Check: LawRollout, From: a, To: b, Output: got.obj,
				Message: fmt.Sprintf("the old conversion fails where the new one succeeds: %s", stepErr(firstMessage(wantNotes)))}}
		}
		var fs []*Finding
		for _, p := range Diffs(want.obj, got.obj, e.node(b)) {
			fs = append(fs, &Finding{Check: LawRollout, From: a, To: b, Path: p, group: schemaPointer(e.node(b), p),
				Message: fmt.Sprintf("the old and the new conversion answer differently at %s", ptrDesc(p)),
				Output:  got.obj, Expected: want.obj})
		}
		return fs
	}
}

func firstMessage(fs []*Finding) string {
	if len(fs) == 0 {
		return "no reason given"
	}
	return fs[0].Message
}
