package explain

import (
	"regexp"
	"sort"
	"strings"
)

// Class says where a failure happened, as the API server sees it. The
// conversion webhook client counts its failures in
// apiserver_conversion_webhook_request_total by failure_type; an
// Explanation gives that label too (FailureType) when the message is one
// the client writes.
type Class string

// The classes, in the order a conversion goes through them.
const (
	// ClassCRD: the CRD itself is refused or configured so that no
	// conversion can work (validation errors, storedVersions, strategy).
	ClassCRD Class = "crd"
	// ClassCall: the call to the webhook failed before a ConversionReview
	// came back: the Service could not be resolved, the connection failed
	// or timed out, or the webhook answered an HTTP error instead.
	ClassCall Class = "call"
	// ClassTLS: the TLS handshake failed, or the API server refused the
	// webhook's certificate (crypto/x509's verification errors).
	ClassTLS Class = "tls"
	// ClassResponse: an answer came back but is not a ConversionReview the
	// API server accepts: not JSON, empty, another kind or version, a
	// wrong uid, no response, a wrong number of objects.
	ClassResponse Class = "response"
	// ClassRefused: the webhook refused the conversion itself
	// (result.status Failure), with its own message.
	ClassRefused Class = "refused"
	// ClassObject: a converted object breaks the API server's rules
	// (apiVersion, kind, name, namespace, uid, labels, annotations).
	ClassObject Class = "object"
	// ClassStorage: the API server could not read a stored object.
	ClassStorage Class = "storage"
	// ClassDiscovery: the API server serves no such resource or kind, or
	// its discovery is incomplete; what follows a CRD that is not
	// Established (an invalid caBundle) or a version not served.
	ClassDiscovery Class = "discovery"
	// ClassWebhookLog: a message from the webhook's own log, about the
	// other side of a connection (the API server, a probe, a scanner).
	// The same words mean the opposite on the API server's side.
	ClassWebhookLog Class = "webhook-log"
)

// Classes lists every class in order.
var Classes = []Class{ClassCRD, ClassCall, ClassTLS, ClassResponse, ClassRefused, ClassObject, ClassStorage, ClassDiscovery, ClassWebhookLog}

// The failure_type label values of apiserver_conversion_webhook_request_total
// (k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/metrics.go).
const (
	FailureCall                   = "conversion_webhook_call_failure"
	FailureMalformedResponse      = "conversion_webhook_malformed_response_failure"
	FailurePartialResponse        = "conversion_webhook_partial_response_failure"
	FailureInvalidConvertedObject = "conversion_webhook_invalid_converted_object_failure"
)

// Explanation is one recognised error in a message.
type Explanation struct {
	// ID names the message kind, e.g. "x509-unknown-authority".
	ID string `json:"id"`
	// Class says where the failure happened.
	Class Class `json:"class"`
	// FailureType is the failure_type the API server counts this failure
	// under in apiserver_conversion_webhook_request_total, when it does.
	FailureType string `json:"failureType,omitempty"`
	// Title is a one-line summary.
	Title string `json:"title"`
	// Match is the part of the input that was recognised (after JSON
	// escapes are undone and wrapped lines joined where needed).
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
//
// msg may be pasted as users find it: with kubectl's prefixes, JSON-escaped
// inside a controller's structured log line (each level of escaping is
// undone), or wrapped over several lines (at a space, or in the middle of
// a word: a kind not found in the lines as they are is looked for in the
// lines joined).
func Explain(msg string) []Explanation {
	text := unescape(msg)
	out := explainText(text)
	if strings.Contains(text, "\n") {
		seen := map[string]bool{}
		for _, x := range out {
			seen[x.ID] = true
		}
		for _, x := range explainText(joinLines(text)) {
			if !seen[x.ID] {
				x.start = -1 // after every match of the text as it is
				out = append(out, x)
			}
		}
		out = dropReplaced(out)
	}
	for i := range out {
		out[i].start, out[i].end = 0, 0
	}
	return out
}

func explainText(msg string) []Explanation {
	var out []Explanation
	for i := range table {
		e := &table[i]
		m := e.re.FindStringSubmatchIndex(msg)
		if m == nil {
			continue
		}
		x := Explanation{ID: e.id, Class: e.class, FailureType: e.failure, Title: e.title, Match: msg[m[0]:m[1]], Check: e.check, Source: e.source, start: m[0], end: m[1]}
		fields := map[string]string{}
		for j, name := range e.re.SubexpNames() {
			if name != "" && m[2*j] >= 0 {
				fields[name] = cleanField(msg[m[2*j]:m[2*j+1]])
			}
		}
		if len(fields) > 0 {
			x.Fields = fields
		}
		x.Cause = expand(e.cause, fields)
		for _, f := range e.fixes {
			x.Fixes = append(x.Fixes, expand(f, fields))
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
				out[i].Cause = expand(e.wrapped, out[i].Fields)
				out[i].Fixes = nil
				break
			}
		}
	}
	return out
}

// expand replaces ${name} in template with the field's value.
func expand(template string, fields map[string]string) string {
	if !strings.Contains(template, "${") {
		return template
	}
	var b strings.Builder
	for {
		i := strings.Index(template, "${")
		if i < 0 {
			b.WriteString(template)
			return b.String()
		}
		j := strings.IndexByte(template[i:], '}')
		if j < 0 {
			b.WriteString(template)
			return b.String()
		}
		b.WriteString(template[:i])
		b.WriteString(fields[template[i+2:i+j]])
		template = template[i+j+1:]
	}
}

// cleanField trims from a value taken from a message what the message's
// surroundings left on it: spaces, a trailing ; or , or ., a quote or
// bracket that closes something opened before the value ("}, `) or **
// of Markdown.
func cleanField(s string) string {
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			return s
		}
		c := s[len(s)-1]
		trim := false
		switch c {
		case ';', ',', '.', '*', '`', '\\':
			trim = true
		case '"', '\'':
			trim = strings.Count(s, string(c))%2 == 1
		case ')', ']', '}':
			open := map[byte]byte{')': '(', ']': '[', '}': '{'}[c]
			trim = strings.Count(s, string(open)) < strings.Count(s, string(c))
		}
		if !trim {
			return s
		}
		s = s[:len(s)-1]
	}
}

// unescape undoes the JSON string escaping of a message copied from a
// structured log line ({"error":"... \"x\" ..."}), once per level of
// nesting; text without an escaped quote is left as it is.
func unescape(s string) string {
	for range 3 {
		if !strings.Contains(s, `\"`) {
			return s
		}
		var b strings.Builder
		b.Grow(len(s))
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c != '\\' || i+1 == len(s) {
				b.WriteByte(c)
				continue
			}
			switch n := s[i+1]; n {
			case '"', '\\', '/':
				b.WriteByte(n)
				i++
			case 'n':
				b.WriteByte('\n')
				i++
			case 't':
				b.WriteByte('\t')
				i++
			case 'u':
				if i+6 <= len(s) {
					if r, ok := hexRune(s[i+2 : i+6]); ok {
						b.WriteRune(r)
						i += 5
						continue
					}
				}
				b.WriteByte(c)
			default:
				b.WriteByte(c)
			}
		}
		s = b.String()
	}
	return s
}

func hexRune(h string) (rune, bool) {
	var r rune
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// joinLines undoes a wrap in the middle of a word: line breaks (and \r)
// are removed.
func joinLines(s string) string {
	return strings.NewReplacer("\r\n", "", "\n", "", "\r", "").Replace(s)
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
	return Explanation{ID: e.id, Class: e.class, FailureType: e.failure, Title: e.title, Cause: e.cause, Fixes: e.fixes, Check: e.check, Source: e.source}, true
}

// Unrecognised is what to say of a message in which nothing is
// recognised: no cause is asserted.
const Unrecognised = "explain recognises no error in this message: it knows the messages of the API server's conversion path (the CRD, the Service, the connection, TLS, the ConversionReview, the converted objects, discovery), of Go's TLS and network stack and of a webhook's TLS log (hubspoke explain --list), and this is none of them. It asserts no cause: run hubspoke doctor CRD-NAME, which checks every step live."

// entry is one kind of message.
type entry struct {
	id, title string
	class     Class
	failure   string // apiserver_conversion_webhook_request_total's failure_type
	re        *regexp.Regexp
	// cause and fixes are templates over re's named groups: ${name}.
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
// text is quoted (a space matching any run of white space, so that a
// message wrapped at a space still matches), each verb becomes the next
// group in groups. It keeps the table's patterns visibly the format
// strings of the source.
func pattern(format string, groups ...string) *regexp.Regexp {
	var b strings.Builder
	g := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == ' ' {
			b.WriteString(`\s+`)
			continue
		}
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

// spaced compiles a regexp whose literal spaces match any run of white
// space, as pattern's do.
func spaced(re string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(re, " ", `\s+`))
}

// crdNamePatterns find the CRD a message is about, where it says so.
var crdNamePatterns = []*regexp.Regexp{
	// an invalid CRD, as the API server (apierrors.NewInvalid) and kubectl say it
	regexp.MustCompile(`CustomResourceDefinition(?:\.apiextensions\.k8s\.io)?\s+"([a-z0-9-]+\.[a-z0-9.-]+)"`),
	// a LIST whose objects could not be read (k8s.io/apiserver/pkg/storage/etcd3)
	regexp.MustCompile(`failed to read one or more ([a-z0-9-]+\.[a-z0-9.-]+) from the storage`),
	// the watch cache of a resource (k8s.io/apiserver/pkg/storage/cacher)
	regexp.MustCompile(`cacher \(([a-z0-9-]+\.[a-z0-9.-]+)\)`),
	// the webhook client's name for a conversion webhook (webhook_converter.go)
	regexp.MustCompile(`conversion_webhook_for_([a-z0-9-]+\.[a-z0-9.-]+)`),
	// knative's conversion webhook controller
	regexp.MustCompile(`custom resource "([a-z0-9-]+\.[a-z0-9.-]+)"`),
	// a stored object's key: /registry/GROUP/PLURAL/... (a GET's error
	// gives it without /registry)
	regexp.MustCompile(`(?:/registry|Key:)\s*/([a-z0-9-]+\.[a-z0-9.-]+)/([a-z0-9-]+)/`),
}

// CRDName returns the name (plural.group) of the CRD msg is about, when
// the message says, or "".
func CRDName(msg string) string {
	text := unescape(msg)
	for _, t := range []string{text, joinLines(text)} {
		for i, re := range crdNamePatterns {
			m := re.FindStringSubmatch(t)
			if m == nil {
				continue
			}
			if i == len(crdNamePatterns)-1 {
				return m[2] + "." + m[1]
			}
			return m[1]
		}
	}
	return ""
}
