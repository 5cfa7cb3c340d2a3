package convert

import (
	"fmt"
	"strings"
)

// Path names a field inside an object: a dotted path ("spec.placement.zone")
// or an RFC 6901 JSON pointer ("/spec/placement/zone"). The zero Path is the
// whole object.
type Path struct {
	segs []string
}

// ParsePath parses a dotted path or a JSON pointer. Dotted paths cannot name
// keys that contain dots; use a JSON pointer for those.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, fmt.Errorf("empty path")
	}
	var segs []string
	if strings.HasPrefix(s, "/") {
		for _, seg := range strings.Split(s[1:], "/") {
			if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(seg, "~0", ""), "~1", ""), "~") {
				return Path{}, fmt.Errorf("path %q: invalid ~ escape in %q (use ~0 for ~ and ~1 for /)", s, seg)
			}
			segs = append(segs, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
	} else {
		segs = strings.Split(s, ".")
		for _, seg := range segs {
			if seg == "" {
				return Path{}, fmt.Errorf("path %q: empty segment", s)
			}
			if strings.ContainsAny(seg, "[]*") {
				return Path{}, fmt.Errorf("path %q: list indexes and wildcards are not supported", s)
			}
		}
	}
	return Path{segs: segs}, nil
}

// PathOf returns the path of the given keys, outermost first (no escaping:
// a key may hold any character).
func PathOf(keys ...string) Path { return Path{segs: append([]string(nil), keys...)} }

// MustPath is ParsePath for paths known to be valid; it panics otherwise.
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Pointer returns the path as an RFC 6901 JSON pointer.
func (p Path) Pointer() string {
	var b strings.Builder
	for _, s := range p.segs {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// String returns the dotted form when every segment allows it, else the
// JSON pointer.
func (p Path) String() string {
	for _, s := range p.segs {
		if s == "" || strings.ContainsAny(s, "./~[]*") {
			return p.Pointer()
		}
	}
	return strings.Join(p.segs, ".")
}

// Segments returns the keys of the path, outermost first.
func (p Path) Segments() []string { return append([]string(nil), p.segs...) }

// Equal reports whether p and q name the same field.
func (p Path) Equal(q Path) bool {
	if len(p.segs) != len(q.segs) {
		return false
	}
	for i := range p.segs {
		if p.segs[i] != q.segs[i] {
			return false
		}
	}
	return true
}

// HasPrefix reports whether q is p or one of its ancestors.
func (p Path) HasPrefix(q Path) bool {
	if len(q.segs) > len(p.segs) {
		return false
	}
	for i := range q.segs {
		if p.segs[i] != q.segs[i] {
			return false
		}
	}
	return true
}

// commonPrefixLen returns how many leading segments p and q share.
func commonPrefixLen(p, q Path) int {
	n := 0
	for n < len(p.segs) && n < len(q.segs) && p.segs[n] == q.segs[n] {
		n++
	}
	return n
}

// checkRulePath refuses paths a conversion must not touch.
func checkRulePath(p Path) error {
	if len(p.segs) == 0 {
		return fmt.Errorf("a rule cannot name the whole object")
	}
	switch p.segs[0] {
	case "apiVersion", "kind":
		return fmt.Errorf("path %s: %s is set by the engine, not by rules", p, p.segs[0])
	case "metadata":
		return fmt.Errorf("path %s: the API server restores metadata (but labels and annotations) from the original object, so rules cannot move data in or out of it", p)
	}
	return nil
}
