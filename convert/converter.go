package convert

import (
	"bytes"
	"fmt"
	"strings"
)

// Definition declares a hub and its spokes for one group and kind.
type Definition struct {
	Group, Kind string
	// Hub is the version every conversion goes through (usually the
	// storage version).
	Hub string
	// Spokes are the other versions, each with the rules that map it to
	// the hub.
	Spokes []Spoke
}

// Spoke is a version other than the hub, with the rules (spoke -> hub) that
// map it to the hub.
type Spoke struct {
	Version string
	Rules   []Rule
}

// Converter converts the objects of one group and kind between the versions
// of a Definition, through the hub. It is safe for concurrent use.

type Converter struct {
	group, kind, hub string
	versions         []string
	// apiVersions[i] is versions[i]'s apiVersion as a JSON string, the
	// value every conversion to it writes.
	apiVersions [][]byte
	spokes      map[string][]Rule
	trie        *trie
	// routes holds, for each pair of versions, the rules a conversion
	// from one to the other runs, in order: routes[from*n+to], from and
	// to indexes of versions (see route).
	routes [][]routeStep
	// plans holds the renames the scan may do, for each route (see
	// fusedPlans); nil when no route has any.
	plans [][]fusedRename
}

// New checks def and returns its Converter.
func New(def Definition) (*Converter, error) {
	if def.Group == "" || def.Kind == "" || def.Hub == "" {
		return nil, fmt.Errorf("definition needs a group, a kind and a hub version")
	}
	c := &Converter{group: def.Group, kind: def.Kind, hub: def.Hub, versions: []string{def.Hub}, spokes: map[string][]Rule{}, trie: &trie{}}
	c.trie.add(Path{segs: []string{"apiVersion"}})
	for _, s := range def.Spokes {
		if s.Version == "" {
			return nil, fmt.Errorf("a spoke has no version")
		}
		if s.Version == def.Hub {
			return nil, fmt.Errorf("version %s is the hub and cannot also be a spoke", s.Version)
		}
		if _, dup := c.spokes[s.Version]; dup {
			return nil, fmt.Errorf("spoke %s is declared twice", s.Version)
		}
		for i, r := range s.Rules {
			if r == nil {
				return nil, fmt.Errorf("spoke %s: rule %d is nil", s.Version, i)
			}
			if pr, ok := r.(pathRule); ok {
				for _, p := range pr.paths() {
					c.trie.add(p)
				}
			}
		}
		c.spokes[s.Version] = append([]Rule(nil), s.Rules...)
		c.versions = append(c.versions, s.Version)
	}
	for _, v := range c.versions {
		c.apiVersions = append(c.apiVersions, quoteKey(c.group+"/"+v))
	}
	for _, from := range c.versions {
		for _, to := range c.versions {
			c.routes = append(c.routes, c.route(from, to))
		}
	}
	plans := c.fusedPlans()
	for _, plan := range plans {
		if plan != nil {
			c.plans = plans
			break
		}
	}
	return c, nil
}

// Group returns the API group the converter serves.
func (c *Converter) Group() string { return c.group }

// Kind returns the kind the converter serves.
func (c *Converter) Kind() string { return c.kind }

// Hub returns the hub version.
func (c *Converter) Hub() string { return c.hub }

// Versions returns the hub, then the spokes in declaration order.
func (c *Converter) Versions() []string { return append([]string(nil), c.versions...) }

func (c *Converter) knownVersion(v string) bool {
	if v == c.hub {
		return true
	}
	_, ok := c.spokes[v]
	return ok
}

// checkAPIVersion splits an apiVersion of this converter's group.
func (c *Converter) checkAPIVersion(apiVersion string) (string, error) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "", fmt.Errorf("apiVersion %q: %w: %s objects are in group %s (versions %s)", apiVersion, ErrUnknownVersion, c.kind, c.group, strings.Join(c.versions, ", "))
	}
	if group != c.group {
		return "", fmt.Errorf("apiVersion %q: %w: group %q is not %q (versions %s)", apiVersion, ErrUnknownVersion, group, c.group, strings.Join(c.versions, ", "))
	}
	if !c.knownVersion(version) {
		return "", fmt.Errorf("apiVersion %q: %w: %s/%s declares versions %s", apiVersion, ErrUnknownVersion, c.group, c.kind, strings.Join(c.versions, ", "))
	}
	return version, nil
}

// Convert appends to dst the JSON of obj converted to toAPIVersion
// ("group/version") and returns the extended buffer. obj converted to its
// own version comes back byte for byte. Errors are *Error values.
//
// Only what the rules name changes: every other byte of metadata, status,
// unknown fields, number literals, string escapes and key order is copied
// from obj. Convert does no I/O and reads no clock: the same input gives the
// same output.
func (c *Converter) Convert(dst, obj []byte, toAPIVersion string) ([]byte, error) {
	st := getState()
	defer putState(st)
	out, err := c.convert(st, dst, obj, toAPIVersion)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func (c *Converter) convert(st *state, dst, obj []byte, to string) ([]byte, error) {
	st.p.reset(obj)
	st.p.fused = c.planFor(obj, to)
	root, err := st.p.parseDocument(c.trie)
	if err != nil {
		return nil, &Error{Index: -1, To: to, Err: err}
	}
	return c.convertTree(st, root, dst, obj, to)
}

// convertTree converts obj, parsed into root with st's parser.
func (c *Converter) convertTree(st *state, root node, dst, obj []byte, to string) ([]byte, error) {
	o := &st.obj
	*o = Object{st: st, root: root}
	var avNode node
	fail := func(err error) error {
		e, ok := err.(*Error)
		if !ok {
			e = &Error{Index: -1, Err: err}
		}
		e.From, _ = stringOf(avNode)
		e.To = to
		e.Namespace, e.Name = o.identity()
		return e
	}
	if root.obj == nil {
		return nil, &Error{Index: -1, To: to, Err: fmt.Errorf("the object is %s, not a JSON object", describe(root))}
	}
	av := root.obj.find("apiVersion")
	if av < 0 {
		return nil, fail(&Error{Index: -1, Pointer: "/apiVersion", Err: fmt.Errorf("the object has no apiVersion")})
	}
	avNode = root.obj.members[av].val
	fromVersion, ok := c.versionOf(avNode)
	if !ok {
		from, isString := stringOf(avNode)
		if !isString {
			return nil, fail(&Error{Index: -1, Pointer: "/apiVersion", Err: fmt.Errorf("apiVersion is %s, not a string", describe(avNode))})
		}
		_, err := c.checkAPIVersion(from)
		return nil, fail(&Error{Index: -1, Pointer: "/apiVersion", Err: err})
	}
	toVersion, err := c.checkAPIVersion(to)
	if err != nil {
		return nil, fail(err)
	}
	if k := root.obj.find("kind"); k < 0 {
		return nil, fail(&Error{Index: -1, Pointer: "/kind", Err: fmt.Errorf("the object has no kind")})
	} else if kv := root.obj.members[k].val; !rawStringIs(kv, c.kind) {
		return nil, fail(&Error{Index: -1, Pointer: "/kind", Err: fmt.Errorf("kind %s is not %s, the kind this converter serves", kv.raw, c.kind)})
	}
	if fromVersion == toVersion {
		return append(dst, obj...), nil
	}
	// The lists the scan renamed keys in: their objects are changed.
	for k := range st.p.fused {
		if st.p.fusedChanged&(1<<k) != 0 {
			if err := o.markPath(st.p.fused[k].at); err != nil {
				return nil, fail(err)
			}
		}
	}
	for _, s := range c.routes[c.versionIndex(fromVersion)*len(c.versions)+c.versionIndex(toVersion)] {
		st.ctxOK = false // the object the rule's expressions see: as the rules before it left it
		if s.dir == 0 {
			o.from, o.to = fromVersion, c.hub
			err = s.r.ToHub(o)
		} else {
			o.from, o.to = c.hub, toVersion
			err = s.r.FromHub(o)
		}
		if err != nil {
			return nil, fail(err)
		}
	}
	o.from, o.to = fromVersion, toVersion
	if err := o.flushPreserved(); err != nil {
		return nil, fail(err)
	}
	// apiVersion is the target (added back at the end if a Funcs rule
	// deleted it); kind stays.
	if err := o.set(apiVersionPath, node{raw: c.quotedAPIVersion(toVersion)}); err != nil {
		return nil, fail(err)
	}
	return o.root.write(dst), nil
}

var apiVersionPath = Path{segs: []string{"apiVersion"}}

// routeStep is a rule and the direction a route runs it in.
type routeStep struct {
	r   Rule
	dir int // 0: ToHub, 1: FromHub
}

// route returns the rules a conversion from version from to version to
// runs, in order: the spoke's rules to the hub, then the target spoke's
// rules back from the hub, last first. None from a version to itself.
func (c *Converter) route(from, to string) []routeStep {
	var steps []routeStep
	if from == to {
		return nil
	}
	if from != c.hub {
		for _, r := range c.spokes[from] {
			steps = append(steps, routeStep{r, 0})
		}
	}
	if to != c.hub {
		rules := c.spokes[to]
		for i := len(rules) - 1; i >= 0; i-- {
			steps = append(steps, routeStep{rules[i], 1})
		}
	}
	return steps
}

// quotedAPIVersion returns the apiVersion of version v, one of c's (as
// checkAPIVersion found), as a JSON string: the one New made, not quoted
// again for every object.
func (c *Converter) quotedAPIVersion(v string) []byte {
	if i := c.versionIndex(v); i >= 0 {
		q := c.apiVersions[i]
		return q[:len(q):len(q)]
	}
	return quoteKey(c.group + "/" + v) // not reached: v is one of c's
}

// versionOf returns the version of the apiVersion string n when it names
// this converter's group and one of its versions, without allocating.
func (c *Converter) versionOf(n node) (string, bool) {
	if n.kind() != '"' {
		return "", false
	}
	inner := n.raw[1 : len(n.raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		s, _ := stringOf(n)
		inner = []byte(s)
	}
	slash := bytes.IndexByte(inner, '/')
	if slash < 0 || string(inner[:slash]) != c.group {
		return "", false
	}
	v := inner[slash+1:]
	for _, known := range c.versions {
		if string(v) == known {
			return known, true
		}
	}
	return "", false
}

// rawStringIs reports whether n is the JSON string s.
func rawStringIs(n node, s string) bool { return n.kind() == '"' && keyIs(n.raw, s) }

// identity returns the namespace and name of the object, for errors.
func (o *Object) identity() (namespace, name string) {
	if n, _ := o.lookup(Path{segs: []string{"metadata", "namespace"}}); n != nil {
		namespace, _ = stringOf(*n)
	}
	if n, _ := o.lookup(Path{segs: []string{"metadata", "name"}}); n != nil {
		name, _ = stringOf(*n)
	}
	return namespace, name
}
