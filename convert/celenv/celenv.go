// Package celenv compiles the expressions of hubspoke cel rules in the CEL
// environment the Kubernetes API server gives x-kubernetes-validations: the
// same base libraries (strings, lists, sets, regex, URLs, quantities, IPs,
// CIDRs, semver, format, optionals, two-variable comprehensions, cel.bind),
// the same per-call cost limit and the same estimator, at the compatibility
// version the API server uses for new expressions.
//
// Expressions see self, the value of the rule's field, and object, the
// whole object as the rules before left it; fail("message") refuses a
// value with that message (a convert.Refusal). Both are read from their
// JSON as the expression goes: an object's members only when the
// expression reads them, and an object it gives back whole is written from
// its bytes. Numbers are read as the API server reads them (an integer
// literal that fits is an int, any other number a double) and come out as
// it writes them (apirules.AppendFloat); objects come out with their keys
// in order.
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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
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

// Compile parses and checks expr and prepares it, once for every object
// it will convert, with the API server's per-call cost limit, tracked as
// the API server tracks it (the environment's own program options). No
// interrupt check: an evaluation has no context to be cancelled through,
// so the check cel-go would add to every comprehension step could never
// fire.
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

var _ convert.CELAppender = (*expression)(nil)

// UsesObject reports whether the expression reads the variable object.
func (x *expression) UsesObject() bool { return x.usesObject }

// Eval evaluates the expression on self, JSON, and returns the result as
// JSON.
func (x *expression) Eval(self []byte) ([]byte, error) { return x.EvalContext(self, nil) }

// EvalContext is Eval with object bound to the JSON of the whole object
// (nil: unbound); its preserved annotation is left out. Both are checked
// to be JSON first.
func (x *expression) EvalContext(self, object []byte) ([]byte, error) {
	return x.eval(nil, self, object, false)
}

// AppendEval is EvalContext appending the result to dst, for self and
// object known to be valid JSON (the engine's; see convert.CELAppender).
func (x *expression) AppendEval(dst, self, object []byte) ([]byte, error) {
	return x.eval(dst, self, object, true)
}

// evaluation is what one evaluation needs besides the program: the
// variables, and the scanners of the documents they are read from
// lazily. Pooled: nothing of it outlives the evaluation, whose result is
// written out as JSON before it is given back.
type evaluation struct {
	vars       binding
	self, root jsonscan.Scanner
	// selfObj and rootObj are self and object when they are objects,
	// read lazily.
	selfObj, rootObj lazyObject
}

var evaluations = sync.Pool{New: func() any { return new(evaluation) }}

func (ev *evaluation) release() {
	ev.vars = binding{}
	ev.selfObj, ev.rootObj = lazyObject{}, lazyObject{}
	ev.self.Trim()
	ev.root.Trim()
	evaluations.Put(ev)
}

// binding is the activation of an evaluation: self, and object when
// bound (a struct rather than a map, which cel-go would copy into an
// activation of its own on every call).
type binding struct{ self, object ref.Val }

func (b *binding) ResolveName(name string) (any, bool) {
	switch name {
	case Self:
		return b.self, b.self != nil
	case Object:
		return b.object, b.object != nil
	}
	return nil, false
}

func (b *binding) Parent() interpreter.Activation { return nil }

// bind reads self and object (nil: unbound) into ev.vars, lazily; unless
// trusted, they are checked to be JSON first.
func (ev *evaluation) bind(self, object []byte, trusted bool) error {
	if object != nil {
		ev.root.Reset(object)
		if !trusted {
			if err := ev.root.Document(0); err != nil {
				return fmt.Errorf("object: %w", err)
			}
		}
		ov, err := ev.rootObj.at(&ev.root, root)
		if err != nil {
			return fmt.Errorf("object: %w", err)
		}
		ev.vars.object = ov
		if len(self) == len(object) && len(self) > 0 && &self[0] == &object[0] {
			// self is the whole object (a when or derive of a rule
			// without selectors): read as object is.
			ev.vars.self = ov
			return nil
		}
	}
	ev.self.Reset(self)
	if !trusted {
		if err := ev.self.Document(0); err != nil {
			return fmt.Errorf("self: %w", err)
		}
	}
	sv, err := ev.selfObj.at(&ev.self, inside)
	if err != nil {
		return fmt.Errorf("self: %w", err)
	}
	ev.vars.self = sv
	return nil
}

// eval evaluates the expression and appends the result to dst.
func (x *expression) eval(dst, self, object []byte, trusted bool) ([]byte, error) {
	ev := evaluations.Get().(*evaluation)
	defer ev.release()
	if err := ev.bind(self, object, trusted); err != nil {
		return nil, err
	}
	out, det, err := x.prog.Eval(&ev.vars)
	if err != nil {
		if det != nil {
			if cost := det.ActualCost(); cost != nil && *cost > PerCallLimit {
				return nil, fmt.Errorf("%s: cost limit %d exceeded", x.src, PerCallLimit)
			}
		}
		return nil, err
	}
	b, err := encode(dst, out)
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
	ev := evaluations.Get().(*evaluation)
	defer ev.release()
	if err := ev.bind(self, nil, false); err != nil {
		return 0, err
	}
	_, det, err := e.prog.Eval(&ev.vars)
	if err != nil {
		return 0, err
	}
	if c := det.ActualCost(); c != nil {
		return *c, nil
	}
	return 0, nil
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
	case *lazyObject:
		return t.appendJSON(b)
	case *types.Optional:
		// optional.none(): the value has no form in the other version.
		if !t.HasValue() {
			return nil, convert.ErrNoForm
		}
		return encode(b, t.GetValue())
	case traits.Lister:
		n := int(t.Size().(types.Int))
		elems, ok := t.Value().([]ref.Val)
		if !ok || len(elems) != n {
			elems = nil // not a list of CEL values (or a list being built)
		}
		b = append(b, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			e := ref.Val(nil)
			if elems != nil {
				e = elems[i]
			} else {
				e = t.Get(types.Int(i))
			}
			var err error
			if b, err = encode(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case traits.Mapper:
		return encodeMap(b, t)
	}
	// Anything else (optional, type, unknown): convert it as JSON would.
	if nv, err := v.ConvertToNative(reflect.TypeFor[any]()); err == nil {
		if raw, err := json.Marshal(nv); err == nil {
			return append(b, raw...), nil
		}
	}
	return nil, fmt.Errorf("a value of type %s has no JSON form", v.Type().TypeName())
}

// entry is a member of a map being written.
type entry struct {
	key string
	val ref.Val
}

// encodeMap appends the JSON of a map, its keys in order. A map of CEL
// values (a map literal's) is read as the Go map it holds, without an
// iterator; any other through its iterator.
func encodeMap(b []byte, t traits.Mapper) ([]byte, error) {
	var buf [16]entry
	es := buf[:0]
	if m, ok := t.Value().(map[ref.Val]ref.Val); ok && len(m) == int(t.Size().(types.Int)) {
		for k, v := range m {
			s, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is %s, not a string", k.Value(), k.Type().TypeName())
			}
			es = append(es, entry{string(s), v})
		}
	} else {
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			s, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("map key %v is %s, not a string", k.Value(), k.Type().TypeName())
			}
			es = append(es, entry{string(s), t.Get(k)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.key, b.key) }) // deterministic output
	b = append(b, '{')
	for i := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(convert.AppendJSONString(b, es[i].key), ':')
		var err error
		if b, err = encode(b, es[i].val); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendString(b []byte, s string) []byte { return convert.AppendJSONString(b, s) }
