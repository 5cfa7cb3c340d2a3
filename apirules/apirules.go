package apirules

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// MaxAnnotationsBytes is the API server's limit on the total size of an
// object's annotations, keys plus values, in bytes
// (k8s.io/apimachinery/pkg/api/validation.TotalAnnotationSizeLimitB).
const MaxAnnotationsBytes = 256 * 1024

// Nesting limits of the API server's JSON decoder.
const (
	// MaxDepth is the deepest nesting the decoder accepts in a document.
	MaxDepth = jsonscan.MaxDepth
	// EnvelopeDepth is the nesting of a ConversionReview around each
	// object: the review, its response (or request), convertedObjects.
	EnvelopeDepth = jsonscan.EnvelopeDepth
	// MaxObjectDepth is the deepest an object in a review can nest, the
	// object itself counting as one level.
	MaxObjectDepth = MaxDepth - EnvelopeDepth
)

// Head is what the rules read of an object: the fields the API server
// compares with the original's and the metadata it takes from the
// response. Strings are decoded; all fields are nil when absent (or, for
// the strings, not strings).
type Head struct {
	APIVersion, Kind []byte
	// Metadata is true when the object has a metadata member that is not
	// null; MetadataNotObject when that member is not an object.
	Metadata, MetadataNotObject bool
	Name, Namespace, UID        []byte
	// Labels and Annotations are the raw JSON of metadata.labels and
	// metadata.annotations; nil when absent or null.
	Labels, Annotations []byte
}

// ReadHead checks that obj is one JSON object the API server decodes
// within a ConversionReview (grammar, numbers, UTF-8, nesting counted from
// the envelope) and returns its Head.
func ReadHead(obj []byte) (Head, error) { return readHead(obj, "the object") }

// readHead is ReadHead with errors naming the object as what.
func readHead(obj []byte, what string) (Head, error) {
	var s jsonscan.Scanner
	return ReadHeadWith(&s, obj, what)
}

// ReadHeadWith is ReadHead scanning with s (reset to obj), so that a
// caller checking many objects reuses its memory, and naming the object
// what in errors ("the converted object"). For hubspoke's own packages
// (the webhook's self-check).
func ReadHeadWith(s *jsonscan.Scanner, obj []byte, what string) (Head, error) {
	s.Reset(obj)
	var h Head
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) {
		return h, fmt.Errorf("%s is empty", what)
	}
	if obj[i] != '{' {
		if _, err := s.Value(i, EnvelopeDepth); err != nil {
			return h, fmt.Errorf("%s is not JSON the API server decodes: %w", what, err)
		}
		return h, fmt.Errorf("%s is %s, not a JSON object", what, jsonscan.Kind(obj[i]))
	}
	end, err := ScanHead(s, i, EnvelopeDepth+1, &h, false)
	if err != nil {
		return h, fmt.Errorf("%s is not JSON the API server decodes: %w", what, err)
	}
	if end = jsonscan.SkipSpace(obj, end); end != len(obj) {
		return h, fmt.Errorf("%s is not JSON the API server decodes: %w", what, jsonscan.Errorf(end, "unexpected data after the object"))
	}
	return h, nil
}

// ScanHead scans the object whose opening brace is at s.Data[i], at
// nesting depth depth, fills h and returns the offset after the object.
// Like the API server's decoder, the last of duplicate keys wins. With
// trusted, values the head does not hold are skipped without being checked
// (jsonscan's SkipTrusted): for bytes already checked, or written by a
// converter that writes valid JSON. It is the head reader of ReadHead and
// of package review's decoder, for hubspoke's own packages.
func ScanHead(s *jsonscan.Scanner, i, depth int, h *Head, trusted bool) (int, error) {
	skip := func(v, depth int) (int, error) {
		if trusted {
			if end, err := s.SkipTrusted(v, depth); err == nil {
				return end, nil
			}
		}
		return s.Value(v, depth)
	}
	str := func(dst *[]byte, v, depth int) (int, error) {
		str, end, ok, err := s.StringValue(v, depth)
		if ok {
			*dst = str
		} else {
			*dst = nil
		}
		return end, err
	}
	return s.Object(i, depth, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "apiVersion":
			return str(&h.APIVersion, v, depth)
		case "kind":
			return str(&h.Kind, v, depth)
		case "metadata":
			return ScanMetadata(s, v, depth, h, trusted)
		}
		return skip(v, depth)
	})
}

// ScanMetadata scans the value of an object's metadata member at
// s.Data[i], the object being at nesting depth depth, fills h's metadata
// fields (Metadata, MetadataNotObject, Name, Namespace, UID, Labels,
// Annotations) and returns the offset after the value. trusted is as for
// ScanHead. For hubspoke's own packages (ScanHead, and the engine's report
// of what it wrote).
func ScanMetadata(s *jsonscan.Scanner, i, depth int, h *Head, trusted bool) (int, error) {
	skip := func(v, depth int) (int, error) {
		if trusted {
			if end, err := s.SkipTrusted(v, depth); err == nil {
				return end, nil
			}
		}
		return s.Value(v, depth)
	}
	str := func(dst *[]byte, v, depth int) (int, error) {
		str, end, ok, err := s.StringValue(v, depth)
		if ok {
			*dst = str
		} else {
			*dst = nil
		}
		return end, err
	}
	d := s.Data
	h.Metadata, h.MetadataNotObject = true, false
	h.Name, h.Namespace, h.UID, h.Labels, h.Annotations = nil, nil, nil, nil, nil
	if i >= len(d) || d[i] != '{' {
		h.Metadata = !(i < len(d) && d[i] == 'n')
		h.MetadataNotObject = h.Metadata
		return skip(i, depth)
	}
	return s.Object(i, depth+1, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "name":
			return str(&h.Name, v, depth+1)
		case "namespace":
			return str(&h.Namespace, v, depth+1)
		case "uid":
			return str(&h.UID, v, depth+1)
		case "labels", "annotations":
			end, err := skip(v, depth+1)
			raw := d[v:end]
			if string(raw) == "null" {
				raw = nil
			}
			if key[0] == 'l' {
				h.Labels = raw
			} else {
				h.Annotations = raw
			}
			return end, err
		}
		return skip(v, depth+1)
	})
}

// Object checks converted, the JSON of the object a webhook returned for
// original, against every rule of the package (see the package doc), as
// the API server would for a review asking for desiredAPIVersion. It
// returns the first violation.
func Object(original, converted []byte, desiredAPIVersion string) error {
	in, err := readHead(original, "the original object")
	if err != nil {
		return err
	}
	out, err := readHead(converted, "the converted object")
	if err != nil {
		return err
	}
	return CheckHead(&in, &out, []byte(desiredAPIVersion))
}

// CheckHead applies the rules that compare a converted object's head with
// the original's: apiVersion, kind, name, namespace, uid, metadata, labels
// and annotations. It returns the first violation.
func CheckHead(original, converted *Head, desiredAPIVersion []byte) error {
	in, o := original, converted
	switch {
	case !bytes.Equal(o.APIVersion, desiredAPIVersion):
		if o.APIVersion == nil {
			return fmt.Errorf("the converted object has no apiVersion string, want %q", desiredAPIVersion)
		}
		return fmt.Errorf("the converted object has apiVersion %q, want %q", o.APIVersion, desiredAPIVersion)
	case !bytes.Equal(o.Kind, in.Kind):
		return fmt.Errorf("the converted object has kind %q, want %q", o.Kind, in.Kind)
	case !o.Metadata:
		return fmt.Errorf("the converted object has no metadata")
	case o.MetadataNotObject:
		return fmt.Errorf("the converted object's metadata is not an object")
	case !bytes.Equal(o.Name, in.Name):
		return fmt.Errorf("the converted object has metadata.name %q, want %q", o.Name, in.Name)
	case !bytes.Equal(o.Namespace, in.Namespace):
		return fmt.Errorf("the converted object has metadata.namespace %q, want %q", o.Namespace, in.Namespace)
	case !bytes.Equal(o.UID, in.UID):
		return fmt.Errorf("the converted object has metadata.uid %q, want %q", o.UID, in.UID)
	}
	if err := checkStringMap("labels", o.Labels, in.Labels, Labels); err != nil {
		return err
	}
	return checkStringMap("annotations", o.Annotations, in.Annotations, Annotations)
}

// NeedsMetadata reports whether converted, the head of an object a webhook
// converted from an original with head original, lacks the metadata object
// the API server requires of every converted object only because the
// original has none either. The API server's field manager sends such
// objects (server-side apply across versions converts the fields a manager
// owns, without metadata), and refuses an answer without metadata all the
// same ("missing metadata in converted object"); it then copies the
// original's metadata over the answer's (for an original without: an empty
// object) and keeps only the answer's labels and annotations. So a webhook
// completes such an object with an empty metadata object (EmptyMetadata):
// the object the API server ends with is then the one the converter wrote,
// with metadata {}. A converted object whose original has metadata gets no
// such help: it must carry the labels and annotations the API server would
// otherwise delete.
func NeedsMetadata(original, converted *Head) bool {
	return !original.Metadata && !original.MetadataNotObject && !converted.Metadata && !converted.MetadataNotObject
}

// EmptyMetadata is the metadata member a webhook adds to a converted object
// for which NeedsMetadata holds. After the object's other members (the last
// of duplicate keys winning, in the API server's decoder as in ReadHead), it
// also replaces a metadata that is null.
const EmptyMetadata = `"metadata":{}`

// checkStringMap checks a converted object's metadata.labels or
// metadata.annotations (raw JSON, nil when absent) as the API server's
// restoreObjectMeta does: an object of strings which, when it differs from
// the original's, must pass validate.
func checkStringMap(field string, got, orig []byte, validate func(map[string]string) error) error {
	if got == nil || bytes.Equal(got, orig) {
		return nil
	}
	if got[0] != '{' {
		return fmt.Errorf("the converted object's metadata.%s is %s, want an object of strings", field, jsonscan.Kind(got[0]))
	}
	m, err := stringMap(got)
	if err != nil {
		return fmt.Errorf("the converted object's metadata.%s: %w", field, err)
	}
	if orig != nil && orig[0] == '{' {
		if om, err := stringMap(orig); err == nil && sameMap(m, om) {
			return nil
		}
	}
	if err := validate(m); err != nil {
		return fmt.Errorf("the converted object's metadata.%s are invalid: %w", field, err)
	}
	return nil
}

// stringMap decodes a checked JSON object of strings; the last of
// duplicate keys wins.
func stringMap(raw []byte) (map[string]string, error) {
	var s jsonscan.Scanner
	s.Reset(raw)
	m := map[string]string{}
	_, err := s.Object(0, 1, func(key []byte, v int) (int, error) {
		str, end, ok, err := s.StringValue(v, 1)
		if err != nil {
			return end, err
		}
		if !ok {
			return end, fmt.Errorf("the value of %q is %s, want a string", key, jsonscan.Kind(raw[v]))
		}
		m[string(key)] = string(str)
		return end, nil
	})
	return m, err
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Labels checks labels as the API server does
// (k8s.io/apimachinery/pkg/apis/meta/v1/validation.ValidateLabels): every
// key a qualified name, every value a label value. The error lists every
// problem, keys in sorted order.
func Labels(labels map[string]string) error {
	var msgs []string
	for _, k := range sortedKeys(labels) {
		for _, m := range validation.IsQualifiedName(k) {
			msgs = append(msgs, fmt.Sprintf("key %q: %s", k, m))
		}
		for _, m := range validation.IsValidLabelValue(labels[k]) {
			msgs = append(msgs, fmt.Sprintf("value %q of key %q: %s", labels[k], k, m))
		}
	}
	return joined(msgs)
}

// Annotations checks annotations as the API server does
// (k8s.io/apimachinery/pkg/api/validation.ValidateAnnotations): every key
// a qualified name once lowercased, and keys plus values at most
// MaxAnnotationsBytes in total.
func Annotations(annotations map[string]string) error {
	var msgs []string
	for _, k := range sortedKeys(annotations) {
		for _, m := range validation.IsQualifiedName(strings.ToLower(k)) {
			msgs = append(msgs, fmt.Sprintf("key %q: %s", k, m))
		}
	}
	if total := annotationsSize(annotations); total > MaxAnnotationsBytes {
		msgs = append(msgs, fmt.Sprintf("total size %d bytes exceeds the limit of %d bytes", total, MaxAnnotationsBytes))
	}
	return joined(msgs)
}

// annotationsSize is the size the API server counts against
// MaxAnnotationsBytes: the bytes of every key and every value.
func annotationsSize(annotations map[string]string) int {
	total := 0
	for k, v := range annotations {
		total += len(k) + len(v)
	}
	return total
}

// AnnotationsSize returns the size the API server counts against
// MaxAnnotationsBytes for raw, the JSON of metadata.annotations: the bytes
// of every key and every value, decoded, the last of duplicate keys
// counting once. null counts 0; anything but an object of strings is an
// error.
func AnnotationsSize(raw []byte) (int, error) {
	i := jsonscan.SkipSpace(raw, 0)
	if i < len(raw) && raw[i] == 'n' && string(raw[i:]) == "null" {
		return 0, nil
	}
	if i >= len(raw) || raw[i] != '{' {
		if i >= len(raw) {
			return 0, fmt.Errorf("metadata.annotations is empty, want an object of strings")
		}
		return 0, fmt.Errorf("metadata.annotations is %s, want an object of strings", jsonscan.Kind(raw[i]))
	}
	z := sizers.Get().(*sizer)
	defer z.release()
	size, err := z.size(raw[i:])
	if err != nil {
		return 0, fmt.Errorf("metadata.annotations: %w", err)
	}
	return size, nil
}

// sizer is what AnnotationsSize needs, pooled: it runs on every
// conversion that keeps a value, and counts without building the map
// stringMap would.
type sizer struct {
	s    jsonscan.Scanner
	keys []sizedKey
	buf  []byte // an escaped value, decoded
}

// sizedKey is a member of the annotations: its decoded key (a sub-slice
// of the document, or a copy when escaped) and its value's decoded size.
type sizedKey struct {
	key  []byte
	size int
}

var sizers = sync.Pool{New: func() any { return new(sizer) }}

func (z *sizer) release() {
	clear(z.keys)
	z.keys = z.keys[:0]
	z.s.Trim()
	if cap(z.buf) > MaxAnnotationsBytes {
		z.buf = nil
	}
	sizers.Put(z)
}

// size is annotationsSize(stringMap(raw)) without the map: the decoded
// bytes of every key and value, the last of duplicate keys counting once,
// with stringMap's errors.
func (z *sizer) size(raw []byte) (int, error) {
	z.s.Reset(raw)
	_, err := z.s.Object(0, 1, func(key []byte, v int) (int, error) {
		if v >= len(raw) || raw[v] != '"' {
			end, err := z.s.Value(v, 1)
			if err != nil {
				return end, err
			}
			return end, fmt.Errorf("the value of %q is %s, want a string", key, jsonscan.Kind(raw[v]))
		}
		end, escaped, err := z.s.String(v)
		if err != nil {
			return end, err
		}
		n := end - v - 2
		if escaped {
			z.buf = jsonscan.Unquote(z.buf[:0], raw[v+1:end-1])
			n = len(z.buf)
		}
		z.keys = append(z.keys, sizedKey{key: key, size: n})
		return end, nil
	})
	if err != nil {
		return 0, err
	}
	// In key order, duplicates in the order they came (a stable sort):
	// the last of each run counts.
	ks := z.keys
	slices.SortStableFunc(ks, func(a, b sizedKey) int { return bytes.Compare(a.key, b.key) })
	total := 0
	for i := range ks {
		if i+1 < len(ks) && bytes.Equal(ks[i].key, ks[i+1].key) {
			continue
		}
		total += len(ks[i].key) + ks[i].size
	}
	return total, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joined(msgs []string) error {
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// Number reports whether the API server can decode lit, a JSON number
// literal: it decodes an integer literal as an int64 when it fits and
// every other number as a float64, and fails the whole response on a
// literal whose magnitude overflows float64 (1e400, a 400-digit integer).
func Number(lit []byte) error {
	if len(lit) == 0 {
		return fmt.Errorf("an empty literal is not a JSON number")
	}
	if _, err := jsonscan.Number(lit, 0); err != nil {
		if se, ok := err.(*jsonscan.SyntaxError); ok {
			return fmt.Errorf("%s", se.Msg)
		}
		return err
	}
	if end, _ := jsonscan.Number(lit, 0); end != len(lit) {
		return fmt.Errorf("%q is not a JSON number", lit)
	}
	return jsonscan.CheckNumber(lit)
}
