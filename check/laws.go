package check

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/schema"
)

// Options tune the laws.
type Options struct {
	// Objects is the number of generated objects per law and version pair
	// (default 100).
	Objects int
	// Seed makes a run reproducible (0: random).
	Seed uint64
	// ShrinkTime bounds the search for minimal counterexamples, per law
	// and version pair (default 5s).
	ShrinkTime time.Duration
	// Laws restricts the run to these laws (the Law* names); empty: all.
	Laws []string
	// Logger receives progress at debug level (nil: silent).
	Logger *slog.Logger
	// Progress, when set, is called as each law run starts and once when
	// all are done (Done == Total), from the goroutine that called Laws.
	Progress func(LawProgress)

	// measure skips shrinking (for the benchmarks).
	measure bool
}

func (o Options) objects() int {
	if o.Objects <= 0 {
		return 100
	}
	return o.Objects
}

func (o Options) wants(law string) bool {
	if len(o.Laws) == 0 {
		return true
	}
	for _, l := range o.Laws {
		if l == law {
			return true
		}
	}
	return false
}

// Laws checks the round-trip laws of conv on objects generated from each
// version's schema in crd:
//
//   - spoke-hub-spoke: spoke -> hub -> spoke is the identity;
//   - hub-spoke-hub: hub -> spoke -> hub is the identity;
//   - path-agreement: A -> B directly, through the hub and through every
//     other version give the same object;
//   - determinism: converting the same object twice gives the same object.
//
// Every conversion step is checked on its way: the API server's rules for
// a converted object and the target schema (valid-output), a valid object
// that fails to convert (refused, a warning: the object cannot be read in
// that version, but nothing is lost silently), an object converted from A
// to B that does not convert back to A (convert-back: it becomes
// unreadable through A). What the API server changes after every
// conversion (Coerce: pruning, non-nullable nulls, defaults) is applied
// before comparing, and reported as a warning (api-server-coerced).
//
// Every object is valid: it passes the version's schema and CEL rules
// with the API server's own validators; the fraction of generated objects
// that did is in the report (Generated). Every distinct failure is
// reported (grouped by check, versions and JSON pointer, list indexes
// folded), with the number of objects that showed it and the smallest
// counterexample found, minimised.
func Laws(ctx context.Context, crd *schema.CRD, conv Converter, opts Options) *Report {
	r := &Report{}
	if opts.Seed == 0 {
		// One seed for the whole run: every law sees the same objects of a
		// version, and the seed in the report reproduces the run.
		opts.Seed = rand.Uint64()>>1 + 1
	}
	r.Seed = opts.Seed
	e := newLawEnv(crd, conv, opts)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, name := range conv.Versions() {
		v := crd.Version(name)
		if v == nil || v.Structural == nil {
			r.Add(Finding{Check: CheckGeneratorNote, Severity: SeverityWarning, From: name, Message: "no structural schema in the CRD for this version: laws skip it"})
			continue
		}
		g, err := NewGenerator(crd, v)
		if err != nil {
			r.Add(Finding{Check: CheckGeneratorNote, Severity: SeverityWarning, From: name, Message: err.Error()})
			continue
		}
		e.versions = append(e.versions, name)
		e.gens[name] = g
	}
	if e.gens[e.hub] == nil {
		return r
	}
	var jobs []job
	for _, v := range e.versions {
		if v != e.hub {
			jobs = append(jobs, job{LawSpokeRoundTrip, v, e.hub, e.roundTrip(v, e.hub, LawSpokeRoundTrip)})
		}
	}
	for _, v := range e.versions {
		if v != e.hub {
			jobs = append(jobs, job{LawHubRoundTrip, e.hub, v, e.roundTrip(e.hub, v, LawHubRoundTrip)})
		}
	}
	for _, a := range e.versions {
		for _, b := range e.versions {
			if a == b {
				continue
			}
			if len(e.versions) > 2 {
				jobs = append(jobs, job{LawPathAgreement, a, b, e.pathAgreement(a, b)})
			}
			jobs = append(jobs, job{LawDeterminism, a, b, e.determinism(a, b)})
		}
	}
	e.runJobs(ctx, r, jobs, log)
	for _, v := range e.versions {
		if s := e.samples[v]; s != nil {
			r.Generated = append(r.Generated, s.stats)
			if s.stats.Valid == 0 {
				r.Add(Finding{Check: CheckGeneratorNote, Severity: SeverityWarning, From: v, Message: fmt.Sprintf("no valid object generated (%s); laws from %s did not run", s.why(), v)})
			} else if s.stats.Valid*10 < s.stats.Generated*9 {
				r.Add(Finding{Check: CheckGeneratorNote, Severity: SeverityWarning, From: v, Message: fmt.Sprintf("only %d of %d generated objects valid; most common reasons: %s", s.stats.Valid, s.stats.Generated, s.why())})
			}
		}
	}
	return r
}

// LawProgress says where a run of the laws is: the law run starting (Law
// from From to To) and how many of Total are done.
type LawProgress struct {
	Law, From, To string
	Done, Total   int
}

// job is one law between two versions; prop returns every failure of the
// law on one object.
type job struct {
	law, from, to string
	prop          func(in *sample) []*Finding
}

type lawEnv struct {
	crd      *schema.CRD
	conv     Converter
	group    string
	hub      string
	opts     Options
	versions []string
	gens     map[string]*Generator
	vals     *validators

	mu      sync.Mutex
	samples map[string]*samples
	steps   map[string]stepResult
}

func newLawEnv(crd *schema.CRD, conv Converter, opts Options) *lawEnv {
	return &lawEnv{crd: crd, conv: conv, group: conv.Group(), hub: conv.Hub(), opts: opts,
		gens: map[string]*Generator{}, vals: &validators{}, samples: map[string]*samples{}, steps: map[string]stepResult{}}
}

func (e *lawEnv) av(v string) string { return e.group + "/" + v }

// sample is one valid generated object.
type sample struct {
	obj  map[string]any
	data []byte
}

func newSample(obj map[string]any) *sample { return &sample{obj: obj, data: mustJSON(obj)} }

// samples are the valid objects of one version, generated once per run.
type samples struct {
	list  []*sample
	stats Generated
	why_  map[string]int
}

func (s *samples) why() string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range s.why_ {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || (all[i].n == all[j].n && all[i].k < all[j].k) })
	var out []string
	for i, x := range all {
		if i == 3 {
			break
		}
		out = append(out, fmt.Sprintf("%dx %s", x.n, x.k))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// objectsOf returns the valid sample objects of version v: Objects draws
// of the generator, from seeds derived from the run's seed.
func (e *lawEnv) objectsOf(v string) *samples {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.samples[v]; ok {
		return s
	}
	s := &samples{why_: map[string]int{}, stats: Generated{Version: v}}
	ver := e.crd.Version(v)
	gen := e.gens[v].Object()
	n := e.opts.objects()
	for i := 0; i < n; i++ {
		s.stats.Generated++
		obj, err := example(gen.Example, int((e.opts.Seed+uint64(i))&(1<<62-1)))
		if err != nil {
			s.why_[err.Error()]++
			continue
		}
		if probs := e.vals.validate(ver, obj); len(probs) > 0 {
			s.why_[probs[0].String()]++
			continue
		}
		s.stats.Valid++
		s.list = append(s.list, newSample(obj))
	}
	if s.stats.Valid < s.stats.Generated {
		s.stats.Problems = s.why()
	}
	e.samples[v] = s
	return s
}

// example draws one value, turning the generator's give-up panic into an
// error.
func example[V any](f func(...int) V, seed int) (v V, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("generator gave up: %v", firstLine(fmt.Sprint(p)))
		}
	}()
	return f(seed), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// findingKey groups findings: check, severity, versions and pointer with
// list indexes and map keys folded.
func findingKey(f *Finding) string {
	g := f.group
	if g == "" {
		g = genericPointer(f.Path)
	}
	return f.Check + "\x00" + string(f.Severity) + "\x00" + f.From + "\x00" + f.To + "\x00" + g
}

// schemaPointer folds a pointer into the fields of schema n: list indexes
// become "*" and keys of maps (additionalProperties) "{}", so that one
// problem seen at many indexes or keys is one finding.
func schemaPointer(n *schema.Node, p string) string {
	if p == "" {
		return ""
	}
	cp, err := convert.ParsePointer(p)
	if err != nil {
		return genericPointer(p)
	}
	segs := cp.Segments()
	for i, seg := range segs {
		switch {
		case n == nil:
			if isItem(seg) {
				segs[i] = "*"
			}
		case n.Items != nil:
			segs[i], n = "*", n.Items
		default:
			if c, ok := n.Properties[seg]; ok {
				n = &c
			} else if n.AdditionalProperties != nil {
				segs[i], n = "{}", n.AdditionalProperties.Structural
			} else {
				n = nil
			}
		}
	}
	return pointerOf(segs)
}

// runJobs runs every job on every sample of its source version and adds
// each distinct finding once, minimised, with its count.
func (e *lawEnv) runJobs(ctx context.Context, r *Report, jobs []job, log *slog.Logger) {
	found := map[string]*Finding{}
	counted := map[string]map[string]bool{} // finding key -> objects that showed it
	var order []string
	total, done := 0, 0
	for _, j := range jobs {
		if e.opts.wants(j.law) {
			total++
		}
	}
	if e.opts.Progress != nil {
		defer func() { e.opts.Progress(LawProgress{Done: total, Total: total}) }()
	}
	for _, j := range jobs {
		if !e.opts.wants(j.law) {
			continue
		}
		if e.opts.Progress != nil {
			e.opts.Progress(LawProgress{Law: j.law, From: j.from, To: j.to, Done: done, Total: total})
		}
		done++
		if ctx.Err() != nil {
			r.Add(Finding{Check: j.law, Severity: SeverityWarning, From: j.from, To: j.to, Message: fmt.Sprintf("not run: %v", ctx.Err())})
			continue
		}
		start := time.Now()
		objs := e.objectsOf(j.from)
		r.Laws++
		var mine []string
		for _, in := range objs.list {
			if ctx.Err() != nil {
				break
			}
			r.Objects++
			inID := sha256.Sum256(in.data)
			for _, f := range e.safe(j, in) {
				k := findingKey(f)
				if f.objID == "" {
					f.objID = string(inID[:])
				}
				if counted[k] == nil {
					counted[k] = map[string]bool{}
				}
				if counted[k][f.objID] {
					continue // this object was counted for this finding already
				}
				counted[k][f.objID] = true
				if g, ok := found[k]; ok {
					g.Count++
					if len(in.data) < g.size {
						f.Count, f.size = g.Count, len(in.data)
						f.input, f.job = in, j
						if f.Input == nil {
							f.Input = in.obj
						}
						found[k] = f
					}
					continue
				}
				f.Count, f.size, f.input, f.job = 1, len(in.data), in, j
				if f.Input == nil {
					f.Input = in.obj
				}
				found[k] = f
				order = append(order, k)
				mine = append(mine, k)
			}
		}
		if !e.opts.measure {
			e.shrinkAll(ctx, found, mine)
		}
		log.Debug("law", "law", j.law, "from", j.from, "to", j.to, "objects", len(objs.list), "findings", len(mine), "took", time.Since(start))
	}
	for _, k := range order {
		f := found[k]
		f.input, f.job = nil, job{}
		r.Add(*f)
	}
}

// safe runs the property, turning a panic of the converter into a finding.
func (e *lawEnv) safe(j job, in *sample) (fs []*Finding) {
	defer func() {
		if p := recover(); p != nil {
			fs = []*Finding{{Check: j.law, Severity: SeverityError, From: j.from, To: j.to, Message: fmt.Sprintf("the conversion panicked: %v", p)}}
		}
	}()
	fs = j.prop(in)
	for _, f := range fs {
		if f.Severity == "" {
			f.Severity = SeverityError
		}
	}
	return fs
}

// stepResult is a remembered step.
type stepResult struct {
	out   *sample
	notes []*Finding
}

// step is convertStep, remembered: laws convert the same objects between
// the same versions many times (determinism converts afresh).
func (e *lawEnv) step(in *sample, from, to string) (*sample, []*Finding) {
	sum := sha256.Sum256(in.data)
	key := from + "\x00" + to + "\x00" + string(sum[:])
	e.mu.Lock()
	r, ok := e.steps[key]
	e.mu.Unlock()
	if !ok {
		r.out, r.notes = e.convertStep(in, from, to)
		e.mu.Lock()
		if len(e.steps) > 100000 {
			clear(e.steps)
		}
		e.steps[key] = r
		e.mu.Unlock()
	}
	notes := make([]*Finding, len(r.notes))
	for i, f := range r.notes {
		c := *f
		notes[i] = &c
	}
	return r.out, notes
}

// convertStep converts in to version to and checks the result: out is nil
// when the conversion failed or the output breaks the API server's rules
// (the reason is in notes). Coercion warnings and schema problems of a
// usable output come in notes too.
func (e *lawEnv) convertStep(in *sample, from, to string) (out *sample, notes []*Finding) {
	defer func() {
		id := sha256.Sum256(in.data)
		for _, f := range notes {
			f.Input = in.obj // the object this step converted
			f.objID = string(id[:])
		}
	}()
	data, err := e.conv.Convert(nil, in.data, e.av(to))
	if err != nil {
		return nil, []*Finding{refusal(err, from, to)}
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, []*Finding{{Check: LawValidOutput, From: from, To: to, Message: fmt.Sprintf("the converted object is not a JSON object: %v", err), Output: string(truncate(data, 300))}}
	}
	if err := apirules.Object(in.data, data, e.av(to)); err != nil {
		return nil, []*Finding{{Check: LawValidOutput, From: from, To: to, Message: fmt.Sprintf("the API server refuses the converted object: %v", err), Output: obj}}
	}
	got := deepCopy(obj)
	restoreMetadata(in.obj, obj)
	ver := e.crd.Version(to)
	if ver != nil {
		if err := Coerce(ver, obj); err != nil {
			return nil, []*Finding{{Check: LawValidOutput, From: from, To: to, Message: fmt.Sprintf("the API server cannot coerce the converted object: %v", err), Output: got}}
		}
		restoreMetadata(in.obj, got) // metadata is restored, never coerced
		for _, p := range Diffs(got, obj, ver.Structural) {
			notes = append(notes, &Finding{Check: CheckCoerced, Severity: SeverityWarning, From: from, To: to, Path: p, group: schemaPointer(ver.Structural, p),
				Message: fmt.Sprintf("the API server changes the converted object here (%s): it prunes unknown fields, drops nulls of non-nullable fields and applies defaults after every conversion", coercedWhat(got, obj, p)), Output: got})
		}
		for _, p := range e.vals.validate(ver, obj) {
			notes = append(notes, &Finding{Check: LawValidOutput, From: from, To: to, Path: schema.FieldPointer(p.Path),
				Message: fmt.Sprintf("the converted object does not validate against the %s schema: %s; a client that reads it through %s cannot write it back", to, p.String(), to), Output: obj})
		}
	}
	return &sample{obj: obj, data: mustJSON(obj)}, notes
}

// coercedWhat says what the API server did at pointer p.
func coercedWhat(before, after map[string]any, p string) string {
	b, okb := lookupPointer(before, p)
	a, oka := lookupPointer(after, p)
	switch {
	case okb && !oka && b == nil:
		return "drops the null"
	case okb && !oka:
		return "prunes " + abbrev(jsonStr(b))
	case !okb && oka:
		return "defaults to " + abbrev(jsonStr(a))
	case okb && b == nil:
		return "defaults the null to " + abbrev(jsonStr(a))
	}
	return fmt.Sprintf("changes %s to %s", abbrev(jsonStr(b)), abbrev(jsonStr(a)))
}

func abbrev(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// refusal grades a conversion error: a rule's deliberate refusal, or a
// webhook's clean Failure answer, is a warning; anything else (an engine
// error without a rule, a transport error, an answer that is not a
// review) is an error.
func refusal(err error, from, to string) *Finding {
	f := &Finding{Check: LawRefused, Severity: SeverityWarning, From: from, To: to,
		Message: fmt.Sprintf("a valid %s object is refused converting to %s (it cannot be read through %s): %v", from, to, to, err)}
	var ce *convert.Error
	var rf Refusal
	switch {
	case errors.As(err, &ce):
		f.Path = ce.Pointer
		// A cel rule whose expressions do not invert each other on a valid
		// value is a defect of the rules, not a refusal.
		if ce.Rule == "" || errors.Is(err, convert.ErrNotInverse) {
			f.Check, f.Severity = LawConvertible, SeverityError
			f.Message = fmt.Sprintf("a valid %s object fails to convert to %s: %v", from, to, err)
		}
	case errors.As(err, &rf) && rf.Refused():
	default:
		f.Check, f.Severity = LawConvertible, SeverityError
		f.Message = fmt.Sprintf("a valid %s object fails to convert to %s: %v", from, to, err)
	}
	return f
}

// Refusal is implemented by the errors of a Converter that can tell a
// deliberate refusal (a conversion answered with a failure and a reason)
// from a breakdown (no answer, or not a valid one). Black-box clients
// return such errors.
type Refusal interface {
	error
	Refused() bool
}

func (e *lawEnv) node(v string) *schema.Node {
	if ver := e.crd.Version(v); ver != nil {
		return ver.Structural
	}
	return nil
}

// roundTrip: from -> to -> from is the identity. Every step is checked, and
// every difference reported.
func (e *lawEnv) roundTrip(from, to, law string) func(*sample) []*Finding {
	return func(in *sample) []*Finding {
		mid, fs := e.step(in, from, to)
		if mid == nil {
			return fs
		}
		back, more := e.step(mid, to, from)
		if back == nil {
			for _, f := range more {
				if f.Check == LawRefused || f.Check == LawConvertible {
					f.Check, f.Severity = LawConvertBack, SeverityError
					f.From, f.To = from, to
					f.Message = fmt.Sprintf("a valid %s object converts to %s but not back (%s objects written through %s become unreadable through %s): %v", from, to, from, from, from, stepErr(f.Message))
					f.Input, f.Output = in.obj, mid.obj
				}
			}
			return append(fs, more...)
		}
		fs = append(fs, more...)
		for _, d := range e.differences(in.obj, back.obj, e.node(from)) {
			d.Check, d.From, d.To = law, from, to
			d.Message = fmt.Sprintf("%s -> %s -> %s is not the identity at %s: %s", from, to, from, ptrDesc(d.Path), d.Message)
			d.Output, d.Expected = back.obj, in.obj
			fs = append(fs, d)
		}
		return fs
	}
}

func stepErr(msg string) string {
	if _, after, ok := strings.Cut(msg, "): "); ok {
		return after
	}
	return msg
}

// differences lists every pointer where b differs from a (the expected
// value): an error each, but a warning where b only adds an empty object
// or drops an empty list or object (typed structs with omitempty do).
func (e *lawEnv) differences(a, b map[string]any, n *schema.Node) []*Finding {
	var out []*Finding
	for _, p := range Diffs(a, b, n) {
		av, oka := lookupPointer(a, p)
		bv, okb := lookupPointer(b, p)
		f := &Finding{Path: p, Severity: SeverityError, group: schemaPointer(n, p)}
		switch {
		case oka && !okb && emptyValue(av):
			f.Severity = SeverityWarning
			f.Message = fmt.Sprintf("an empty %s is dropped (harmless unless a client tells empty from absent)", jsonStr(av))
		case oka && !okb:
			f.Message = fmt.Sprintf("%s is lost", abbrev(jsonStr(av)))
		case !oka && okb && emptyObject(bv):
			f.Severity = SeverityWarning
			f.Message = fmt.Sprintf("an empty %s is added (harmless)", abbrev(jsonStr(bv)))
		case !oka && okb:
			f.Message = fmt.Sprintf("%s is added", abbrev(jsonStr(bv)))
		default:
			f.Message = fmt.Sprintf("%s becomes %s", abbrev(jsonStr(av)), abbrev(jsonStr(bv)))
		}
		out = append(out, f)
	}
	return out
}

// emptyValue reports whether v is an empty list, or an object holding
// nothing but empty values.
func emptyValue(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, c := range x {
			if !emptyValue(c) {
				return false
			}
		}
		return true
	}
	return false
}

func emptyObject(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, x := range m {
		if !emptyObject(x) {
			return false
		}
	}
	return true
}

func ptrDesc(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// pathAgreement: a -> b directly agrees with a -> c -> b for every other
// version c (the hub among them).
func (e *lawEnv) pathAgreement(a, b string) func(*sample) []*Finding {
	return func(in *sample) []*Finding {
		direct, fs := e.step(in, a, b)
		if direct == nil {
			return fs
		}
		for _, c := range e.versions {
			if c == a || c == b {
				continue
			}
			mid, more := e.step(in, a, c)
			fs = append(fs, more...)
			if mid == nil {
				continue
			}
			via, more := e.step(mid, c, b)
			fs = append(fs, more...)
			if via == nil {
				continue
			}
			for _, d := range e.differences(direct.obj, via.obj, e.node(b)) {
				d.Check, d.From, d.To = LawPathAgreement, a, b
				d.Message = fmt.Sprintf("%s -> %s -> %s disagrees with %s -> %s at %s: %s", a, c, b, a, b, ptrDesc(d.Path), d.Message)
				d.Output, d.Expected = via.obj, direct.obj
				fs = append(fs, d)
			}
		}
		return fs
	}
}

// determinism: the same input converts to the same object.
func (e *lawEnv) determinism(a, b string) func(*sample) []*Finding {
	return func(in *sample) []*Finding {
		out1, fs := e.step(in, a, b)
		if out1 == nil {
			return fs
		}
		out2, more := e.convertStep(in, a, b)
		if out2 == nil {
			for _, f := range more {
				f.Check, f.Severity = LawDeterminism, SeverityError
				f.Message = "converted once, then failed: " + stepErr(f.Message)
			}
			return append(fs, more...)
		}
		if bytes.Equal(out1.data, out2.data) {
			return fs
		}
		for _, p := range Diffs(out1.obj, out2.obj, e.node(b)) {
			fs = append(fs, &Finding{Check: LawDeterminism, From: a, To: b, Path: p, group: schemaPointer(e.node(b), p),
				Message: fmt.Sprintf("two conversions of the same object differ at %s", ptrDesc(p)),
				Output:  out2.obj, Expected: out1.obj})
		}
		return fs
	}
}

// genericPointer replaces list indexes in a JSON pointer by "*", so that
// one problem found at several indexes is reported once.
func genericPointer(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = "*"
		}
	}
	return strings.Join(segs, "/")
}

// ValidObjects returns up to n objects of version v of crd generated from
// its schema (from seed), each valid as the API server judges it (schema
// and CEL rules), and how many were generated to find them.
func ValidObjects(crd *schema.CRD, v *schema.Version, n int, seed uint64) ([]map[string]any, Generated, error) {
	g, err := NewGenerator(crd, v)
	if err != nil {
		return nil, Generated{Version: v.Name}, err
	}
	e := &lawEnv{crd: crd, opts: Options{Objects: n, Seed: seed}, gens: map[string]*Generator{v.Name: g}, vals: &validators{}, samples: map[string]*samples{}}
	s := e.objectsOf(v.Name)
	out := make([]map[string]any, len(s.list))
	for i, x := range s.list {
		out[i] = x.obj
	}
	if len(out) == 0 {
		return nil, s.stats, fmt.Errorf("no valid object generated for version %s (%s)", v.Name, s.why())
	}
	return out, s.stats, nil
}
