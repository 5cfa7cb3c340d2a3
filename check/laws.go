package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

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
	// ShrinkTime bounds the search for a minimal counterexample per failing
	// law (default 5s).
	ShrinkTime time.Duration
	// Laws restricts the run to these laws (the Law* names); empty: all.
	Laws []string
	// Logger receives progress at debug level (nil: silent).
	Logger *slog.Logger

	// measure makes every law run all its objects, ignoring violations
	// (for the benchmarks: a failing law otherwise stops early).
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
//   - determinism: converting the same object twice gives the same bytes;
//   - valid-output: every output validates against the target version's
//     schema, keeps kind, name, namespace and uid and carries the target
//     apiVersion;
//   - convertible: a valid object converts without error.
//
// Equality is semantic: key order never matters, list order matters unless
// the schema says set or map. Each failing law yields one finding with a
// minimal counterexample (shrunk by rapid) and the JSON pointer of the
// first difference.
func Laws(ctx context.Context, crd *schema.CRD, conv Converter, opts Options) *Report {
	r := &Report{}
	if opts.Seed == 0 {
		// One seed for the whole run: every law sees the same objects of a
		// version (so validation results are shared), and the seed in the
		// report reproduces the run.
		opts.Seed = rand.Uint64()>>1 + 1
	}
	r.Seed = opts.Seed
	e := &lawEnv{crd: crd, conv: conv, group: conv.Group(), hub: conv.Hub(), opts: opts, gens: map[string]*Generator{}, valid: map[string][]schema.Problem{}}
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
	var spokes []string
	for _, v := range e.versions {
		if v != e.hub {
			spokes = append(spokes, v)
		}
	}
	type job struct {
		law, from, to string
		prop          func(data []byte) *Finding
	}
	var jobs []job
	for _, s := range spokes {
		jobs = append(jobs, job{LawSpokeRoundTrip, s, e.hub, e.roundTrip(s, e.hub, LawSpokeRoundTrip)})
	}
	for _, s := range spokes {
		jobs = append(jobs, job{LawHubRoundTrip, e.hub, s, e.roundTrip(e.hub, s, LawHubRoundTrip)})
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
	seen := map[string]bool{}
	for _, j := range jobs {
		if !opts.wants(j.law) {
			continue
		}
		if ctx.Err() != nil {
			r.Add(Finding{Check: j.law, Severity: SeverityWarning, From: j.from, To: j.to, Message: fmt.Sprintf("not run: %v", ctx.Err())})
			continue
		}
		start := time.Now()
		f, warns := e.run(ctx, j.from, j.prop)
		r.Laws++
		r.Objects += opts.objects()
		log.Debug("law", "law", j.law, "from", j.from, "to", j.to, "failed", f != nil, "took", time.Since(start))
		if f != nil {
			warns = append([]*Finding{f}, warns...)
		}
		for _, f := range warns {
			if f.Check == "" {
				f.Check = j.law
			}
			if f.From == "" {
				f.From, f.To = j.from, j.to
			}
			key := f.Check + "\x00" + f.From + "\x00" + f.To + "\x00" + genericPointer(f.Path)
			if seen[key] {
				continue
			}
			seen[key] = true
			r.Add(*f)
		}
	}
	return r
}

type lawEnv struct {
	crd      *schema.CRD
	conv     Converter
	group    string
	hub      string
	opts     Options
	versions []string
	gens     map[string]*Generator

	mu    sync.Mutex
	valid map[string][]schema.Problem // version + "\x00" + JSON -> problems
}

// validate validates the JSON of an object against version v, remembering
// the result (the same objects recur across laws).
func (e *lawEnv) validate(v *schema.Version, data []byte, obj func() map[string]any) []schema.Problem {
	key := v.Name + "\x00" + string(data)
	e.mu.Lock()
	p, ok := e.valid[key]
	e.mu.Unlock()
	if ok {
		return p
	}
	p = v.Validate(obj())
	e.mu.Lock()
	if len(e.valid) > 200000 {
		clear(e.valid)
	}
	e.valid[key] = p
	e.mu.Unlock()
	return p
}

func (e *lawEnv) av(v string) string { return e.group + "/" + v }

// step converts data to version to and checks the output; a non-nil
// finding is a violation.
func (e *lawEnv) step(data []byte, in any, from, to string) ([]byte, any, *Finding) {
	out, err := e.conv.Convert(nil, data, e.av(to))
	if err != nil {
		f := &Finding{Check: LawConvertible, From: from, To: to, Message: fmt.Sprintf("a valid %s object fails to convert to %s: %v", from, to, err)}
		var ce *convert.Error
		if errors.As(err, &ce) {
			f.Path = ce.Pointer
			// A cel rule whose expressions do not invert each other on a
			// valid value is a defect of the rules, not a refusal.
			if ce.Rule != "" && !errors.Is(err, convert.ErrNotInverse) {
				// A rule refused the value on purpose (round: reject,
				// duplicate map keys, inexact scaling): the object cannot
				// be read in that version, but nothing is lost silently.
				f.Severity = SeverityWarning
				f.Message = fmt.Sprintf("a valid %s object is refused converting to %s: %v", from, to, err)
			}
		}
		return nil, nil, f
	}
	dec, err := decodeJSON(out)
	if err != nil {
		return nil, nil, &Finding{Check: LawValidOutput, From: from, To: to, Message: fmt.Sprintf("output is not JSON: %v", err), Output: string(out)}
	}
	if f := e.validOutput(in, dec, out, from, to); f != nil {
		f.Output = dec
		return nil, nil, f
	}
	return out, dec, nil
}

// validOutput applies the API server's response rules and the target
// version's schema.
func (e *lawEnv) validOutput(in, out any, outJSON []byte, from, to string) *Finding {
	om, ok := out.(map[string]any)
	if !ok {
		return &Finding{Check: LawValidOutput, From: from, To: to, Message: "output is not a JSON object"}
	}
	im, _ := in.(map[string]any)
	bad := func(ptr, msg string) *Finding {
		return &Finding{Check: LawValidOutput, From: from, To: to, Path: ptr, Message: msg}
	}
	if om["apiVersion"] != e.av(to) {
		return bad("/apiVersion", fmt.Sprintf("apiVersion is %v, want %s", jsonStr(om["apiVersion"]), e.av(to)))
	}
	if !Equal(om["kind"], im["kind"]) {
		return bad("/kind", fmt.Sprintf("kind changed from %s to %s", jsonStr(im["kind"]), jsonStr(om["kind"])))
	}
	imd, _ := im["metadata"].(map[string]any)
	omd, _ := om["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace", "uid"} {
		if !Equal(imd[k], omd[k]) {
			return bad("/metadata/"+k, fmt.Sprintf("metadata.%s changed from %s to %s: the API server rejects the response", k, jsonStr(imd[k]), jsonStr(omd[k])))
		}
	}
	if ann, ok := omd["annotations"].(map[string]any); ok {
		size := 0
		for k, v := range ann {
			s, _ := v.(string)
			size += len(k) + len(s)
		}
		if size > 256*1024 {
			return bad("/metadata/annotations", fmt.Sprintf("annotations total %d bytes, over the API server's 256 KiB limit", size))
		}
	}
	v := e.crd.Version(to)
	if v == nil {
		return nil
	}
	if probs := e.validate(v, outJSON, func() map[string]any { return unstructured(om).(map[string]any) }); len(probs) > 0 {
		msgs := make([]string, 0, len(probs))
		for _, p := range probs {
			msgs = append(msgs, p.String())
		}
		return bad(fieldToPointer(probs[0].Path), fmt.Sprintf("output does not validate against the %s schema: %s", to, strings.Join(msgs, "; ")))
	}
	return nil
}

// fieldToPointer turns an API server field path (spec.a[0].b, or
// metadata.labels[x/y]) into a JSON pointer.
func fieldToPointer(p string) string {
	if p == "" || p == "<nil>" {
		return ""
	}
	var b strings.Builder
	i := 0
	for i < len(p) {
		switch p[i] {
		case '.':
			i++
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				j = len(p) - i
			}
			b.WriteByte('/')
			b.WriteString(escapePtr(strings.Trim(p[i+1:i+j], `"`)))
			i += j + 1
		default:
			j := strings.IndexAny(p[i:], ".[")
			if j < 0 {
				j = len(p) - i
			}
			b.WriteByte('/')
			b.WriteString(escapePtr(p[i : i+j]))
			i += j
		}
	}
	return b.String()
}

func (e *lawEnv) node(v string) *schema.Node {
	if ver := e.crd.Version(v); ver != nil {
		return ver.Structural
	}
	return nil
}

// roundTrip: from -> to -> from is the identity.
func (e *lawEnv) roundTrip(from, to, law string) func([]byte) *Finding {
	return func(data []byte) *Finding {
		in, _ := decodeJSON(data)
		mid, midDec, f := e.step(data, in, from, to)
		if f != nil {
			return f
		}
		back, backDec, f := e.step(mid, midDec, to, from)
		if f != nil {
			return f
		}
		_ = back
		if ptr, d := Diff(in, backDec, e.node(from)); d {
			return &Finding{Check: law, From: from, To: to, Path: ptr,
				Message:  fmt.Sprintf("%s -> %s -> %s is not the identity: first difference at %s", from, to, from, ptrDesc(ptr)),
				Output:   backDec,
				Expected: in}
		}
		return nil
	}
}

func ptrDesc(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// pathAgreement: a -> b directly agrees with a -> hub -> b and a -> c -> b.
func (e *lawEnv) pathAgreement(a, b string) func([]byte) *Finding {
	return func(data []byte) *Finding {
		in, _ := decodeJSON(data)
		_, direct, f := e.step(data, in, a, b)
		if f != nil {
			return f
		}
		for _, c := range e.versions {
			if c == a || c == b {
				continue
			}
			mid, midDec, f := e.step(data, in, a, c)
			if f != nil {
				return f
			}
			_, via, f := e.step(mid, midDec, c, b)
			if f != nil {
				return f
			}
			if ptr, d := Diff(direct, via, e.node(b)); d {
				return &Finding{Check: LawPathAgreement, From: a, To: b, Path: ptr,
					Message:  fmt.Sprintf("%s -> %s -> %s disagrees with %s -> %s: first difference at %s", a, c, b, a, b, ptrDesc(ptr)),
					Output:   via,
					Expected: direct}
			}
		}
		return nil
	}
}

// determinism: the same input converts to the same bytes.
func (e *lawEnv) determinism(a, b string) func([]byte) *Finding {
	return func(data []byte) *Finding {
		in, _ := decodeJSON(data)
		out1, dec1, f := e.step(data, in, a, b)
		if f != nil {
			return f
		}
		out2, err := e.conv.Convert(nil, data, e.av(b))
		if err != nil {
			return &Finding{Check: LawDeterminism, From: a, To: b, Message: fmt.Sprintf("converted once, then failed: %v", err), Output: dec1}
		}
		if !bytes.Equal(out1, out2) {
			dec2, _ := decodeJSON(out2)
			ptr, _ := Diff(dec1, dec2, e.node(b))
			return &Finding{Check: LawDeterminism, From: a, To: b, Path: ptr,
				Message:  fmt.Sprintf("two conversions of the same object differ (first difference at %s)", ptrDesc(ptr)),
				Output:   dec2,
				Expected: dec1}
		}
		return nil
	}
}

// rapid is configured through package flags: runs are serialised.
var (
	rapidMu   sync.Mutex
	rapidInit sync.Once
)

// setRapidFlags sets rapid's settings for one run and returns a function
// restoring the previous ones (other rapid users in the process, such as
// tests, keep theirs).
func setRapidFlags(checks int, seed uint64, shrink time.Duration) (restore func()) {
	rapidInit.Do(func() {
		// rapid reads its settings from the standard flag set and asks
		// testing.Short; outside "go test" both need initialising.
		if flag.Lookup("test.short") == nil {
			testing.Init()
		}
		if !flag.Parsed() {
			_ = flag.CommandLine.Parse(nil)
		}
	})
	settings := [][2]string{
		{"rapid.checks", strconv.Itoa(checks)},
		{"rapid.seed", strconv.FormatUint(seed, 10)},
		{"rapid.nofailfile", "true"},
		{"rapid.shrinktime", shrink.String()},
		{"rapid.v", "false"},
		{"rapid.log", "false"},
	}
	var old [][2]string
	for _, kv := range settings {
		if f := flag.Lookup(kv[0]); f != nil {
			old = append(old, [2]string{kv[0], f.Value.String()})
			_ = f.Value.Set(kv[1])
		}
	}
	return func() {
		for _, kv := range old {
			_ = flag.Set(kv[0], kv[1])
		}
	}
}

// run checks prop on objects of version from and returns the finding of
// the minimal counterexample, or nil.
func (e *lawEnv) run(ctx context.Context, from string, prop func([]byte) *Finding) (*Finding, []*Finding) {
	gen := e.gens[from].Object()
	ver := e.crd.Version(from)
	shrink := e.opts.ShrinkTime
	if shrink <= 0 {
		shrink = 5 * time.Second
	}
	var (
		last     *Finding
		warns    = map[string]*Finding{}
		skipWhy  = map[string]int{}
		skipMu   sync.Mutex
		tb       = &rapidTB{}
		finished = make(chan struct{})
	)
	rapidMu.Lock()
	defer rapidMu.Unlock()
	defer setRapidFlags(e.opts.objects(), e.opts.Seed, shrink)()
	go func() {
		defer close(finished)
		rapid.Check(tb, func(t *rapid.T) {
			if ctx.Err() != nil {
				return
			}
			obj := gen.Draw(t, "object")
			data, err := json.Marshal(obj)
			if err != nil {
				t.Skip("cannot encode")
			}
			if probs := e.validate(ver, data, func() map[string]any { return obj }); len(probs) > 0 {
				skipMu.Lock()
				skipWhy[probs[0].String()]++
				skipMu.Unlock()
				t.Skip("generated object is not valid")
			}
			if f := prop(data); f != nil {
				if e.opts.measure {
					return
				}
				in, _ := decodeJSON(data)
				f.Input = in
				if f.Severity == SeverityWarning {
					skipMu.Lock()
					key := f.From + "\x00" + f.To + "\x00" + f.Path
					// Keep the smallest refused object seen (warnings are
					// not shrunk, the search goes on past them).
					if w, ok := warns[key]; !ok || len(data) < w.size {
						f.size = len(data)
						warns[key] = f
					}
					skipMu.Unlock()
					t.Skip("refused by a rule")
				}
				last = f
				t.Fatalf("%s", f.Message)
			}
		})
	}()
	<-finished
	var ws []*Finding
	for _, w := range warns {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Path < ws[j].Path })
	if last != nil {
		return last, ws
	}
	if tb.failed {
		msg := strings.TrimSpace(strings.SplitN(tb.msg.String(), "\n", 2)[0])
		if len(skipWhy) > 0 && strings.Contains(msg, "valid tests") {
			var reasons []string
			for k, n := range skipWhy {
				reasons = append(reasons, fmt.Sprintf("%dx %s", n, k))
			}
			sort.Strings(reasons)
			if len(reasons) > 3 {
				reasons = reasons[:3]
			}
			return &Finding{Check: CheckGeneratorNote, Severity: SeverityWarning, From: from, Message: fmt.Sprintf("too few valid objects generated (%s); e.g. %s", msg, strings.Join(reasons, "; "))}, ws
		}
		if strings.Contains(msg, "valid tests") {
			return &Finding{Check: CheckGeneratorNote, Severity: SeverityWarning, From: from, Message: fmt.Sprintf("too few objects converted (%s): rules refuse most generated objects", msg)}, ws
		}
		return &Finding{Message: "the converter panicked or the law failed: " + msg}, ws
	}
	return nil, ws
}

// rapidTB receives rapid's verdict in place of a *testing.T.
type rapidTB struct {
	mu     sync.Mutex
	failed bool
	msg    strings.Builder
}

func (t *rapidTB) Helper()             {}
func (t *rapidTB) Name() string        { return "hubspoke-check" }
func (t *rapidTB) Logf(string, ...any) {}
func (t *rapidTB) Log(...any)          {}
func (t *rapidTB) Skipf(f string, a ...any) {
	runtime.Goexit()
}
func (t *rapidTB) Skip(...any) { runtime.Goexit() }
func (t *rapidTB) SkipNow()    { runtime.Goexit() }
func (t *rapidTB) Errorf(f string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
	if t.msg.Len() == 0 {
		fmt.Fprintf(&t.msg, f, a...)
	}
}
func (t *rapidTB) Error(a ...any) { t.Errorf("%s", fmt.Sprint(a...)) }
func (t *rapidTB) Fatalf(f string, a ...any) {
	t.Errorf(f, a...)
	runtime.Goexit()
}
func (t *rapidTB) Fatal(a ...any) { t.Fatalf("%s", fmt.Sprint(a...)) }
func (t *rapidTB) FailNow() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	runtime.Goexit()
}
func (t *rapidTB) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}
func (t *rapidTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
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
