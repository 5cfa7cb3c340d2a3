package rules

import (
	"strings"
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

// buildCEL builds a cel rule: toHub and fromHub are CEL expressions on
// self, compiled here so that an error names the expression's line.
func buildCEL(b *build) error {
	if err := b.pair(); err != nil {
		return err
	}
	c := b.l.celCompiler()
	if c == nil {
		return b.l.errf(b.body, b.field, "cel rules need a CEL environment and this program links none; link package github.com/hubspoke/hubspoke/convert/celenv (the hubspoke binaries do, unless built with -tags hubspoke_nocel)")
	}
	exprs := compiled{}
	for _, k := range []string{"toHub", "fromHub"} {
		e, ok := b.m[k]
		if !ok {
			return b.errAt(k, "missing; both directions are required, the engine cannot invert an expression")
		}
		if e.val.Kind != yaml.ScalarNode || e.val.Value == "" {
			return b.errAt(k, "want a CEL expression (a string)")
		}
		x, err := c.Compile(e.val.Value)
		if err != nil {
			return b.errAt(k, "%v", err)
		}
		exprs[e.val.Value] = x
		b.spec.Params[k] = e.val.Value
	}
	otherwise := b.str("otherwise")
	b.spec.Params["otherwise"] = otherwise
	r, err := convert.CEL(exprs, convert.CELSpec{
		From: b.spec.From, To: b.spec.To,
		ToHub: b.m["toHub"].val.Value, FromHub: b.m["fromHub"].val.Value,
		Otherwise: convert.Otherwise(otherwise),
	})
	if err != nil {
		if _, ok := b.m["otherwise"]; ok && strings.Contains(err.Error(), "otherwise") {
			return b.errAt("otherwise", "%v", err)
		}
		return b.fail(err)
	}
	b.spec.Rule = r
	return nil
}
