// Package celenv compiles the expressions of hubspoke cel rules in the CEL
// environment the Kubernetes API server gives x-kubernetes-validations: the
// same base libraries (strings, lists, sets, regex, URLs, quantities, IPs,
// CIDRs, semver, format, optionals, two-variable comprehensions, cel.bind),
// the same per-call cost limit and the same estimator, at the compatibility
// version the API server uses for new expressions.
//
// Expressions see self, the value of the rule's field, and object, the
// whole object as the rules before left it (read lazily: only the members
// an expression reads are decoded); fail("message") refuses a value with
// that message (a convert.Refusal). Numbers come out as the API server
// writes them (apirules.AppendFloat).
//
// It is kept out of package convert because the Kubernetes CEL libraries
// link net/http. The hubspoke binaries link it; a program of your own that
// loads rule files with cel rules links it with
//
//	import _ "github.com/hubspoke/hubspoke/convert/celenv"
//
// or passes Compiler() in rules.Options.CEL.
package celenv

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/convert"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

func init() { rules.RegisterCEL(Compiler()) }

// PerCallLimit is the cost limit of one evaluation, the API server's limit
// for one x-kubernetes-validations rule.
const PerCallLimit = celconfig.PerCallLimit

// Self is the variable bound to the value of the rule's source field.
const Self = "self"

// lazySize is the size of a JSON object from which self is read lazily,
// member by member as the expression reads them, rather than decoded
// whole.
const lazySize = 512

// Object is the variable bound to the whole object, as the rules before
// the running one left it (without the preserved annotation): read-only
// context such as metadata.namespace or a label.
const Object = "object"

type compiler struct {
	once sync.Once
	env  *cel.Env
	err  error
}

var shared = &compiler{}

// Compiler returns the compiler of cel rules. It is safe for concurrent use.
func Compiler() convert.CELCompiler { return shared }

func (c *compiler) init() {
	c.once.Do(func() {
		base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		set, err := base.Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions: []cel.EnvOption{
				cel.Variable(Self, cel.DynType),
				cel.Variable(Object, cel.DynType),
				cel.Function("fail",
					cel.Overload("fail_string", []*cel.Type{cel.StringType}, cel.DynType,
						cel.UnaryBinding(func(msg ref.Val) ref.Val {
							s, _ := msg.(types.String)
							return types.WrapErr(&convert.Refusal{Message: string(s)})
						}))),
			},
		})
		if err != nil {
			c.err = err
			return
		}
		c.env = set.NewExpressionsEnv()
	})
}

// Compile parses and checks expr and prepares it with the API server's
// per-call cost limit.
func (c *compiler) Compile(expr string) (convert.CELExpression, error) {
	c.init()
	if c.err != nil {
		return nil, c.err
	}
	ast, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compiling %q: %w", expr, iss.Err())
	}
	prog, err := c.env.Program(ast,
		cel.CostLimit(PerCallLimit),
		cel.CostTracking(&library.CostEstimator{}),
		cel.InterruptCheckFrequency(celconfig.CheckFrequency),
	)
	if err != nil {
		return nil, fmt.Errorf("compiling %q: %w", expr, err)
	}
	x := &expression{src: expr, prog: prog}
	for _, r := range ast.NativeRep().ReferenceMap() {
		if r.Name == Object {
			x.usesObject = true
		}
	}
	return x, nil
}

type expression struct {
	src        string
	prog       cel.Program
	usesObject bool
}

// UsesObject reports whether the expression reads the variable object.
func (x *expression) UsesObject() bool { return x.usesObject }

// Eval decodes self, evaluates the expression and encodes the result.
func (x *expression) Eval(self []byte) ([]byte, error) { return x.EvalContext(self, nil) }

// EvalContext is Eval with object bound to the JSON of the whole object
// (nil: unbound); its preserved annotation is left out.
func (x *expression) EvalContext(self, object []byte) ([]byte, error) {
	var sv ref.Val
	var doc *jsonscan.Scanner
	if object != nil {
		var done func()
		doc, done = newDoc(object)
		defer done()
	}
	switch {
	case doc != nil && len(self) == len(object) && &self[0] == &object[0]:
		// self is the whole object (a when or derive of a rule without
		// selectors): read lazily, as object is.
		v, err := objectValue(doc)
		if err != nil {
			return nil, err
		}
		sv = v
	case len(self) > lazySize:
		sdoc, done := newDoc(self)
		defer done()
		v, err := valueAt(sdoc, 0, inside)
		if err != nil {
			return nil, err
		}
		sv = v
	default:
		v, err := decode(self)
		if err != nil {
			return nil, err
		}
		sv = adapter{}.NativeToValue(v)
	}
	vars := map[string]any{Self: sv}
	if doc != nil {
		ov, err := objectValue(doc)
		if err != nil {
			return nil, fmt.Errorf("object: %w", err)
		}
		vars[Object] = ov
	}
	out, det, err := x.prog.Eval(vars)
	if err != nil {
		if det != nil {
			if cost := det.ActualCost(); cost != nil && *cost > PerCallLimit {
				return nil, fmt.Errorf("%s: cost limit %d exceeded", x.src, PerCallLimit)
			}
		}
		return nil, err
	}
	b, err := encode(nil, out)
	if errors.Is(err, convert.ErrNoForm) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("result of %s: %w", x.src, err)
	}
	return b, nil
}

// Cost evaluates expr on self and returns the CEL cost of the evaluation,
// for reports and benchmarks.
func Cost(x convert.CELExpression, self []byte) (uint64, error) {
	e, ok := x.(*expression)
	if !ok {
		return 0, errors.New("not a celenv expression")
	}
	v, err := decode(self)
	if err != nil {
		return 0, err
	}
	_, det, err := e.prog.Eval(map[string]any{Self: adapter{}.NativeToValue(v)})
	if err != nil {
		return 0, err
	}
	if c := det.ActualCost(); c != nil {
		return *c, nil
	}
	return 0, nil
}

// decode reads a JSON value into the Go values CEL takes: integer literals
// become int64, other numbers float64. Scalars, the common case, are read
// without a decoder.
func decode(raw []byte) (any, error) {
	if v, ok := scalar(bytes.Trim(raw, " \t\r\n")); ok { // JSON whitespace
		return v, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("self: %w", err)
	}
	return numbers(v)
}

// scalar decodes a number, a string without escapes, a boolean or null.
func scalar(raw []byte) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	switch c := raw[0]; {
	case c == '"':
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return nil, false
		}
		inner := raw[1 : len(raw)-1]
		if bytes.ContainsAny(inner, "\\\"") || !utf8.Valid(inner) {
			return nil, false
		}
		for _, b := range inner {
			if b < 0x20 {
				return nil, false
			}
		}
		return string(inner), true
	case c == '-' || (c >= '0' && c <= '9'):
		if !json.Valid(raw) {
			return nil, false
		}
		v, err := numbers(json.Number(raw))
		return v, err == nil
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return nil, true
	}
	return nil, false
}

func numbers(v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
		}
		return strconv.ParseFloat(s, 64)
	case map[string]any:
		for k, e := range t {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
	case []any:
		for i, e := range t {
			n, err := numbers(e)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
	}
	return v, nil
}

// encode appends the JSON of a CEL value to b: maps need string keys,
// durations are written as Go (and metav1.Duration) write them, timestamps
// in RFC 3339, bytes in base64 as JSON writes []byte; an optional is its
// value, and optional.none() is convert.ErrNoForm.
func encode(b []byte, v ref.Val) ([]byte, error) {
	switch v.Type() {
	case types.NullType:
		return append(b, "null"...), nil
	case types.BoolType:
		return strconv.AppendBool(b, bool(v.(types.Bool))), nil
	case types.IntType:
		return strconv.AppendInt(b, int64(v.(types.Int)), 10), nil
	case types.UintType:
		return strconv.AppendUint(b, uint64(v.(types.Uint)), 10), nil
	case types.DoubleType:
		f := float64(v.(types.Double))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", f)
		}
		return apirules.AppendFloat(b, f), nil // as the API server writes it
	case types.StringType:
		return appendString(b, string(v.(types.String))), nil
	case types.BytesType:
		return appendString(b, base64.StdEncoding.EncodeToString([]byte(v.(types.Bytes)))), nil
	case types.DurationType:
		return appendString(b, v.Value().(time.Duration).String()), nil
	case types.TimestampType:
		return appendString(b, v.Value().(time.Time).UTC().Format(time.RFC3339Nano)), nil
	}
	switch t := v.(type) {
	case *types.Optional:
		// optional.none(): the value has no form in the other version.
		if !t.HasValue() {
			return nil, convert.ErrNoForm
		}
		return encode(b, t.GetValue())
	case traits.Lister:
		b = append(b, '[')
		n := int(t.Size().(types.Int))
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = encode(b, t.Get(types.Int(i))); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case traits.Mapper:
		var keys []string
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			s, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is %s, not a string", k.Value(), k.Type().TypeName())
			}
			keys = append(keys, string(s))
		}
		sort.Strings(keys) // deterministic output
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			var err error
			if b, err = encode(b, t.Get(types.String(k))); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	// Anything else (optional, type, unknown): convert it as JSON would.
	if nv, err := v.ConvertToNative(reflect.TypeFor[any]()); err == nil {
		if raw, err := json.Marshal(nv); err == nil {
			return append(b, raw...), nil
		}
	}
	return nil, fmt.Errorf("a value of type %s has no JSON form", v.Type().TypeName())
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
