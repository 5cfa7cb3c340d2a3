package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// A CELExpression is one compiled direction of a cel rule: a pure,
// deterministic function from the JSON value of the source field (bound to
// the variable self) to the JSON value of the destination field, with a cost
// limit. The engine hands it the raw JSON of that one field only, never the
// whole object.
//
// Package convert does not link a CEL implementation (it would pull in
// net/http through the Kubernetes CEL libraries); package convert/celenv
// provides one with the environment of x-kubernetes-validations.
type CELExpression interface {
	// Eval evaluates the expression with self bound to the JSON value
	// self and returns the result as JSON.
	Eval(self []byte) ([]byte, error)
}

// CELContext is implemented by a CELExpression that may read the object
// context: the variable object, the whole object as the rules before the
// one running left it (package convert/celenv's expressions do). The
// engine writes the object out only for an expression that reads it.
type CELContext interface {
	// UsesObject reports whether the expression reads object.
	UsesObject() bool
	// EvalContext evaluates the expression with self and object bound to
	// those JSON values (object nil when UsesObject is false).
	EvalContext(self, object []byte) ([]byte, error)
}

// CELAppender is implemented by a CELExpression that appends its result
// to a buffer and reads self and object as valid JSON without checking
// them again (package convert/celenv's expressions do). The engine hands
// over only JSON its scanner validated, and keeps the result in the
// conversion's scratch memory: an evaluation allocates no result of its
// own.
type CELAppender interface {
	// AppendEval evaluates the expression with self and object bound to
	// those JSON values (object nil when the expression does not read
	// it) and appends the result, as JSON, to dst. On an error, dst's
	// bytes up to its length are left as they were.
	AppendEval(dst, self, object []byte) ([]byte, error)
}

// AppendJSONString appends s to dst as a JSON string, as json.Marshal
// writes it (HTML-safe: <, > and & as \u003c and so on; U+2028 and U+2029
// escaped; invalid UTF-8 as \ufffd): the one spelling of every string the
// engine writes, for a CELExpression's results.
func AppendJSONString[S string | []byte](dst []byte, s S) []byte { return appendJSONString(dst, s) }

// Refusal is the error of an expression that refuses a value on purpose,
// with its own message (cel's fail("...")): the conversion fails with that
// message, as a deliberate refusal, not as an expression error.
type Refusal struct{ Message string }

func (e *Refusal) Error() string { return e.Message }

// evalCEL evaluates x with self bound to the JSON value self, and object
// to the whole object when x reads it. The result is in the conversion's
// scratch memory.
func (o *Object) evalCEL(x CELExpression, self []byte) ([]byte, error) {
	var object []byte
	cx, ok := x.(CELContext)
	if ok && cx.UsesObject() {
		object = o.objectContext()
	}
	st := o.st
	if ax, ok := x.(CELAppender); ok {
		start := len(st.scratch)
		out, err := ax.AppendEval(st.scratch, self, object)
		if err != nil {
			return nil, err
		}
		st.scratch = out
		return out[start:len(out):len(out)], nil
	}
	var out []byte
	var err error
	if object != nil {
		out, err = cx.EvalContext(self, object)
	} else {
		out, err = x.Eval(self)
	}
	if err != nil || out == nil {
		return nil, err
	}
	return st.keep(out), nil
}

// drop gives back the scratch memory of b when it is the last value
// written there (as evalCEL's result is until the next write).
func (s *state) drop(b []byte) {
	n := len(s.scratch)
	if len(b) > 0 && n >= len(b) && &s.scratch[n-1] == &b[len(b)-1] {
		s.scratch = s.scratch[:n-len(b)]
	}
}

// objectContext returns the JSON of the whole object as the rules before
// the running one left it, written once a rule step (state.ctx).
func (o *Object) objectContext() []byte {
	st := o.st
	if !st.ctxOK {
		w := o.whole()
		raw := w.rawOf(&w.root)
		st.ctx, st.ctxOK = raw[:len(raw):len(raw)], true
	}
	return st.ctx
}

// A CELCompiler compiles the expressions of cel rules. Compile errors are
// reported when the rule file loads.
type CELCompiler interface {
	Compile(expr string) (CELExpression, error)
}

// ErrNotInverse is wrapped by the error of a cel rule whose expressions do
// not carry a value there and back unchanged, under otherwise: fail. check
// reports it as a defect of the rules, with the value as counterexample.
var ErrNotInverse = errors.New("the expressions do not invert each other on this value")

// ErrNoForm is returned by a CELExpression whose result says the value has
// no form in the other version (optional.none() in CEL).
var ErrNoForm = errors.New("the value has no form in the other version")

// CELSpec is a cel rule as written.
type CELSpec struct {
	// From is the spoke field and To the hub field (the same path computes
	// the field in place).
	From, To Path
	// ToHub computes the hub value from self, the spoke value; FromHub the
	// spoke value from self, the hub value.
	ToHub, FromHub string
	// Otherwise is the policy for a value the expressions do not carry there
	// and back unchanged, or that has no form in the other version
	// (optional.none()): OtherwiseFail (the default) fails the conversion
	// naming the value; OtherwiseKeep converts it and keeps the exact value
	// in the preserved annotation (a value with no form is removed and kept),
	// restored on the way back unless the field was changed since.
	Otherwise Otherwise
}

// celRule computes a field with two CEL expressions, one for each
// direction. Both expressions run on every conversion: the inverse checks
// that the value comes back unchanged, so a value the other version cannot
// represent is never lost silently. A null value moves as null and a
// missing one stays missing, as with every value rule.
type celRule struct {
	spec           CELSpec
	from, to       Path // the paths it runs on (inside the items of spec's paths)
	keep           bool // otherwise: keep
	toHub, fromHub CELExpression
}

// CEL compiles a cel rule with c. Both expressions are required: the engine
// cannot invert an expression. Paths through lists and maps work as for
// every rule: the rule runs on every item they select.
func CEL(c CELCompiler, spec CELSpec) (Rule, error) {
	from, to, err := checkPair("cel", spec.From, spec.To)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("cel %s: no CEL compiler; link package convert/celenv (the hubspoke binaries do)", spec.From)
	}
	keep, err := checkOtherwise("cel", spec.From, spec.Otherwise)
	if err != nil {
		return nil, err
	}
	r := &celRule{spec: spec, from: from, to: to, keep: keep}
	for _, d := range []struct {
		name, src string
		dst       *CELExpression
	}{{"toHub", spec.ToHub, &r.toHub}, {"fromHub", spec.FromHub, &r.fromHub}} {
		if d.src == "" {
			return nil, fmt.Errorf("cel %s: %s: missing; both directions are required, the engine cannot invert an expression", spec.From, d.name)
		}
		x, err := c.Compile(d.src)
		if err != nil {
			return nil, fmt.Errorf("cel %s: %s: %w", spec.From, d.name, err)
		}
		*d.dst = x
	}
	return scoped(r, spec.From), nil
}

func (r *celRule) String() string {
	s := "cel " + r.spec.From.String()
	if !r.spec.From.Equal(r.spec.To) {
		s += " -> " + r.spec.To.String()
	}
	return s
}

func (r *celRule) paths() []Path { return []Path{r.from, r.to, annotationsPath} }

// ToHub computes the hub field from the spoke field.
func (r *celRule) ToHub(o *Object) error { return r.run(o, r.from, r.to, true) }

// FromHub computes the spoke field from the hub field.
func (r *celRule) FromHub(o *Object) error { return r.run(o, r.to, r.from, false) }

func (r *celRule) run(o *Object, src, dst Path, toHub bool) error {
	var ev evaluation
	done, err := r.aside(o, src, dst, toHub, &ev)
	if done || err != nil {
		return err
	}
	return move(o, r, src, dst, func(n node) (node, error) {
		return r.apply(o, n, src, dst, toHub, &ev)
	})
}

// aside handles values with no form in the other version (an expression
// returning optional.none()): under otherwise: keep such a source value is
// removed and kept in the preserved annotation, and a value the
// destination version kept earlier is restored when the source is missing
// and the destination not set since.
//
// Otherwise it sets ev to the evaluation of the source value, for apply
// (ev.done false for a null source, evaluated there).
func (r *celRule) aside(o *Object, src, dst Path, toHub bool, ev *evaluation) (bool, error) {
	kept, ok, err := o.takeField(o.to, dst)
	if err != nil {
		return true, wrapRuleErr(r, dst, err)
	}
	n, err := o.lookup(src)
	if err != nil {
		return true, wrapRuleErr(r, src, err)
	}
	if n == nil {
		if !ok {
			return true, nil
		}
		if cur, err := o.lookup(dst); err != nil || cur != nil && !o.keptWins {
			return true, wrapRuleErr(r, dst, err)
		}
		return true, wrapRuleErr(r, dst, o.set(dst, node{raw: o.st.keep(kept)}))
	}
	if ok && o.keptWins {
		// The kept value wins over the value set since.
		keep := func(node) (node, error) { return node{raw: o.st.keep(kept)}, nil }
		return true, wrapRuleErr(r, src, move(o, r, src, dst, keep))
	}
	if n.isNull() {
		return false, nil
	}
	raw := o.rawOf(n)
	// An exact value the destination version kept against this very
	// value comes back first: the value it was converted to may have no
	// form on the way back (toHub gives optional.none() for the hub's
	// false), and it must not be kept aside as a new value.
	if v, ok, err := o.takeExact(o.to, dst, raw); err != nil {
		return true, wrapRuleErr(r, dst, err)
	} else if ok {
		return true, move(o, r, src, dst, func(node) (node, error) { return node{raw: o.st.keep(v)}, nil })
	}
	fwd, name := r.toHub, "toHub"
	if !toHub {
		fwd, name = r.fromHub, "fromHub"
	}
	out, err := o.evalCEL(fwd, raw)
	if !errors.Is(err, ErrNoForm) {
		*ev = evaluation{out: out, err: err, done: true}
		return false, nil
	}
	if !r.keep {
		return true, ruleErr(r, src, "%s of %s: %v (otherwise: fail; otherwise: keep would keep it in the preserved annotation)", name, compact(raw), ErrNoForm)
	}
	if err := o.keepField(o.from, src, raw); err != nil {
		return true, wrapRuleErr(r, src, err)
	}
	if _, _, err := o.del(src); err != nil {
		return true, wrapRuleErr(r, src, err)
	}
	return true, wrapRuleErr(r, src, o.pruneEmpty(src, commonPrefixLen(src, dst)))
}

// evaluation is the result of one direction on the source value.
type evaluation struct {
	out  []byte
	err  error
	done bool
}

func (r *celRule) apply(o *Object, n node, src, dst Path, toHub bool, ev *evaluation) (node, error) {
	raw := o.rawOf(&n)
	// The destination version owns an exact value if an earlier conversion
	// out of it could not carry it.
	if v, ok, err := o.takeExact(o.to, dst, raw); err != nil {
		return node{}, wrapRuleErr(r, dst, err)
	} else if ok {
		return node{raw: o.st.keep(v)}, nil
	}
	out, exact, err := r.convert(o, raw, toHub, ev)
	if err != nil {
		return node{}, wrapRuleErr(r, src, err)
	}
	if !exact {
		if err := o.keepExact(o.from, src, raw, out); err != nil {
			return node{}, wrapRuleErr(r, src, err)
		}
	}
	return node{raw: out}, nil // in scratch memory (evalCEL)
}

// convert evaluates one direction on the JSON value self (toHub: the
// spoke value; else the hub value), or takes ev, its evaluation already
// done, and the other direction on the result. exact reports whether that
// gives self back. A value that does not come back is an error under
// otherwise: fail, whose message is the counterexample; under otherwise:
// keep it is not an error (the caller keeps self in the preserved
// annotation).
func (r *celRule) convert(o *Object, self []byte, toHub bool, ev *evaluation) (out []byte, exact bool, err error) {
	fwd, inv, fwdName, invName := r.toHub, r.fromHub, "toHub", "fromHub"
	if !toHub {
		fwd, inv, fwdName, invName = r.fromHub, r.toHub, "fromHub", "toHub"
	}
	if ev.done {
		out, err = ev.out, ev.err
	} else {
		out, err = o.evalCEL(fwd, self)
	}
	if err != nil {
		if refused := (*Refusal)(nil); errors.As(err, &refused) {
			return nil, false, fmt.Errorf("%s refuses %s: %w", fwdName, compact(self), refused)
		}
		return nil, false, fmt.Errorf("%s of %s: %w", fwdName, compact(self), err)
	}
	back, berr := o.evalCEL(inv, out)
	if berr == nil && (bytes.Equal(back, self) || jsonEqual(back, self)) {
		o.st.drop(back) // only compared
		return out, true, nil
	}
	if r.keep {
		return out, false, nil
	}
	if berr != nil {
		return nil, false, fmt.Errorf("%s turns %s into %s, and %s of that fails: %v; %w (otherwise: fail; otherwise: keep would keep it in the preserved annotation)", fwdName, compact(self), compact(out), invName, berr, ErrNotInverse)
	}
	return nil, false, fmt.Errorf("%s turns %s into %s, which %s turns into %s; %w (otherwise: fail; otherwise: keep would keep it in the preserved annotation)", fwdName, compact(self), compact(out), invName, compact(back), ErrNotInverse)
}

// compact returns JSON without insignificant whitespace, for messages,
// cut short when long.
func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(raw)
	}
	const max = 200
	if b.Len() > max {
		return string(b.Bytes()[:max]) + "…"
	}
	return b.String()
}
