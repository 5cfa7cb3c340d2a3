package rules

import (
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/hubspoke/hubspoke/convert"
)

var (
	celMu      sync.RWMutex
	defaultCEL convert.CELCompiler
)

// RegisterCEL sets the compiler of cel rules used when Options.CEL is nil.
// Package convert/celenv registers the Kubernetes CEL environment when it
// is linked (import _ "github.com/hubspoke/hubspoke/convert/celenv"); this
// package does not link it itself, so that programs without cel rules stay
// free of net/http.
func RegisterCEL(c convert.CELCompiler) {
	celMu.Lock()
	defaultCEL = c
	celMu.Unlock()
}

func (l *loader) celCompiler() convert.CELCompiler {
	if l.opts.CEL != nil {
		return l.opts.CEL
	}
	celMu.RLock()
	defer celMu.RUnlock()
	return defaultCEL
}

// compiled hands convert.CEL the expressions the loader compiled already,
// each with its own position in the file.
type compiled map[string]convert.CELExpression

func (c compiled) Compile(expr string) (convert.CELExpression, error) { return c[expr], nil }

// cel builds a cel rule: toHub and fromHub are CEL expressions on self.
func (l *loader) cel(m map[string]entry, body *yaml.Node, field string, from, to convert.Path, spec *RuleSpec) error {
	c := l.celCompiler()
	if c == nil {
		return l.errf(body, field, "cel rules need a CEL environment and this program links none; link package github.com/hubspoke/hubspoke/convert/celenv (the hubspoke binaries do, unless built with -tags hubspoke_nocel)")
	}
	exprs := compiled{}
	for _, k := range []string{"toHub", "fromHub"} {
		e, ok := m[k]
		if !ok {
			return l.errf(body, field+"."+k, "missing; both directions are required, the engine cannot invert an expression")
		}
		if e.val.Kind != yaml.ScalarNode || e.val.Value == "" {
			return l.errf(e.val, field+"."+k, "want a CEL expression (a string)")
		}
		x, err := c.Compile(e.val.Value)
		if err != nil {
			return l.errf(e.val, field+"."+k, "%v", err)
		}
		exprs[e.val.Value] = x
		spec.Params[k] = e.val.Value
	}
	otherwise := l.scalar(m, "otherwise")
	spec.Params["otherwise"] = otherwise
	r, err := convert.CEL(exprs, convert.CELSpec{
		From: from, To: to,
		ToHub: m["toHub"].val.Value, FromHub: m["fromHub"].val.Value,
		Otherwise: otherwise,
	})
	if err != nil {
		n := body
		if e, ok := m["otherwise"]; ok {
			n = e.val
		}
		return l.errf(n, field, "%v", err)
	}
	spec.Rule = r
	return nil
}
