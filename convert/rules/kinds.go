package rules

import (
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hubspoke/hubspoke/convert"
)

// kind is one rule kind of the file format: the parameters it takes and how
// it compiles. Adding a kind is one entry in kinds and a build function.
type kind struct {
	params []string
	build  func(b *build) error
}

// kinds are the rule kinds, by the key that names them in a file.
var kinds = map[string]kind{
	"rename":      {params: []string{"from", "to"}, build: buildRename},
	"enum":        {params: []string{"from", "to", "values", "hubValues"}, build: buildEnum},
	"duration":    {params: []string{"from", "to", "unit", "round", "spoke"}, build: buildDuration},
	"intToString": {params: []string{"from", "to"}, build: pairKind(convert.IntToString)},
	"stringToInt": {params: []string{"from", "to"}, build: pairKind(convert.StringToInt)},
	"scale":       {params: []string{"from", "to", "multiply", "divide"}, build: buildScale},
	"listToMap":   {params: []string{"from", "to", "key", "keyType", "order"}, build: buildListMap(convert.ListToMap)},
	"mapToList":   {params: []string{"from", "to", "key", "keyType", "order"}, build: buildListMap(convert.MapToList)},
	"listToItem":  {params: []string{"from", "to", "otherwise"}, build: buildSingleton(convert.ListToItem)},
	"itemToList":  {params: []string{"from", "to", "otherwise"}, build: buildSingleton(convert.ItemToList)},
	"split":       {params: []string{"from", "to", "pattern", "defaults", "otherwise"}, build: buildPattern(convert.Split)},
	"join":        {params: []string{"from", "to", "pattern", "defaults", "otherwise"}, build: buildPattern(convert.Join)},
	"hubOnly":     {params: []string{"path", "default"}, build: buildOnly(convert.HubOnly)},
	"spokeOnly":   {params: []string{"path", "default"}, build: buildOnly(convert.SpokeOnly)},
	"funcs":       {params: []string{"name", "from", "to"}, build: buildFuncs},
	"cel":         {params: []string{"from", "to", "toHub", "fromHub", "otherwise"}, build: buildCEL},
}

// build is one rule being compiled: its YAML, and the RuleSpec it fills.
type build struct {
	l        *loader
	field    string     // e.g. spec.spokes[0].rules[1].enum
	kindNode *yaml.Node // the key naming the kind
	body     *yaml.Node // its parameters
	m        map[string]entry
	spec     RuleSpec
}

// errAt is an error at parameter k (at the parameters when k is absent).
func (b *build) errAt(k, format string, args ...any) error {
	n := b.body
	if e, ok := b.m[k]; ok {
		n = e.val
	}
	return b.l.errf(n, b.field+"."+k, format, args...)
}

// fail is an error of the rule as a whole, at its kind.
func (b *build) fail(err error) error { return b.l.errf(b.kindNode, b.field, "%v", err) }

// str returns the scalar parameter k ("" when absent).
func (b *build) str(k string) string { return b.l.scalar(b.m, k) }

// path parses the path parameter k.
func (b *build) path(k string, required bool) (convert.Path, bool, error) {
	e, ok := b.m[k]
	if !ok {
		if required {
			return convert.Path{}, false, b.errAt(k, "missing")
		}
		return convert.Path{}, false, nil
	}
	if e.val.Kind != yaml.ScalarNode {
		return convert.Path{}, false, b.l.errf(e.val, b.field+"."+k, "want a path, got %s", kindName(e.val))
	}
	p, err := convert.ParsePath(e.val.Value)
	if err != nil {
		return convert.Path{}, false, b.l.errf(e.val, b.field+"."+k, "%v", err)
	}
	return p, true, nil
}

// pair reads from and to (to defaults to from) into the spec.
func (b *build) pair() error {
	from, _, err := b.path("from", true)
	if err != nil {
		return err
	}
	to, ok, err := b.path("to", false)
	if err != nil {
		return err
	}
	if !ok {
		to = from
	}
	b.spec.From, b.spec.To = from, to
	return nil
}

// done records the compiled rule, or its error at the rule's kind.
func (b *build) done(r convert.Rule, err error) error {
	if err != nil {
		return b.fail(err)
	}
	b.spec.Rule = r
	return nil
}

// stringMap reads parameter k as a mapping of strings, in document order.
func (b *build) stringMap(k string) ([][2]string, []*yaml.Node, error) {
	e, ok := b.m[k]
	if !ok {
		return nil, nil, nil
	}
	if e.val.Kind != yaml.MappingNode {
		return nil, nil, b.l.errf(e.val, b.field+"."+k, "want a mapping, got %s", kindName(e.val))
	}
	var out [][2]string
	var nodes []*yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		kn, vn := e.val.Content[i], e.val.Content[i+1]
		if vn.Kind == yaml.AliasNode {
			vn = vn.Alias
		}
		if seen[kn.Value] {
			return nil, nil, b.l.errf(kn, b.field+"."+k+"."+kn.Value, "set twice")
		}
		seen[kn.Value] = true
		if vn.Kind != yaml.ScalarNode || vn.Tag == "!!null" {
			return nil, nil, b.l.errf(vn, b.field+"."+k+"."+kn.Value, "want a string")
		}
		out = append(out, [2]string{kn.Value, vn.Value})
		nodes = append(nodes, vn)
	}
	return out, nodes, nil
}

func buildRename(b *build) error {
	if _, ok := b.m["to"]; !ok {
		return b.errAt("to", "missing")
	}
	if err := b.pair(); err != nil {
		return err
	}
	return b.done(convert.Rename(b.spec.From, b.spec.To))
}

func pairKind(fn func(from, to convert.Path) (convert.Rule, error)) func(*build) error {
	return func(b *build) error {
		if err := b.pair(); err != nil {
			return err
		}
		return b.done(fn(b.spec.From, b.spec.To))
	}
}

func buildEnum(b *build) error {
	if err := b.pair(); err != nil {
		return err
	}
	if _, ok := b.m["values"]; !ok {
		return b.errAt("values", "missing")
	}
	pairs, _, err := b.stringMap("values")
	if err != nil {
		return err
	}
	var v convert.EnumValues
	values := map[string]string{}
	first := map[string]string{}
	for _, p := range pairs {
		v.Pairs = append(v.Pairs, convert.EnumPair{Spoke: p[0], Hub: p[1]})
		values[p[0]] = p[1]
		if _, ok := first[p[1]]; !ok {
			first[p[1]] = p[0]
		}
	}
	hubPairs, hubNodes, err := b.stringMap("hubValues")
	if err != nil {
		return err
	}
	hubValues := map[string]string{}
	for i, p := range hubPairs {
		if s, ok := first[p[0]]; ok {
			return b.l.errf(hubNodes[i], b.field+".hubValues."+p[0], "hub value %q is not hub-only: spoke value %q maps to it", p[0], s)
		}
		if _, ok := values[p[1]]; !ok {
			return b.l.errf(hubNodes[i], b.field+".hubValues."+p[0], "%q is not a spoke value of values", p[1])
		}
		v.HubOnly = append(v.HubOnly, convert.EnumPair{Hub: p[0], Spoke: p[1]})
		hubValues[p[0]] = p[1]
	}
	b.spec.Params["values"] = values
	if len(hubValues) > 0 {
		b.spec.Params["hubValues"] = hubValues
	}
	return b.done(convert.EnumWith(b.spec.From, b.spec.To, v))
}

func buildDuration(b *build) error {
	if err := b.pair(); err != nil {
		return err
	}
	unit := time.Second
	if u := b.str("unit"); u != "" {
		var err error
		if unit, err = convert.ParseUnit(u); err != nil {
			return b.errAt("unit", "%v", err)
		}
	}
	fn := convert.Duration
	switch sp := b.str("spoke"); sp {
	case "", "integer":
	case "string":
		fn = convert.DurationToInt
	default:
		return b.errAt("spoke", "want integer (the spoke holds the count, the hub the duration string) or string (the other way round), got %q", sp)
	}
	b.spec.Params["unit"], b.spec.Params["round"] = unit.String(), b.str("round")
	b.spec.Params["spoke"] = b.str("spoke")
	return b.done(fn(b.spec.From, b.spec.To, unit, convert.Rounding(b.str("round"))))
}

func buildScale(b *build) error {
	if err := b.pair(); err != nil {
		return err
	}
	var mul, div int64
	for _, f := range []struct {
		k   string
		dst *int64
	}{{"multiply", &mul}, {"divide", &div}} {
		if e, ok := b.m[f.k]; ok {
			v, err := strconv.ParseInt(e.val.Value, 10, 64)
			if err != nil || v <= 0 {
				return b.errAt(f.k, "want a positive integer, got %q", e.val.Value)
			}
			*f.dst = v
		}
	}
	b.spec.Params["multiply"], b.spec.Params["divide"] = mul, div
	return b.done(convert.Scale(b.spec.From, b.spec.To, mul, div))
}

func buildListMap(fn func(from, to convert.Path, key string, keyType convert.KeyType, order convert.Order) (convert.Rule, error)) func(*build) error {
	return func(b *build) error {
		if err := b.pair(); err != nil {
			return err
		}
		b.spec.Params["key"], b.spec.Params["keyType"], b.spec.Params["order"] = b.str("key"), b.str("keyType"), b.str("order")
		return b.done(fn(b.spec.From, b.spec.To, b.str("key"), convert.KeyType(b.str("keyType")), convert.Order(b.str("order"))))
	}
}

func buildSingleton(fn func(from, to convert.Path, otherwise convert.Otherwise) (convert.Rule, error)) func(*build) error {
	return func(b *build) error {
		if err := b.pair(); err != nil {
			return err
		}
		b.spec.Params["otherwise"] = b.str("otherwise")
		return b.done(fn(b.spec.From, b.spec.To, convert.Otherwise(b.str("otherwise"))))
	}
}

func buildPattern(fn func(from, to convert.Path, p *convert.Pattern, defaults map[string]string, otherwise convert.Otherwise) (convert.Rule, error)) func(*build) error {
	return func(b *build) error {
		if err := b.pair(); err != nil {
			return err
		}
		if _, ok := b.m["pattern"]; !ok {
			return b.errAt("pattern", "missing")
		}
		p, err := convert.ParsePattern(b.str("pattern"))
		if err != nil {
			return b.errAt("pattern", "%v", err)
		}
		pairs, _, err := b.stringMap("defaults")
		if err != nil {
			return err
		}
		defaults := map[string]string{}
		for _, kv := range pairs {
			defaults[kv[0]] = kv[1]
		}
		b.spec.Params["pattern"], b.spec.Params["defaults"], b.spec.Params["otherwise"] = p.String(), defaults, b.str("otherwise")
		return b.done(fn(b.spec.From, b.spec.To, p, defaults, convert.Otherwise(b.str("otherwise"))))
	}
}

func buildOnly(fn func(path convert.Path, def []byte) (convert.Rule, error)) func(*build) error {
	return func(b *build) error {
		p, _, err := b.path("path", true)
		if err != nil {
			return err
		}
		b.spec.From, b.spec.To = p, p
		var def []byte
		if e, ok := b.m["default"]; ok {
			if def, err = nodeJSON(e.val); err != nil {
				return b.errAt("default", "%v", err)
			}
			b.spec.Params["default"] = string(def)
		}
		return b.done(fn(p, def))
	}
}

func buildFuncs(b *build) error {
	name := b.str("name")
	if name == "" {
		return b.errAt("name", "missing")
	}
	b.spec.FuncName = name
	owned, err := b.l.ownedPaths(b.m, b.field)
	if err != nil {
		return err
	}
	for k, ps := range owned {
		b.spec.Params[k] = ps
	}
	r, ok, known := b.l.funcsRule(name)
	if !ok {
		return b.errAt("name", "no Go function %q is registered (registered: %s); funcs rules work only where the program that loads the file registers them", name, strings.Join(known, ", "))
	}
	b.spec.Rule = r
	return nil
}
