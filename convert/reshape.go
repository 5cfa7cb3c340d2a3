package convert

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Otherwise says what happens to a value that has no form in the other
// version: an empty or longer list where one item is expected, a string a
// pattern does not match, an object a pattern cannot write.
type Otherwise string

// Policies for values with no form in the other version.
const (
	// OtherwiseFail fails the conversion, naming the value.
	OtherwiseFail Otherwise = "fail"
	// OtherwiseKeep removes the value and keeps it in the preserved
	// annotation; it is restored when the object comes back, unless the
	// field was set through the other version since.
	OtherwiseKeep Otherwise = "keep"
)

func checkOtherwise(kind string, from Path, o Otherwise) (bool, error) {
	switch o {
	case "", OtherwiseFail:
		return false, nil
	case OtherwiseKeep:
		return true, nil
	}
	return false, fmt.Errorf("%s %s: otherwise must be fail or keep, got %q", kind, from, o)
}

// --- singleton lists ----------------------------------------------------------

// ListToItem converts a one-item list in the spoke field from into that item
// in the hub field to ([x] -> x); the inverse wraps it again. A list that is
// empty, longer, or holds only null has no form in the hub: otherwise says
// whether it fails the conversion or is kept in the preserved annotation.
func ListToItem(from, to Path, otherwise Otherwise) (Rule, error) {
	return singleton("listToItem", from, to, otherwise, false)
}

// ItemToList is ListToItem the other way round: the spoke holds the item and
// the hub the one-item list.
func ItemToList(from, to Path, otherwise Otherwise) (Rule, error) {
	return singleton("itemToList", from, to, otherwise, true)
}

// Empty says what an empty list is on the other side of ListToItem and
// ItemToList.
type Empty string

// Policies for an empty list.
const (
	// EmptyOtherwise treats an empty list as any list of another length
	// than one: the rule's Otherwise decides.
	EmptyOtherwise Empty = ""
	// EmptyAbsent makes an empty list a missing item, as Go's omitempty
	// writes an empty slice: the empty list is removed and kept in the
	// preserved annotation, and comes back while the item stays missing;
	// a missing item is a missing list.
	EmptyAbsent Empty = "absent"
)

// ListToItemEmpty is ListToItem with a policy for the empty list.
func ListToItemEmpty(from, to Path, otherwise Otherwise, empty Empty) (Rule, error) {
	return singletonEmpty("listToItem", from, to, otherwise, false, empty)
}

// ItemToListEmpty is ItemToList with a policy for the empty list.
func ItemToListEmpty(from, to Path, otherwise Otherwise, empty Empty) (Rule, error) {
	return singletonEmpty("itemToList", from, to, otherwise, true, empty)
}

func singletonEmpty(kind string, from, to Path, otherwise Otherwise, spokeItem bool, empty Empty) (Rule, error) {
	r, err := singleton(kind, from, to, otherwise, spokeItem)
	if err != nil {
		return nil, err
	}
	switch empty {
	case EmptyOtherwise:
		return r, nil
	case EmptyAbsent:
	default:
		return nil, fmt.Errorf("%s %s: empty must be absent or left out, got %q", kind, from, empty)
	}
	inner := r
	if sr, ok := r.(*scopedRule); ok {
		inner = sr.inner
	}
	vr := inner.(*valueRule)
	return scoped(&emptyListRule{inner: vr, listToHub: !spokeItem}, from), nil
}

// emptyListRule is a singleton rule whose empty list is a missing item.
type emptyListRule struct {
	inner     *valueRule
	listToHub bool // the spoke holds the list (listToItem)
}

func (r *emptyListRule) String() string { return r.inner.String() + " (empty: absent)" }
func (r *emptyListRule) paths() []Path  { return r.inner.paths() }
func (r *emptyListRule) ToHub(o *Object) error {
	return r.run(o, r.inner.from, r.inner.to, r.listToHub, r.inner.ToHub)
}
func (r *emptyListRule) FromHub(o *Object) error {
	return r.run(o, r.inner.to, r.inner.from, !r.listToHub, r.inner.FromHub)
}

// run converts src to dst; fromList says src holds the list.
func (r *emptyListRule) run(o *Object, src, dst Path, fromList bool, apply func(*Object) error) error {
	n, err := o.lookup(src)
	if err != nil {
		return wrapRuleErr(r, src, err)
	}
	switch {
	case fromList && n != nil && n.kind() == '[' && isEmptyList(o.rawOf(n)):
		raw := o.st.keep(o.rawOf(n))
		if _, _, err := o.del(src); err != nil {
			return wrapRuleErr(r, src, err)
		}
		if err := o.pruneEmpty(src, commonPrefixLen(src, dst)); err != nil {
			return wrapRuleErr(r, src, err)
		}
		return wrapRuleErr(r, src, o.keepExact(o.from, src, raw, nil))
	case !fromList && n == nil:
		v, ok, err := o.takeExact(o.to, dst, nil)
		if err != nil || !ok {
			if err == nil {
				err = apply(o)
			}
			return wrapRuleErr(r, dst, err)
		}
		if cur, err := o.lookup(dst); err != nil || cur != nil && !o.keptWins {
			return wrapRuleErr(r, dst, err)
		}
		return wrapRuleErr(r, dst, o.set(dst, node{raw: o.st.keep(v)}))
	}
	return apply(o)
}

// isEmptyList reports whether raw is the JSON of a list with no item.
func isEmptyList(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '[' && len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}

func singleton(kind string, from, to Path, otherwise Otherwise, spokeItem bool) (Rule, error) {
	f, t, err := checkPair(kind, from, to)
	if err != nil {
		return nil, err
	}
	keep, err := checkOtherwise(kind, from, otherwise)
	if err != nil {
		return nil, err
	}
	r := &valueRule{kind: kind, from: f, to: t, aside: keep}
	unwrap := func(dst []byte, n node) ([]byte, bool, error) {
		// st is not needed: the item is split with a parser of its own.
		if n.kind() != '[' {
			return nil, false, fmt.Errorf("value is %s, not a list", describe(n))
		}
		items, err := splitList(n.raw)
		if err != nil {
			return nil, false, err
		}
		if len(items) != 1 {
			return nil, false, asideErr("list has %d items; the other version holds exactly one", len(items))
		}
		if string(items[0]) == "null" {
			return nil, false, asideErr("list holds one null, which the other version cannot tell from no value")
		}
		return append(dst, items[0]...), true, nil
	}
	wrap := func(dst []byte, n node) ([]byte, bool, error) {
		dst = append(dst, '[')
		dst = n.write(dst)
		return append(dst, ']'), true, nil
	}
	r.toHub, r.fromHub = unwrap, wrap
	if spokeItem {
		r.toHub, r.fromHub = wrap, unwrap
	}
	return scoped(r, from), nil
}

// splitList returns the raw items of a valid JSON list.
func splitList(raw []byte) ([][]byte, error) {
	st := getState()
	defer putState(st)
	items, err := st.elements(raw)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(items))
	for i := range items {
		out[i] = append([]byte(nil), items[i].raw...)
	}
	return out, nil
}

// --- patterns -----------------------------------------------------------------

// Pattern is a string made of named fields and literal text, such as
// "{minute} {hour} {dayOfMonth} {month} {dayOfWeek}" or
// "{repository}:{tag:[^:/]+}". A field is {name} or {name:regexp} (Go
// regexp syntax; the default matches any text, as little as possible);
// {{ and }} are a literal brace. Two fields need literal text between them.
type Pattern struct {
	src    string
	fields []string // in order
	lits   []string // lits[i] precedes fields[i]; lits[len(fields)] ends
	re     *regexp.Regexp
	subs   []*regexp.Regexp // each field's own pattern, anchored
	// plain is set when every field takes any text: then the leftmost
	// match the regexp finds is found by looking for each literal in turn.
	plain bool
	blits [][]byte // lits, as bytes
}

// ParsePattern parses a pattern.
func ParsePattern(s string) (*Pattern, error) {
	p := &Pattern{src: s}
	var lit strings.Builder
	var re strings.Builder
	re.WriteString(`^(?s:`)
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "{{"):
			lit.WriteByte('{')
			i += 2
		case strings.HasPrefix(s[i:], "}}"):
			lit.WriteByte('}')
			i += 2
		case s[i] == '}':
			return nil, fmt.Errorf("pattern %q: } at offset %d closes nothing (write }} for a literal brace)", s, i)
		case s[i] == '{':
			end := fieldEnd(s, i)
			if end < 0 {
				return nil, fmt.Errorf("pattern %q: field at offset %d is not closed", s, i)
			}
			body := s[i+1 : end]
			i = end + 1
			name, expr, hasExpr := strings.Cut(body, ":")
			if !bareKey(name) || strings.ContainsAny(name, "{}:") {
				return nil, fmt.Errorf("pattern %q: field name %q is not a plain key", s, name)
			}
			if slices.Contains(p.fields, name) {
				return nil, fmt.Errorf("pattern %q: field %q appears twice", s, name)
			}
			if len(p.fields) > 0 && lit.Len() == 0 {
				return nil, fmt.Errorf("pattern %q: fields %q and %q need literal text between them", s, p.fields[len(p.fields)-1], name)
			}
			if !hasExpr {
				expr = ".*?"
			}
			sub, err := regexp.Compile(`^(?s:` + expr + `)$`)
			if err != nil {
				return nil, fmt.Errorf("pattern %q: field %q: %v", s, name, err)
			}
			if sub.NumSubexp() > 0 {
				return nil, fmt.Errorf("pattern %q: field %q: use (?:...) for groups inside a field", s, name)
			}
			p.lits = append(p.lits, lit.String())
			re.WriteString(regexp.QuoteMeta(lit.String()))
			lit.Reset()
			re.WriteString("(" + expr + ")")
			p.fields = append(p.fields, name)
			p.subs = append(p.subs, sub)
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if len(p.fields) == 0 {
		return nil, fmt.Errorf("pattern %q has no {field}", s)
	}
	p.lits = append(p.lits, lit.String())
	re.WriteString(regexp.QuoteMeta(lit.String()))
	re.WriteString(`)$`)
	for _, l := range p.lits {
		p.blits = append(p.blits, []byte(l))
	}
	p.plain = !strings.Contains(s, "{"+p.fields[0]+":")
	for _, f := range p.fields {
		if strings.Contains(s, "{"+f+":") {
			p.plain = false
		}
	}
	var err error
	if p.re, err = regexp.Compile(re.String()); err != nil {
		return nil, fmt.Errorf("pattern %q: %v", s, err)
	}
	return p, nil
}

// fieldEnd returns the index of the } closing the field at i, counting the
// braces of a regexp's repetitions ({2,3}).
func fieldEnd(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func (p *Pattern) String() string { return p.src }

// Fields returns the names of the pattern's fields, in order.
func (p *Pattern) Fields() []string { return slices.Clone(p.fields) }

// Split matches s and returns the value of each field, in order.
func (p *Pattern) Split(s string) ([]string, bool) {
	if p.plain {
		return p.splitPlain(s)
	}
	m := p.re.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	return m[1:], true
}

// splitPlain matches a pattern whose fields take any text, as the regexp
// would (see cutPlain).
func (p *Pattern) splitPlain(s string) ([]string, bool) {
	var buf [16]int
	at, ok := p.cutPlain([]byte(s), buf[:0])
	if !ok {
		return nil, false
	}
	vals := make([]string, len(p.fields))
	for i := range vals {
		vals[i] = s[at[2*i]:at[2*i+1]]
	}
	return vals, true
}

// cutPlain matches a pattern whose fields take any text as the regexp
// would: each field is as short as the rest allows, so it ends at the first
// occurrence of the literal after it; the last literal ends the string. It
// appends the start and end offsets of each field in s to at.
func (p *Pattern) cutPlain(s []byte, at []int) ([]int, bool) {
	if !bytes.HasPrefix(s, p.blits[0]) {
		return nil, false
	}
	i := len(p.blits[0])
	last := len(p.fields) - 1
	for f := 0; f < last; f++ {
		lit := p.blits[f+1]
		var j int
		if len(lit) == 1 {
			j = indexByteShort(s[i:], lit[0])
		} else {
			j = bytes.Index(s[i:], lit)
		}
		if j < 0 {
			return nil, false
		}
		at = append(at, i, i+j)
		i += j + len(lit)
	}
	end := len(s) - len(p.blits[last+1])
	if end < i || !bytes.HasSuffix(s, p.blits[last+1]) {
		return nil, false
	}
	return append(at, i, end), true
}

// indexByteShort is bytes.IndexByte, without its call for the first bytes:
// the fields of a pattern are mostly short.
func indexByteShort(s []byte, c byte) int {
	for i := 0; i < len(s) && i < 16; i++ {
		if s[i] == c {
			return i
		}
	}
	if len(s) <= 16 {
		return -1
	}
	if j := bytes.IndexByte(s[16:], c); j >= 0 {
		return 16 + j
	}
	return -1
}

// Join writes the fields' values (in order) into the pattern.
func (p *Pattern) Join(vals []string) string {
	var b strings.Builder
	for i, v := range vals {
		b.WriteString(p.lits[i])
		b.WriteString(v)
	}
	b.WriteString(p.lits[len(vals)])
	return b.String()
}

// Split converts the string in the spoke field from into an object in the
// hub field to, one member per field of the pattern (all strings, in the
// pattern's order). The inverse joins the members back into the string: a
// member that is missing takes its value from defaults (the string then
// comes back as the object was, from the preserved annotation); a member
// missing without a default, a member the pattern has no field for, a value
// that is not a string, or values that would not split back into
// themselves have no form in the spoke, and neither has a string the
// pattern does not match in the hub: otherwise says whether such a value
// fails the conversion or is kept in the preserved annotation.
func Split(from, to Path, pattern *Pattern, defaults map[string]string, otherwise Otherwise) (Rule, error) {
	return patternRule("split", from, to, pattern, defaults, otherwise, false)
}

// Join is Split the other way round: the spoke holds the object and the hub
// the string (image: {repository, tag} -> "{repository}:{tag}").
func Join(from, to Path, pattern *Pattern, defaults map[string]string, otherwise Otherwise) (Rule, error) {
	return patternRule("join", from, to, pattern, defaults, otherwise, true)
}

func patternRule(kind string, from, to Path, pattern *Pattern, defaults map[string]string, otherwise Otherwise, spokeObject bool) (Rule, error) {
	f, t, err := checkPair(kind, from, to)
	if err != nil {
		return nil, err
	}
	if pattern == nil {
		return nil, fmt.Errorf("%s %s: pattern is required", kind, from)
	}
	keep, err := checkOtherwise(kind, from, otherwise)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(defaults) {
		i := slices.Index(pattern.fields, k)
		if i < 0 {
			return nil, fmt.Errorf("%s %s: default for %q, which is not a field of pattern %q", kind, from, k, pattern.src)
		}
		if !pattern.subs[i].MatchString(defaults[k]) {
			return nil, fmt.Errorf("%s %s: default %q of field %q does not match the field's pattern", kind, from, defaults[k], k)
		}
	}
	r := &valueRule{kind: kind, from: f, to: t, detail: fmt.Sprintf("pattern %q", pattern.src), aside: keep}
	c := newPatternConv(pattern, defaults)
	r.toHub, r.fromHub = c.split, c.join
	if spokeObject {
		r.toHub, r.fromHub = c.join, c.split
	}
	return scoped(r, from), nil
}

// patternConv splits a string into an object by a pattern, and joins it
// back. A string and an object whose parts JSON writes as they are (no
// escapes, no byte encoding/json escapes) take a path that reads the bytes
// the scan recorded and writes straight into the conversion's memory; any
// other value, and every value that has no form on the other side, takes
// the general path, which says why.
type patternConv struct {
	p           *Pattern
	defaults    map[string]string
	quotedNames [][]byte
	dflt        [][]byte // each field's default, nil for none
	// pieces are what the fast split writes around the fields' values:
	// `{"name0":"`, then `","name1":"` and so on, then `"}`.
	pieces [][]byte
	// byteSeps is set when every literal between two fields is one byte:
	// a joined string then splits back into its fields exactly when no
	// field holds the byte that follows it.
	byteSeps bool
	// fast is set when the pattern's fields take any text and its
	// literals, names and defaults are written as they are.
	fast bool
}

// maxFastFields bounds the fields of the fast path's arrays.
const maxFastFields = 8

func newPatternConv(p *Pattern, defaults map[string]string) *patternConv {
	c := &patternConv{p: p, defaults: defaults, fast: p.plain && len(p.fields) <= maxFastFields}
	for _, name := range p.fields {
		q := quoteKey(name)
		c.quotedNames = append(c.quotedNames, q)
		c.fast = c.fast && len(q) == len(name)+2
	}
	for _, l := range p.blits {
		c.fast = c.fast && plainBytes(l)
	}
	for i, q := range c.quotedNames {
		sep := `",`
		if i == 0 {
			sep = `{`
		}
		c.pieces = append(c.pieces, fmt.Appendf(nil, "%s%s:\"", sep, q))
	}
	c.pieces = append(c.pieces, []byte(`"}`))
	c.byteSeps = true
	for _, l := range p.blits[1:len(p.fields)] {
		c.byteSeps = c.byteSeps && len(l) == 1
	}
	for _, name := range p.fields {
		var b []byte
		if d, ok := defaults[name]; ok {
			b = append([]byte{}, d...)
			c.fast = c.fast && plainBytes(b)
		}
		c.dflt = append(c.dflt, b)
	}
	return c
}

// plainBytes reports whether appendQuoted writes b (as a string) as it
// is, between quotes.
func plainBytes(b []byte) bool {
	for _, c := range b {
		if !plainByte(c) {
			return false
		}
	}
	return true
}

// split converts a string into the object of its fields.
func (c *patternConv) split(dst []byte, n node) ([]byte, bool, error) {
	if c.fast && n.kind() == '"' {
		if s := n.raw[1 : len(n.raw)-1]; plainBytes(s) {
			var buf [2 * maxFastFields]int
			if at, ok := c.p.cutPlain(s, buf[:0]); ok {
				for i, p := range c.pieces[:len(c.pieces)-1] {
					dst = append(dst, p...)
					dst = append(dst, s[at[2*i]:at[2*i+1]]...)
				}
				return append(dst, c.pieces[len(c.pieces)-1]...), true, nil
			}
		}
	}
	return c.splitSlow(dst, n)
}

func (c *patternConv) splitSlow(dst []byte, n node) ([]byte, bool, error) {
	s, ok := stringOf(n)
	if !ok {
		return nil, false, fmt.Errorf("value %s is %s, not a string", n.raw, describe(n))
	}
	vals, ok := c.p.Split(s)
	if !ok {
		return nil, false, asideErr("value %q does not match pattern %q", s, c.p.src)
	}
	dst = append(dst, '{')
	for i := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, c.quotedNames[i]...)
		dst = append(dst, ':')
		dst = appendQuoted(dst, vals[i])
	}
	return append(dst, '}'), true, nil
}

// join converts the object of the fields back into the string.
func (c *patternConv) join(dst []byte, n node) ([]byte, bool, error) {
	if c.fast && n.obj != nil && n.obj.t == nil { // all its members
		if out, exact, ok := c.joinFast(dst, n.obj); ok {
			return out, exact, nil
		}
	}
	return c.joinSlow(dst, n)
}

// joinFast joins an object the scan expanded whose keys are the fields,
// once each, and whose values are strings written as they are; it reports
// false for anything else, and for fields that would not split back into
// themselves, which joinSlow then explains.
func (c *patternConv) joinFast(dst []byte, o *objNode) ([]byte, bool, bool) {
	var vals [maxFastFields][]byte
	var set [maxFastFields]bool
	for k := range o.members {
		m := &o.members[k]
		if m.deleted {
			continue
		}
		i := c.field(m.rawKey)
		if i < 0 || set[i] || m.val.kind() != '"' {
			return nil, false, false
		}
		v := m.val.raw[1 : len(m.val.raw)-1]
		if !plainBytes(v) {
			return nil, false, false
		}
		vals[i], set[i] = v, true
	}
	exact := true
	for i := range c.p.fields {
		if set[i] {
			continue
		}
		if c.dflt[i] == nil {
			return nil, false, false
		}
		vals[i], exact = c.dflt[i], false
	}
	start := len(dst)
	dst = append(dst, '"')
	for i := range c.p.fields {
		dst = append(dst, c.p.blits[i]...)
		dst = append(dst, vals[i]...)
	}
	dst = append(dst, c.p.blits[len(c.p.fields)]...)
	dst = append(dst, '"')
	// It splits back into the same fields.
	if c.byteSeps {
		for i := range len(c.p.fields) - 1 {
			if indexByteShort(vals[i], c.p.blits[i+1][0]) >= 0 {
				return nil, false, false
			}
		}
		return dst, exact, true
	}
	s := dst[start+1 : len(dst)-1]
	var buf [2 * maxFastFields]int
	at, ok := c.p.cutPlain(s, buf[:0])
	if !ok {
		return nil, false, false
	}
	for i := range c.p.fields {
		if !bytes.Equal(s[at[2*i]:at[2*i+1]], vals[i]) {
			return nil, false, false
		}
	}
	return dst, exact, true
}

// field returns the index of the field whose quoted name is key, or -1.
func (c *patternConv) field(key []byte) int {
	for j, q := range c.quotedNames {
		if string(key) == string(q) {
			return j
		}
	}
	return -1
}

func (c *patternConv) joinSlow(dst []byte, n node) ([]byte, bool, error) {
	pattern := c.p
	st := getState()
	defer putState(st)
	n = node{raw: n.write(nil)}
	if ok, err := st.expand(&n); err != nil {
		return nil, false, err
	} else if !ok {
		return nil, false, fmt.Errorf("value is %s, not an object with fields %s", describe(n), strings.Join(pattern.fields, ", "))
	}
	vals := make([]string, len(pattern.fields))
	set := make([]bool, len(pattern.fields))
	exact := true
	for _, m := range n.obj.members {
		k := decodeKey(m.rawKey)
		i := slices.Index(pattern.fields, k)
		if i < 0 {
			return nil, false, asideErr("field %q is not in pattern %q", k, pattern.src)
		}
		s, ok := stringOf(m.val)
		if !ok {
			return nil, false, asideErr("field %q is %s, not a string", k, describe(m.val))
		}
		vals[i], set[i] = s, true
	}
	for i, name := range pattern.fields {
		if set[i] {
			continue
		}
		d, ok := c.defaults[name]
		if !ok {
			return nil, false, asideErr("field %q is missing and has no default", name)
		}
		vals[i], exact = d, false
	}
	s := pattern.Join(vals)
	if back, ok := pattern.Split(s); !ok || !slices.Equal(back, vals) {
		return nil, false, asideErr("fields %s join as %q, which does not split back into them (give the fields narrower patterns, such as {tag:[^:]+})", describeFields(pattern.fields, vals), s)
	}
	return appendQuoted(dst, s), exact, nil
}

func describeFields(names, vals []string) string {
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = fmt.Sprintf("%s=%q", names[i], vals[i])
	}
	return strings.Join(parts, " ")
}
