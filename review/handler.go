package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// Converter converts the objects of one group and kind between versions.
// *convert.Converter satisfies it. Convert appends to dst the JSON of obj
// converted to toAPIVersion ("group/version") and returns the extended
// buffer; it must be safe for concurrent use.
type Converter interface {
	Group() string
	Kind() string
	// Versions lists the versions the converter knows; it bounds the
	// values of the version labels of the metrics.
	Versions() []string
	Convert(dst, obj []byte, toAPIVersion string) ([]byte, error)
}

// DefaultMaxRequestBytes is the default limit on a request body.
const DefaultMaxRequestBytes = 128 << 20

// DefaultMaxListedFailures is the default number of failing objects a
// failure message names.
const DefaultMaxListedFailures = 50

// Options configures a Handler.
type Options struct {
	// Converters serve the reviews, one per group and kind (required
	// unless Replaceable).
	Converters []Converter
	// Replaceable allows a Handler that starts with no converters, whose
	// converters SetConverters replaces while it serves (hubspoke serve
	// --watch-conversions). Reviews of a kind no converter serves fail,
	// naming what the Handler converts.
	Replaceable bool
	// Logger receives one record per review (level Debug on success, Warn
	// on failure, Error on a self-check failure or a panic, Info for a
	// rejected request). Object contents are never logged. Nil means
	// silent.
	Logger *slog.Logger
	// Registerer receives the handler's metrics (see the package doc).
	// Nil means no metrics.
	Registerer prometheus.Registerer
	// MaxRequestBytes limits a request body; larger requests get HTTP 413.
	// Zero means DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxListedFailures limits how many failing objects a failure message
	// names; the others are counted. Zero means DefaultMaxListedFailures.
	MaxListedFailures int
}

// Handler answers ConversionReview requests (POST, application/json). It is
// an http.Handler, safe for concurrent use; mount it at any path.
type Handler struct {
	// set is the converters; a request reads it once, so a request is
	// served by one set, whatever SetConverters does meanwhile.
	set       atomic.Pointer[converterSet]
	log       *slog.Logger
	maxBytes  int64
	maxListed int
	metrics   *metrics
	workPool  sync.Pool
}

// converterSet is the converters a Handler serves, immutable once built.
type converterSet struct {
	byKey map[string]*entry
	known string // "Widget.example.com, ..." for messages
}

// entry is one registered converter with its precomputed labels.
type entry struct {
	conv     Converter
	group    string
	kind     string
	crd      string // metric label: Kind.group
	versions []string
	// engine is conv when it is a *convert.Converter: its output is held
	// to apirules' JSON policy as it is written, and it reports the head
	// of what it wrote (ConvertHead), so the self-check need not scan it.
	engine *convert.Converter
}

func (e *entry) versionLabel(v []byte) string {
	for _, s := range e.versions {
		if s == string(v) {
			return s
		}
	}
	return "unknown"
}

// NewHandler returns a Handler serving opts.Converters. It fails when two
// converters serve the same group and kind, or when the metrics cannot be
// registered.
func NewHandler(opts Options) (*Handler, error) {
	if len(opts.Converters) == 0 && !opts.Replaceable {
		return nil, errors.New("review: no converters given")
	}
	h := &Handler{
		log:       opts.Logger,
		maxBytes:  opts.MaxRequestBytes,
		maxListed: opts.MaxListedFailures,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBytes <= 0 {
		h.maxBytes = DefaultMaxRequestBytes
	}
	if h.maxListed <= 0 {
		h.maxListed = DefaultMaxListedFailures
	}
	if err := h.SetConverters(opts.Converters); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	h.workPool.New = func() any { return new(work) }
	return h, nil
}

// SetConverters replaces the converters the Handler serves, at once:
// a review that has started is served by the converters it started with,
// every later one by cs. It fails, changing nothing, when two converters
// serve the same group and kind.
func (h *Handler) SetConverters(cs []Converter) error {
	set := &converterSet{byKey: make(map[string]*entry, len(cs))}
	var names []string
	for i, c := range cs {
		if c == nil {
			return fmt.Errorf("review: converter %d is nil", i)
		}
		e := &entry{conv: c, group: c.Group(), kind: c.Kind(), versions: slices.Clone(c.Versions())}
		e.engine, _ = c.(*convert.Converter)
		e.crd = e.kind + "." + e.group
		key := dispatchKey(nil, []byte(e.group), []byte(e.kind))
		if _, dup := set.byKey[string(key)]; dup {
			return fmt.Errorf("review: two converters for kind %s in group %s", e.kind, e.group)
		}
		set.byKey[string(key)] = e
		names = append(names, e.crd)
	}
	slices.Sort(names)
	set.known = strings.Join(names, ", ")
	if set.known == "" {
		set.known = "no kinds"
	}
	h.set.Store(set)
	return nil
}

func dispatchKey(dst, group, kind []byte) []byte {
	dst = append(dst, kind...)
	dst = append(dst, 0)
	return append(dst, group...)
}

// splitAPIVersion splits "group/version"; a core apiVersion has no group.
func splitAPIVersion(av []byte) (group, version []byte) {
	if i := bytes.LastIndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return nil, av
}

// work is the per-request state, pooled.
type work struct {
	set    *converterSet // the converters of this request
	body   []byte
	out    []byte
	rv     review
	errs   []*convert.Error
	counts []versionCount
	// scan holds body and its stop bits for decodeLazy; outScan one
	// converted object, for selfCheck.
	scan, outScan jsonscan.Scanner
	// outHead is the head of the object the engine last converted
	// (ConvertHead), in its own memory.
	outHead apirules.Head
	// inHead and atHead are the heads of the object convertInline last
	// converted, as read and as written (ConvertAt): they point into the
	// body, so they are kept apart from outHead.
	inHead, atHead apirules.Head
}

type versionCount struct {
	e    *entry
	from string
	n    int
}

// Bounds on what a pooled request state keeps for the next request (see
// the package doc): buffers up to maxPooled bytes and the body's stop
// bits (maxPooled/8 bytes), up to maxPooledObjects object entries, the
// stop bits of converted objects of up to 1 MiB (jsonscan.MaxPooledMarks).
// Larger ones serve their request and are dropped.
const (
	maxPooled        = 16 << 20
	maxPooledObjects = 1 << 14
)

func (h *Handler) putWork(wk *work) {
	if cap(wk.body) > maxPooled {
		wk.body = nil
	}
	if cap(wk.out) > maxPooled {
		wk.out = nil
	}
	if cap(wk.rv.objects) > maxPooledObjects {
		wk.rv.objects = nil
	}
	wk.scan.TrimTo(maxPooled / 64) // the marks of a pooled body
	wk.outScan.Trim()
	// Drop references into the body; keep atHead's own memory.
	wk.inHead = apirules.Head{}
	wk.atHead = apirules.Head{APIVersion: wk.atHead.APIVersion, Kind: wk.atHead.Kind}
	wk.set = nil
	clear(wk.errs)
	wk.errs = wk.errs[:0]
	clear(wk.rv.objects) // drop references into the body
	wk.counts = wk.counts[:0]
	h.workPool.Put(wk)
}

// ServeHTTP answers one ConversionReview. Conversion failures are answered
// with HTTP 200 and result.status Failure; a body that is not a
// ConversionReview with 400, a method other than POST with 405, a body
// above the limit with 413 and a content type other than application/json
// with 415.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	written := false
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.metrics.panics.Inc()
			h.log.ErrorContext(r.Context(), "conversion handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !written {
				h.badRequest(w, http.StatusInternalServerError, "internal error: the conversion handler panicked")
			}
		}
	}()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.badRequest(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed: send a ConversionReview with POST", r.Method))
		return
	}
	if msg := checkContentType(r.Header); msg != "" {
		h.badRequest(w, http.StatusUnsupportedMediaType, msg)
		return
	}
	if r.ContentLength > h.maxBytes {
		h.badRequest(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, h.maxBytes))
		return
	}
	wk := h.workPool.Get().(*work)
	defer h.putWork(wk)
	wk.set = h.set.Load() // the converters of this whole request
	body, err := readBody(http.MaxBytesReader(w, r.Body, h.maxBytes), r.ContentLength, wk.body[:0])
	wk.body = body
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.badRequest(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", h.maxBytes))
			return
		}
		h.badRequest(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	h.metrics.requestBytes.Observe(float64(len(body)))
	// The objects are validated as they are converted (see convertInline
	// and convertReview); any problem is reported as a full validation of
	// the body finds it.
	wk.scan.Reset(body)
	if !h.convertInline(r.Context(), wk, start) {
		if err := wk.rv.decodeLazy(&wk.scan); err != nil {
			h.badRequest(w, http.StatusBadRequest, h.invalidBody(wk, err).Error())
			return
		}
		if err := h.convertReview(r.Context(), wk, start); err != nil {
			h.badRequest(w, http.StatusBadRequest, h.invalidBody(wk, err).Error())
			return
		}
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(wk.out)))
	w.WriteHeader(http.StatusOK)
	written = true
	_, _ = w.Write(wk.out)
}

// checkContentType returns why the request's content type or encoding is
// not accepted, or "".
func checkContentType(hdr http.Header) string {
	ct := hdr.Get("Content-Type")
	if ct == "" {
		return "missing Content-Type: want application/json"
	}
	if ct == "application/json" {
		// What the API server sends: no parameters to parse (parsing
		// took 5% of a one-object review).
		return checkContentEncoding(hdr)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Sprintf("invalid Content-Type %q: want application/json", ct)
	}
	if mt != "application/json" {
		return fmt.Sprintf("unsupported Content-Type %q: want application/json", mt)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Sprintf("unsupported charset %q: want utf-8", cs)
	}
	return checkContentEncoding(hdr)
}

func checkContentEncoding(hdr http.Header) string {
	if enc := hdr.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		return fmt.Sprintf("unsupported Content-Encoding %q", enc)
	}
	return ""
}

// readBody reads the whole body into buf (reusing its capacity). n is the
// declared length, -1 if unknown. Memory follows the bytes that arrive,
// not the declared length: the buffer starts at minRead and grows at most
// fourfold at a time (never past n), so a request that declares a large
// Content-Length and sends little costs little.
func readBody(r io.Reader, n int64, buf []byte) ([]byte, error) {
	if cap(buf) < minRead {
		buf = make([]byte, 0, minRead)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if n >= 0 && int64(len(buf)) >= n {
				// All the declared bytes are in: anything more is an error
				// the reader reports (or EOF).
				var one [1]byte
				m, err := r.Read(one[:])
				if m > 0 {
					return buf, errors.New("request body is longer than its Content-Length")
				}
				if err == io.EOF || err == nil {
					return buf, nil
				}
				return buf, err
			}
			size := int64(4 * cap(buf))
			if n >= 0 && size > n {
				size = n
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			if n >= 0 && int64(len(buf)) < n {
				return buf, io.ErrUnexpectedEOF
			}
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// minRead is the first buffer a request body is read into.
const minRead = 32 << 10

func (h *Handler) badRequest(w http.ResponseWriter, code int, msg string) {
	h.metrics.badRequests.WithLabelValues(strconv.Itoa(code)).Inc()
	h.log.Info("rejected conversion request", "status", code, "reason", msg)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

// invalidBody returns the error decode finds in wk.body, or err if it
// finds none.
func (h *Handler) invalidBody(wk *work, err error) error {
	if full := wk.rv.decode(wk.body); full != nil {
		return full
	}
	return err
}

// errInvalidObject says that an object of the review is not valid JSON;
// invalidBody replaces it with decode's exact message.
var errInvalidObject = &RequestError{msg: "request body is not valid JSON: an object is not valid JSON", syntax: true}

// validObject validates an object that no *convert.Converter converted
// (decodeLazy skipped its inside), as decode would.
func validObject(o *object) bool {
	var s jsonscan.Scanner
	s.Reset(o.raw)
	return s.Document(apirules.EnvelopeDepth) == nil
}

// responseBuffer returns wk.out emptied, with room for a response to
// wk.body: converted objects are about the size of the originals.
func (wk *work) responseBuffer() []byte {
	if need := len(wk.body) + len(wk.body)/32 + 1024; cap(wk.out) < need {
		wk.out = make([]byte, 0, need)
	}
	return wk.out[:0]
}

// convertInline is a review's fast path, for the common case: a review in
// the API server's field order (apiVersion and request.uid and
// request.desiredAPIVersion before request.objects) whose objects all go
// to a *convert.Converter and all convert and pass the self-check. Each
// object is converted where it lies in the body as the envelope decoder
// reaches it (convert's ConvertAt): the engine validates its bytes, finds
// its end and reports its head as read and as written in that one pass,
// so no byte of an object is read by a second pass; the self-check
// compares the two heads (apirules.CheckHead), and the converted object is
// appended straight to the response. Dispatch reads apiVersion and kind
// when they lead the object (as in the API server's encoding), and checks
// them against the engine's head afterwards.
//
// Anything else (another order, another converter, an error, a failed
// self-check, a panic) makes it give up and report false, having recorded
// nothing: the review then takes the general path (decodeLazy,
// convertReview), which converts it again and reports exactly what is
// wrong. A failing review thus costs up to twice a successful one.
func (h *Handler) convertInline(ctx context.Context, wk *work, start time.Time) bool {
	if wk.set == nil {
		wk.set = h.set.Load()
	}
	rv := &wk.rv
	out := wk.responseBuffer()
	wk.counts = wk.counts[:0]
	n := 0
	var last *entry
	var lastKey []byte
	var keyBuf [128]byte
	var desired string // rv.desired, made a string once per review
	inline := func(s *jsonscan.Scanner, v int) (int, bool) {
		if n == 0 {
			if rv.apiVersion == "" || rv.uidRaw == nil || rv.desired == nil {
				return v, false
			}
			desired = string(rv.desired)
			out = appendHead(out, rv)
			out = append(out, `,"convertedObjects":[`...)
		} else {
			out = append(out, ',')
		}
		av, kind, ok := leadingHead(s, v)
		if !ok {
			// Read the head as decodeLazy does.
			wk.inHead = apirules.Head{}
			if _, err := apirules.ScanHead(s, v, apirules.EnvelopeDepth+1, &wk.inHead, true); err != nil {
				return v, false
			}
			av, kind = wk.inHead.APIVersion, wk.inHead.Kind
			if av == nil || kind == nil {
				return v, false
			}
		}
		group, version := splitAPIVersion(av)
		e := last
		if key := dispatchKey(keyBuf[:0], group, kind); e == nil || !bytes.Equal(key, lastKey) {
			if e = wk.set.byKey[string(key)]; e == nil || e.engine == nil {
				return v, false
			}
			last, lastKey = e, append(lastKey[:0], key...)
		}
		mark := len(out)
		res, end, err := h.convertAt(e, out, s, v, desired, &wk.inHead, &wk.atHead)
		if err != nil {
			return v, false
		}
		res = withMetadata(res, mark, &wk.inHead, &wk.atHead)
		if !bytes.Equal(wk.inHead.APIVersion, av) || !bytes.Equal(wk.inHead.Kind, kind) ||
			apirules.CheckHead(&wk.inHead, &wk.atHead, rv.desired) != nil {
			return v, false
		}
		out = res
		wk.count(e, version)
		n++
		return end, true
	}
	if err := rv.decodeInline(&wk.scan, inline); err != nil {
		wk.counts = wk.counts[:0]
		wk.out = out[:0]
		return false
	}
	if n == 0 {
		out = appendHead(out[:0], rv)
		out = append(out, `,"convertedObjects":[`...)
	}
	wk.errs = wk.errs[:0]
	h.finish(ctx, wk, out, n, false, start)
	return true
}

// convertAt converts with e's engine the object at s.Data[v] (see
// convert's ConvertAt); a panic is an error, which the general path
// reports.
func (h *Handler) convertAt(e *entry, dst []byte, s *jsonscan.Scanner, v int, desired string, in, out *apirules.Head) (res []byte, end int, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, end, err = dst, v, errPanicked
		}
	}()
	return e.engine.ConvertAt(dst, s, v, desired, in, out)
}

var errPanicked = errors.New("the converter panicked")

// leadingHead returns the apiVersion and kind of the object whose opening
// brace is at s.Data[v] when they are its first two members, in either
// order, as strings without escapes; ok is false
// otherwise. It reads nothing else: the converter validates the object.
func leadingHead(s *jsonscan.Scanner, v int) (av, kind []byte, ok bool) {
	d := s.Data
	i := v
	for k := 0; k < 2; k++ {
		i = skipSpace(d, i+1) // after '{' or ','
		if i >= len(d) || d[i] != '"' {
			return nil, nil, false
		}
		j, escaped, err := s.String(i)
		if err != nil || escaped {
			return nil, nil, false
		}
		key := d[i+1 : j-1]
		i = skipSpace(d, j)
		if i >= len(d) || d[i] != ':' {
			return nil, nil, false
		}
		i = skipSpace(d, i+1)
		if i >= len(d) || d[i] != '"' {
			return nil, nil, false
		}
		j, escaped, err = s.String(i)
		if err != nil || escaped {
			return nil, nil, false
		}
		val := d[i+1 : j-1 : j-1]
		switch {
		case string(key) == "apiVersion" && av == nil:
			av = val
		case string(key) == "kind" && kind == nil:
			kind = val
		default:
			return nil, nil, false
		}
		if i = skipSpace(d, j); i >= len(d) || d[i] != ',' {
			return nil, nil, false
		}
	}
	return av, kind, true
}

// convertReview converts every object of wk.rv into wk.out as a complete
// ConversionReview response. It returns errInvalidObject, and writes
// nothing, if an object turns out not to be valid JSON.
func (h *Handler) convertReview(ctx context.Context, wk *work, start time.Time) error {
	if wk.set == nil {
		wk.set = h.set.Load()
	}
	rv := &wk.rv
	out := appendHead(wk.responseBuffer(), rv)
	out = append(out, `,"convertedObjects":[`...)
	desired := string(rv.desired)
	errs := wk.errs[:0]
	selfCheckFailed := false
	var last *entry
	var lastKey []byte
	var keyBuf [128]byte
	for i := range rv.objects {
		o := &rv.objects[i]
		group, version := splitAPIVersion(o.APIVersion)
		var e *entry
		var dispatchErr error
		switch {
		case o.APIVersion == nil:
			dispatchErr = errors.New("the object has no apiVersion string")
		case o.Kind == nil:
			dispatchErr = errors.New("the object has no kind string")
		default:
			key := dispatchKey(keyBuf[:0], group, o.Kind)
			if last != nil && bytes.Equal(key, lastKey) {
				e = last
			} else if e = wk.set.byKey[string(key)]; e != nil {
				last, lastKey = e, append(lastKey[:0], key...)
			} else {
				dispatchErr = fmt.Errorf("no converter for kind %s in group %s: this webhook converts %s", o.Kind, group, wk.set.known)
			}
		}
		if dispatchErr != nil {
			// No converter saw the object, so none validated it.
			if !validObject(o) {
				return errInvalidObject
			}
			errs = append(errs, objectError(i, o, desired, dispatchErr))
			continue
		}
		wk.count(e, version)
		if i > 0 {
			out = append(out, ',')
		}
		mark := len(out)
		res, err := h.convertOne(ctx, e, out, o.raw, desired, &wk.outHead)
		// A *convert.Converter validates the whole object (with
		// internal/jsonscan, as decode would: grammar, UTF-8, numbers,
		// nesting) before it converts it.
		if !(err == nil && e.engine != nil) && !validObject(o) {
			out = out[:mark]
			return errInvalidObject
		}
		if err != nil {
			errs = append(errs, conversionError(i, o, desired, err))
			out = out[:mark]
			continue
		}
		out = res
		if len(errs) > 0 {
			out = out[:mark] // the review fails anyway; keep converting to name every failure
			continue
		}
		// The self-check: the engine reports the head of what it wrote;
		// any other converter's output is read whole.
		if e.engine != nil {
			out = withMetadata(out, mark, &o.Head, &wk.outHead)
			err = apirules.CheckHead(&o.Head, &wk.outHead, rv.desired)
		} else {
			out, err = selfCheck(out, mark, o, rv.desired, &wk.outScan)
		}
		if err != nil {
			selfCheckFailed = true
			h.metrics.selfCheckFailures.WithLabelValues(e.crd).Inc()
			errs = append(errs, objectError(i, o, desired, fmt.Errorf("self-check: %w", err)))
			out = out[:mark]
		}
	}
	wk.errs = errs
	h.finish(ctx, wk, out, len(rv.objects), selfCheckFailed, start)
	return nil
}

// finish records the metrics and the log of a converted review of n
// objects, whose failures are wk.errs, and completes the response in wk.out:
// out holds the head and the converted objects of a successful review.
func (h *Handler) finish(ctx context.Context, wk *work, out []byte, n int, selfCheckFailed bool, start time.Time) {
	rv, errs := &wk.rv, wk.errs
	desiredGroup, desiredVersion := splitAPIVersion(rv.desired)
	desired := string(rv.desired)
	crd, from, to := "none", "none", "unknown"
	if len(wk.counts) > 0 {
		first := wk.counts[0]
		crd, from = first.e.crd, first.from
		if string(desiredGroup) == first.e.group {
			to = first.e.versionLabel(desiredVersion)
		}
		for _, c := range wk.counts[1:] {
			if c.from != from {
				from = "mixed"
			}
			if c.e != first.e {
				crd = "mixed"
			}
		}
	} else if n > 0 {
		crd, from = "unknown", "unknown"
	}
	result := "success"
	switch {
	case selfCheckFailed:
		result = "self_check_failure"
	case len(errs) > 0:
		result = "failure"
	}
	h.metrics.reviews.WithLabelValues(crd, from, to, result).Inc()
	for _, c := range wk.counts {
		h.metrics.objects.WithLabelValues(c.e.crd, c.from, to, result).Add(float64(c.n))
	}
	if unknown := n - wk.countTotal(); unknown > 0 {
		h.metrics.objects.WithLabelValues("unknown", "unknown", to, result).Add(float64(unknown))
	}
	elapsed := time.Since(start)
	h.metrics.duration.WithLabelValues(crd).Observe(elapsed.Seconds())

	if len(errs) == 0 {
		out = append(out, `],"result":{"status":"Success"}}}`...)
		wk.out = out
		if h.log.Enabled(ctx, slog.LevelDebug) {
			h.log.DebugContext(ctx, "converted", "uid", string(rv.uid), "crd", crd, "from", from, "to", desired, "objects", n, "bytes", len(wk.body), "duration", elapsed)
		}
		return
	}
	msg := h.failureMessage(errs)
	out = appendHead(out[:0], rv)
	out = append(out, `,"result":{"status":"Failure","message":`...)
	out = appendQuoted(out, msg)
	out = append(out, `}}}`...)
	wk.out = out
	level := slog.LevelWarn
	if selfCheckFailed {
		level = slog.LevelError
	}
	if h.log.Enabled(ctx, level) {
		first := errs[0]
		h.log.Log(ctx, level, "conversion failed", "uid", string(rv.uid), "crd", crd, "from", from, "to", desired,
			"objects", n, "failed", len(errs), "selfCheck", selfCheckFailed,
			"firstIndex", first.Index, "firstObject", objectName(first), "firstPointer", first.Pointer, "firstRule", first.Rule,
			"duration", elapsed)
	}
}

func objectName(e *convert.Error) string {
	if e.Namespace != "" {
		return e.Namespace + "/" + e.Name
	}
	return e.Name
}

func (wk *work) count(e *entry, version []byte) {
	if n := len(wk.counts); n > 0 {
		c := &wk.counts[n-1]
		if c.e == e && c.from == string(version) {
			c.n++
			return
		}
	}
	from := e.versionLabel(version)
	for i := range wk.counts {
		if c := &wk.counts[i]; c.e == e && c.from == from {
			c.n++
			return
		}
	}
	wk.counts = append(wk.counts, versionCount{e: e, from: from, n: 1})
}

func (wk *work) countTotal() int {
	n := 0
	for _, c := range wk.counts {
		n += c.n
	}
	return n
}

func appendHead(out []byte, rv *review) []byte {
	out = append(out, `{"apiVersion":"`...)
	out = append(out, rv.apiVersion...)
	out = append(out, `","kind":"ConversionReview","response":{"uid":`...)
	return append(out, rv.uidRaw...)
}

// convertOne converts obj with e's converter, filling head when it is the
// engine, and turns a panic into an error.
func (h *Handler) convertOne(ctx context.Context, e *entry, dst, obj []byte, to string, head *apirules.Head) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.metrics.panics.Inc()
			h.log.ErrorContext(ctx, "converter panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out, err = dst, errors.New("internal error: the converter panicked (see the webhook's log)")
		}
	}()
	if e.engine != nil {
		return e.engine.ConvertHead(dst, obj, to, head)
	}
	return e.conv.Convert(dst, obj, to)
}

func objectError(i int, o *object, to string, err error) *convert.Error {
	e := &convert.Error{Index: i, Namespace: string(o.Namespace), Name: string(o.Name), Err: err}
	if o.APIVersion != nil {
		e.From, e.To = string(o.APIVersion), to
	}
	return e
}

func conversionError(i int, o *object, to string, err error) *convert.Error {
	var ce *convert.Error
	if errors.As(err, &ce) {
		ce.Index = i
		if ce.Name == "" && ce.Namespace == "" {
			ce.Namespace, ce.Name = string(o.Namespace), string(o.Name)
		}
		return ce
	}
	return objectError(i, o, to, err)
}

// failureMessage names every failing object, up to the configured limit.
func (h *Handler) failureMessage(errs []*convert.Error) string {
	listed := errs
	if len(listed) > h.maxListed {
		listed = listed[:h.maxListed]
	}
	msg := (&convert.BatchError{Errors: listed}).Error()
	if len(listed) == 1 && len(errs) == 1 {
		return msg
	}
	if len(listed) < len(errs) {
		msg = fmt.Sprintf("%d objects failed to convert (the first %d are named): ", len(errs), len(listed)) +
			strings.TrimPrefix(msg, fmt.Sprintf("%d objects failed to convert: ", len(listed)))
	}
	return msg
}
