package explain

import (
	"regexp"
	"sort"
	"strings"
)

// Explanation is one recognised error in a message.
type Explanation struct {
	// ID names the message kind, e.g. "x509-unknown-authority".
	ID string `json:"id"`
	// Title is a one-line summary.
	Title string `json:"title"`
	// Match is the part of the input that was recognised.
	Match string `json:"match"`
	// Cause says what is wrong, with the names the message gave.
	Cause string `json:"cause"`
	// Fixes are the likely fixes, most likely first.
	Fixes []string `json:"fixes"`
	// Check is the `hubspoke doctor` check that confirms the cause.
	Check string `json:"check"`
	// Source is the code that writes the message.
	Source string `json:"source"`
	// Fields are the values taken from the message (service, gvk, ...).
	Fields map[string]string `json:"fields,omitempty"`

	start, end int
}

// Explain recognises the errors in msg and returns their explanations, the
// innermost (the root cause) first; nil if none is recognised. Each kind
// of message is reported once, at its first occurrence.
func Explain(msg string) []Explanation {
	var out []Explanation
	for i := range table {
		e := &table[i]
		m := e.re.FindStringSubmatchIndex(msg)
		if m == nil {
			continue
		}
		x := Explanation{ID: e.id, Title: e.title, Match: msg[m[0]:m[1]], Check: e.check, Source: e.source, start: m[0], end: m[1]}
		for j, name := range e.re.SubexpNames() {
			if name != "" && m[2*j] >= 0 {
				if x.Fields == nil {
					x.Fields = map[string]string{}
				}
				x.Fields[name] = msg[m[2*j]:m[2*j+1]]
			}
		}
		x.Cause = string(e.re.ExpandString(nil, e.cause, msg, m))
		for _, f := range e.fixes {
			x.Fixes = append(x.Fixes, string(e.re.ExpandString(nil, f, msg, m)))
		}
		out = append(out, x)
	}
	out = dropReplaced(out)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start > out[j].start
		}
		return out[i].end-out[i].start < out[j].end-out[j].start
	})
	// A wrapper that holds a recognised error names the context, not the
	// cause: say so instead of its stand-alone reading.
	for i := range out {
		e := entryByID[out[i].ID]
		if e.wrapped == "" {
			continue
		}
		for j := range out {
			if j != i && out[j].start > out[i].start && out[j].start < out[i].end {
				out[i].Cause = string(e.re.ExpandString(nil, e.wrapped, out[i].Match, e.re.FindStringSubmatchIndex(out[i].Match)))
				out[i].Fixes = nil
				break
			}
		}
	}
	for i := range out {
		out[i].start, out[i].end = 0, 0
	}
	return out
}

// dropReplaced removes explanations that a more specific one, also
// matched, replaces.
func dropReplaced(xs []Explanation) []Explanation {
	gone := map[string]bool{}
	for _, x := range xs {
		for _, r := range entryByID[x.ID].replaces {
			gone[r] = true
		}
	}
	out := xs[:0]
	for _, x := range xs {
		if !gone[x.ID] {
			out = append(out, x)
		}
	}
	return out
}

// IDs returns the ID of every message kind Explain knows, in table order.
func IDs() []string {
	ids := make([]string, len(table))
	for i, e := range table {
		ids[i] = e.id
	}
	return ids
}

// Checks returns every doctor check the table refers to, sorted.
func Checks() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range table {
		if !seen[e.check] {
			seen[e.check] = true
			out = append(out, e.check)
		}
	}
	sort.Strings(out)
	return out
}

// Lookup returns the explanation of a message kind without a message
// (its fields unexpanded), and whether the ID is known.
func Lookup(id string) (Explanation, bool) {
	e, ok := entryByID[id]
	if !ok {
		return Explanation{}, false
	}
	return Explanation{ID: e.id, Title: e.title, Cause: e.cause, Fixes: e.fixes, Check: e.check, Source: e.source}, true
}

// entry is one kind of message.
type entry struct {
	id, title string
	re        *regexp.Regexp
	// cause and fixes are regexp.Expand templates over re's groups.
	cause string
	fixes []string
	// wrapped replaces cause when another recognised error lies inside
	// this one's match (the wrapper is then context, not the cause).
	wrapped string
	check   string
	source  string
	// replaces lists less specific entries this one overrides.
	replaces []string
}

var entryByID = func() map[string]*entry {
	m := make(map[string]*entry, len(table))
	for i := range table {
		e := &table[i]
		if m[e.id] != nil {
			panic("explain: duplicate id " + e.id)
		}
		m[e.id] = e
	}
	return m
}()

// pattern turns a Go format string into a regexp: the format's literal
// text is quoted, each verb becomes the next group in groups. It keeps the
// table's patterns visibly the format strings of the source.
func pattern(format string, groups ...string) *regexp.Regexp {
	var b strings.Builder
	g := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteString(regexp.QuoteMeta(string(c)))
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			b.WriteString("%")
			continue
		}
		if g >= len(groups) {
			panic("explain: pattern " + format + ": more verbs than groups")
		}
		b.WriteString(groups[g])
		g++
	}
	if g != len(groups) {
		panic("explain: pattern " + format + ": more groups than verbs")
	}
	return regexp.MustCompile(b.String())
}

// crdNamePatterns find the CRD a message is about, where it says so.
var crdNamePatterns = []*regexp.Regexp{
	// an invalid CRD, as the API server (apierrors.NewInvalid) and kubectl say it
	regexp.MustCompile(`CustomResourceDefinition(?:\.apiextensions\.k8s\.io)? "([a-z0-9-]+\.[a-z0-9.-]+)"`),
	// a LIST whose objects could not be read (k8s.io/apiserver/pkg/storage/etcd3)
	regexp.MustCompile(`failed to read one or more ([a-z0-9-]+\.[a-z0-9.-]+) from the storage`),
	// the webhook client's name for a conversion webhook (webhook_converter.go)
	regexp.MustCompile(`conversion_webhook_for_([a-z0-9-]+\.[a-z0-9.-]+)`),
	// a stored object's key: /registry/GROUP/PLURAL/...
	regexp.MustCompile(`/registry/([a-z0-9-]+\.[a-z0-9.-]+)/([a-z0-9-]+)/`),
}

// CRDName returns the name (plural.group) of the CRD msg is about, when
// the message says, or "".
func CRDName(msg string) string {
	for i, re := range crdNamePatterns {
		m := re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		if i == len(crdNamePatterns)-1 {
			return m[2] + "." + m[1]
		}
		return m[1]
	}
	return ""
}
