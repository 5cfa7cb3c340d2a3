package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hubspoke/hubspoke/convert"
)

// kind is one rule kind of the file format: the parameters it takes, the
// modifiers it takes (when, restore, dropIfEmpty), and how it compiles.
// Adding a kind is one entry in kinds and a build function.
type kind struct {
	params []string
	mods   []string
	build  func(b *build) error
}

// Modifier sets: every kind that maps a field takes all three; a kind
// that keeps a field of one side takes when and restore.
var (
	pairMods = []string{"when", "restore", "dropIfEmpty"}
	onlyMods = []string{"when", "restore"}
)

// kinds are the rule kinds, by the key that names them in a file.
var kinds = map[string]kind{
	"rename":      {params: []string{"from", "to"}, mods: pairMods, build: buildRename},
	"enum":        {params: []string{"from", "to", "values", "hubValues"}, mods: pairMods, build: buildEnum},
	"duration":    {params: []string{"from", "to", "unit", "round", "spoke"}, mods: pairMods, build: buildDuration},
	"intToString": {params: []string{"from", "to"}, mods: pairMods, build: pairKind(convert.IntToString)},
	"stringToInt": {params: []string{"from", "to"}, mods: pairMods, build: pairKind(convert.StringToInt)},
	"scale":       {params: []string{"from", "to", "multiply", "divide", "round"}, mods: pairMods, build: buildScale},
	"quantity":    {params: []string{"from", "to", "spoke", "hub", "format", "otherwise"}, mods: pairMods, build: buildQuantity},
	"listToMap":   {params: []string{"from", "to", "key", "keyType", "order"}, mods: pairMods, build: buildListMap(convert.ListToMap)},
	"mapToList":   {params: []string{"from", "to", "key", "keyType", "order"}, mods: pairMods, build: buildListMap(convert.MapToList)},
	"listToItem":  {params: []string{"from", "to", "otherwise", "empty"}, mods: pairMods, build: buildSingleton(convert.ListToItemEmpty)},
	"itemToList":  {params: []string{"from", "to", "otherwise", "empty"}, mods: pairMods, build: buildSingleton(convert.ItemToListEmpty)},
	"split":       {params: []string{"from", "to", "pattern", "defaults", "otherwise"}, mods: pairMods, build: buildPattern(convert.Split)},
	"join":        {params: []string{"from", "to", "pattern", "defaults", "otherwise"}, mods: pairMods, build: buildPattern(convert.Join)},
	"hubOnly":     {params: []string{"path", "default", "derive"}, mods: onlyMods, build: buildOnly(true)},
	"spokeOnly":   {params: []string{"path", "default", "derive"}, mods: onlyMods, build: buildOnly(false)},
	"constant":    {params: []string{"path", "value", "in"}, mods: onlyMods, build: buildConstant},
	"drop":        {params: []string{"path", "in", "acknowledgeLoss"}, mods: []string{"when"}, build: buildDrop},
	"missing":     {params: []string{"path", "hub", "spoke"}, mods: []string{"when"}, build: buildMissing},
	"funcs":       {params: []string{"name", "from", "to"}, build: buildFuncs},
	"cel":         {params: []string{"from", "to", "toHub", "fromHub", "otherwise"}, mods: pairMods, build: buildCEL},
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
	ps, err := b.l.pairs(e.val, b.field+"."+k)
	if err != nil {
		return nil, nil, err
	}
	var out [][2]string
	var nodes []*yaml.Node
	for _, p := range ps {
		kn, vn := p.key, p.val
		if vn.Kind != yaml.ScalarNode || vn.Tag == "!!null" {
			return nil, nil, b.l.errf(vn, b.field+"."+k+"."+kn.Value, "want a string")
		}
		out = append(out, [2]string{kn.Value, vn.Value})
		nodes = append(nodes, vn)
	}
	return out, nodes, nil
}

// scalarMap reads parameter k as a mapping of scalars (strings, numbers,
// booleans, as YAML types them: 1 is a number, "1" a string), in document
// order, each key and value as JSON.
func (b *build) scalarMap(k string) ([][2]string, []*yaml.Node, error) {
	e, ok := b.m[k]
	if !ok {
		return nil, nil, nil
	}
	if e.val.Kind != yaml.MappingNode {
		return nil, nil, b.l.errf(e.val, b.field+"."+k, "want a mapping, got %s", kindName(e.val))
	}
	ps, err := b.l.pairs(e.val, b.field+"."+k)
	if err != nil {
		return nil, nil, err
	}
	var out [][2]string
	var nodes []*yaml.Node
	for _, p := range ps {
		var pair [2]string
		for i, n := range []*yaml.Node{p.key, p.val} {
			raw, err := scalarJSON(n)
			if err != nil {
				return nil, nil, b.l.errf(n, b.field+"."+k+"."+p.key.Value, "%v", err)
			}
			pair[i] = string(raw)
		}
		out = append(out, pair)
		nodes = append(nodes, p.val)
	}
	return out, nodes, nil
}

// scalarJSON returns a scalar node as JSON: a string, a number or a
// boolean.
func scalarJSON(n *yaml.Node) ([]byte, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return nil, fmt.Errorf("want a string, a number or a boolean, got %s", kindName(n))
	}
	raw, err := nodeJSON(n)
	if err != nil {
		return nil, err
	}
	return raw, nil
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
	pairs, nodes, err := b.scalarMap("values")
	if err != nil {
		return err
	}
	values := map[string]string{}
	reached := map[string][]string{} // hub value -> its spoke values, as listed
	listedAt := map[string]*yaml.Node{}
	for i, p := range pairs {
		values[plainOf(p[0])] = plainOf(p[1])
		reached[p[1]] = append(reached[p[1]], p[0])
		if _, ok := listedAt[p[1]]; !ok {
			listedAt[p[1]] = nodes[i]
		}
	}
	hubPairs, hubNodes, err := b.scalarMap("hubValues")
	if err != nil {
		return err
	}
	v := convert.EnumValues{Typed: true}
	hubValues := map[string]string{}
	var shown [][2]string
	back := map[string]string{} // many-to-one hub value -> the spoke value it converts back to
	for i, p := range hubPairs {
		at := b.field + ".hubValues." + plainOf(p[0])
		switch spokes := reached[p[0]]; {
		case len(spokes) == 1:
			return b.l.errf(hubNodes[i], at, "hub value %s is not hub-only: spoke value %s maps to it", p[0], spokes[0])
		case len(spokes) > 1:
			if !slices.Contains(spokes, p[1]) {
				return b.l.errf(hubNodes[i], at, "hub value %s converts back to one of the spoke values that map to it (%s), not %s", p[0], strings.Join(spokes, ", "), p[1])
			}
			back[p[0]] = p[1]
		default:
			if _, ok := values[plainOf(p[1])]; !ok {
				return b.l.errf(hubNodes[i], at, "%s is not a spoke value of values", p[1])
			}
			v.HubOnly = append(v.HubOnly, convert.EnumPair{Hub: p[0], Spoke: p[1]})
			shown = append(shown, p)
		}
		hubValues[plainOf(p[0])] = plainOf(p[1])
	}
	// A mapping's order is not part of its meaning: a Conversion object
	// stored by the API server holds its keys sorted. So a hub value that
	// several spoke values map to converts back to the one hubValues
	// names, else to the first in that order; a file listing another one
	// first meant it, and is refused rather than read otherwise.
	byPlain := func(a, b [2]string) int { return strings.Compare(plainOf(a[0]), plainOf(b[0])) }
	sorted := slices.SortedStableFunc(slices.Values(pairs), byPlain)
	for _, p := range sorted {
		spokes := reached[p[1]]
		if _, named := back[p[1]]; named || len(spokes) < 2 {
			continue
		}
		back[p[1]] = p[0]
		if spokes[0] != p[0] {
			return b.l.errf(listedAt[p[1]], b.field+".values."+plainOf(spokes[0]),
				"hub value %s is reached from spoke values %s and converts back to %s, the first in sorted order (a Conversion object's mapping keeps no order), not to %s listed first: name the one it converts back to in hubValues ({%s: %s})",
				p[1], strings.Join(spokes, ", "), p[0], spokes[0], plainOf(p[1]), plainOf(spokes[0]))
		}
	}
	// The pairs in that order, each many-to-one hub value's way back
	// first: the engine converts a hub value back to its first pair.
	for _, p := range sorted {
		if s, ok := back[p[1]]; ok && s == p[0] {
			v.Pairs = append(v.Pairs, convert.EnumPair{Spoke: p[0], Hub: p[1]})
		}
	}
	for _, p := range sorted {
		if s, ok := back[p[1]]; !ok || s != p[0] {
			v.Pairs = append(v.Pairs, convert.EnumPair{Spoke: p[0], Hub: p[1]})
		}
	}
	canonical := make([][2]string, len(v.Pairs))
	for i, p := range v.Pairs {
		canonical[i] = [2]string{p.Spoke, p.Hub}
	}
	// values and hubValues spell each value plainly (a string's content,
	// a number's literal); pairs and hubPairs as JSON, with their types.
	b.spec.Params["values"] = values
	b.spec.Params["pairs"] = canonical
	if len(hubValues) > 0 {
		b.spec.Params["hubValues"] = hubValues
	}
	if len(shown) > 0 {
		slices.SortStableFunc(shown, byPlain)
		b.spec.Params["hubPairs"] = shown
	}
	return b.done(convert.EnumWith(b.spec.From, b.spec.To, v))
}

// plainOf returns a JSON scalar as check's model spells enum values: a
// string's content, a number's or a boolean's literal.
func plainOf(raw string) string {
	var s string
	if json.Unmarshal([]byte(raw), &s) == nil {
		return s
	}
	return raw
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
	b.spec.Params["round"] = b.str("round")
	return b.done(convert.ScaleRound(b.spec.From, b.spec.To, mul, div, convert.Rounding(b.str("round"))))
}

func buildQuantity(b *build) error {
	if err := b.pair(); err != nil {
		return err
	}
	spoke, hub := b.str("spoke"), b.str("hub")
	for _, k := range []string{"spoke", "hub"} {
		switch f := b.str(k); f {
		case "string", "integer", "object":
		case "":
			return b.errAt(k, "missing: say which form the %s holds: string (\"50Gi\"), integer (53687091200) or object ({value: 50, unit: Gi})", k)
		default:
			return b.errAt(k, "want string, integer or object, got %q", f)
		}
	}
	b.spec.Params["spoke"], b.spec.Params["hub"] = spoke, hub
	b.spec.Params["format"], b.spec.Params["otherwise"] = b.str("format"), b.str("otherwise")
	r, err := convert.Quantity(convert.QuantitySpec{From: b.spec.From, To: b.spec.To,
		Spoke: convert.QuantityForm(spoke), Hub: convert.QuantityForm(hub),
		Format: resource.Format(b.str("format")), Otherwise: convert.Otherwise(b.str("otherwise"))})
	if err != nil {
		if _, ok := b.m["format"]; ok && strings.Contains(err.Error(), "format") {
			return b.errAt("format", "%v", err)
		}
	}
	return b.done(r, err)
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

func buildSingleton(fn func(from, to convert.Path, otherwise convert.Otherwise, empty convert.Empty) (convert.Rule, error)) func(*build) error {
	return func(b *build) error {
		if err := b.pair(); err != nil {
			return err
		}
		switch e := b.str("empty"); e {
		case "", "absent":
		default:
			return b.errAt("empty", "want absent (an empty list is a missing item, and back), got %q", e)
		}
		b.spec.Params["otherwise"], b.spec.Params["empty"] = b.str("otherwise"), b.str("empty")
		return b.done(fn(b.spec.From, b.spec.To, convert.Otherwise(b.str("otherwise")), convert.Empty(b.str("empty"))))
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

func buildOnly(inHub bool) func(*build) error {
	return func(b *build) error {
		p, _, err := b.path("path", true)
		if err != nil {
			return err
		}
		b.spec.From, b.spec.To = p, p
		f := convert.OnlySide{Path: p, InHub: inHub}
		if e, ok := b.m["default"]; ok {
			if f.Default, err = nodeJSON(e.val); err != nil {
				return b.errAt("default", "%v", err)
			}
			b.spec.Params["default"] = string(f.Default)
		}
		if _, ok := b.m["derive"]; ok {
			if _, ok := b.m["default"]; ok {
				return b.errAt("derive", "give a default or a derived value, not both")
			}
			if f.Derive, err = b.cel("derive"); err != nil {
				return err
			}
			b.spec.Params["derive"] = b.str("derive")
		}
		return b.done(convert.OnlyOn(f))
	}
}

// side reads parameter in: hub or spoke (def when absent).
func (b *build) side(def string) (bool, error) {
	switch in := b.str("in"); in {
	case "":
		return def == "hub", nil
	case "hub", "spoke":
		b.spec.Params["in"] = in
		return in == "hub", nil
	default:
		return false, b.errAt("in", "want hub or spoke (the version that has the field), got %q", in)
	}
}

func buildConstant(b *build) error {
	p, _, err := b.path("path", true)
	if err != nil {
		return err
	}
	b.spec.From, b.spec.To = p, p
	e, ok := b.m["value"]
	if !ok {
		return b.errAt("value", "missing")
	}
	inHub, err := b.side("hub")
	if err != nil {
		return err
	}
	v, err := nodeJSON(e.val)
	if err != nil {
		return b.errAt("value", "%v", err)
	}
	b.spec.Params["value"], b.spec.Params["in"] = string(v), map[bool]string{true: "hub", false: "spoke"}[inHub]
	return b.done(convert.OnlyOn(convert.OnlySide{Path: p, InHub: inHub, Default: v, Constant: true}))
}

func buildDrop(b *build) error {
	p, _, err := b.path("path", true)
	if err != nil {
		return err
	}
	b.spec.From, b.spec.To = p, p
	reason := strings.TrimSpace(b.str("acknowledgeLoss"))
	if reason == "" {
		return b.errAt("acknowledgeLoss", "missing: a drop loses data where the annotation cannot keep it; say why that is acceptable (acknowledgeLoss: \"...\")")
	}
	inHub, err := b.side("spoke")
	if err != nil {
		return err
	}
	b.spec.Params["acknowledgeLoss"], b.spec.Params["in"] = reason, map[bool]string{true: "hub", false: "spoke"}[inHub]
	return b.done(convert.OnlyOn(convert.OnlySide{Path: p, InHub: inHub, Drop: true}))
}

func buildMissing(b *build) error {
	p, _, err := b.path("path", true)
	if err != nil {
		return err
	}
	b.spec.From, b.spec.To = p, p
	var vals [2][]byte
	for i, k := range []string{"hub", "spoke"} {
		if e, ok := b.m[k]; ok {
			if vals[i], err = nodeJSON(e.val); err != nil {
				return b.errAt(k, "%v", err)
			}
			b.spec.Params[k] = string(vals[i])
		}
	}
	if vals[0] == nil && vals[1] == nil {
		return b.errAt("hub", "missing: give hub (the hub's value of a field the spoke lacks), spoke (the spoke's value of a field the hub lacks), or both")
	}
	return b.done(convert.Missing(p, vals[0], vals[1]))
}

// cel compiles the cel expression of parameter k.
func (b *build) cel(k string) (convert.CELExpression, error) {
	e := b.m[k]
	if e.val.Kind != yaml.ScalarNode || e.val.Value == "" {
		return nil, b.errAt(k, "want a CEL expression (a string)")
	}
	c := b.l.celCompiler()
	if c == nil {
		return nil, b.errAt(k, "cel expressions need a CEL environment and this program links none; link package github.com/hubspoke/hubspoke/convert/celenv (the hubspoke binaries do, unless built with -tags hubspoke_nocel)")
	}
	x, err := c.Compile(e.val.Value)
	if err != nil {
		return nil, b.errAt(k, "%v", err)
	}
	return x, nil
}

// modifiers applies the rule's when, restore and dropIfEmpty.
func (b *build) modifiers() error {
	var m convert.Modifiers
	if _, ok := b.m["when"]; ok {
		x, err := b.cel("when")
		if err != nil {
			return err
		}
		m.When, m.WhenSource = x, b.str("when")
		b.spec.Params["when"] = m.WhenSource
	}
	switch r := b.str("restore"); r {
	case "", "edit":
	case "kept":
		m.KeptWins = true
		b.spec.Params["restore"] = r
	default:
		return b.errAt("restore", "want edit (an edit made through the other version wins over a kept value; the default) or kept (the kept value wins), got %q", r)
	}
	if e, ok := b.m["dropIfEmpty"]; ok {
		var v bool
		if n := deref(e.val); n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
			return b.errAt("dropIfEmpty", "want true or false")
		}
		m.DropIfEmpty = v
		if v {
			b.spec.Params["dropIfEmpty"] = true
		}
	}
	if b.spec.Rule == nil {
		return nil // funcs: none apply
	}
	r, err := convert.Modify(b.spec.Rule, b.spec.From, b.spec.To, m)
	if err != nil {
		return b.fail(err)
	}
	b.spec.Rule = r
	return nil
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
