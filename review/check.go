package review

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hubspoke/hubspoke/internal/stopbits"
)

// TotalAnnotationSizeLimit is the API server's limit on the total size of an
// object's annotations (keys plus values), in bytes.
const TotalAnnotationSizeLimit = 256 * 1024

// selfCheck checks the converted object out against the original in and
// the rules the API server applies to a conversion webhook's response
// (k8s.io/apiextensions-apiserver/pkg/apiserver/conversion): valid JSON
// object, apiVersion equal to desired, same kind, name, namespace and uid,
// metadata present, labels and annotations string maps that, when changed,
// are valid and within the size limit. It returns the first violation.
// With trusted (the output of *convert.Converter, valid JSON by
// construction) only the object's top level and metadata are validated,
// and marks holds memory for the stop bits of out.
func selfCheck(out []byte, in *object, desired []byte, trusted bool, marks *[]uint64) error {
	var o object
	i := skipSpace(out, 0)
	if i >= len(out) || out[i] != '{' {
		if i >= len(out) {
			return fmt.Errorf("the converted object is empty")
		}
		return fmt.Errorf("the converted object is %s, not an object", valueKind(out[i]))
	}
	if trusted {
		*marks = stopbits.Append((*marks)[:0], out)
	}
	end, err := scanObject(out, *marks, i, 1, &o, trusted)
	if err != nil {
		return fmt.Errorf("the converted object is not valid JSON: %w", err)
	}
	if end = skipSpace(out, end); end != len(out) {
		return fmt.Errorf("the converted object is not valid JSON: %w", errAt(end, "unexpected data after the object"))
	}
	switch {
	case !bytes.Equal(o.apiVersion, desired):
		return fmt.Errorf("the converted object has apiVersion %q, want %q", o.apiVersion, desired)
	case !bytes.Equal(o.kind, in.kind):
		return fmt.Errorf("the converted object has kind %q, want %q", o.kind, in.kind)
	case !o.meta.present:
		return fmt.Errorf("the converted object has no metadata")
	case o.meta.notObject:
		return fmt.Errorf("the converted object's metadata is not an object")
	case !bytes.Equal(o.meta.name, in.meta.name):
		return fmt.Errorf("the converted object has metadata.name %q, want %q", o.meta.name, in.meta.name)
	case !bytes.Equal(o.meta.namespace, in.meta.namespace):
		return fmt.Errorf("the converted object has metadata.namespace %q, want %q", o.meta.namespace, in.meta.namespace)
	case !bytes.Equal(o.meta.uid, in.meta.uid):
		return fmt.Errorf("the converted object has metadata.uid %q, want %q", o.meta.uid, in.meta.uid)
	}
	if err := checkStringMap("labels", o.meta.labels, in.meta.labels, labelErrors); err != nil {
		return err
	}
	return checkStringMap("annotations", o.meta.annotations, in.meta.annotations, annotationErrors)
}

// checkStringMap checks a converted object's metadata.labels or
// metadata.annotations (raw JSON, nil when absent) like the API server's
// restoreObjectMeta: a map of strings which, when it differs from the
// original's, must pass validate.
func checkStringMap(field string, got, orig []byte, validate func(keys, values []string) []string) error {
	if got == nil || bytes.Equal(got, orig) {
		return nil
	}
	if got[0] != '{' {
		return fmt.Errorf("the converted object's metadata.%s is %s, want an object of strings", field, valueKind(got[0]))
	}
	keys, values, err := stringMap(got)
	if err != nil {
		return fmt.Errorf("the converted object's metadata.%s: %w", field, err)
	}
	if orig != nil && orig[0] == '{' {
		okeys, ovalues, err := stringMap(orig)
		if err == nil && sameMap(keys, values, okeys, ovalues) {
			return nil
		}
	}
	if msgs := validate(keys, values); len(msgs) > 0 {
		return fmt.Errorf("the converted object's metadata.%s are invalid: %s", field, strings.Join(msgs, "; "))
	}
	return nil
}

// stringMap decodes a JSON object of strings; the last of duplicate keys
// wins.
func stringMap(raw []byte) (keys, values []string, err error) {
	idx := map[string]int{}
	_, err = eachMember(raw, 0, 1, func(key []byte, v int) (int, error) {
		s, end, ok, err := stringValue(raw, v, 1)
		if err != nil {
			return end, err
		}
		if !ok {
			return end, fmt.Errorf("value of %q is %s, want a string", key, valueKind(raw[v]))
		}
		if j, dup := idx[string(key)]; dup {
			values[j] = string(s)
			return end, nil
		}
		idx[string(key)] = len(keys)
		keys = append(keys, string(key))
		values = append(values, string(s))
		return end, nil
	})
	return keys, values, err
}

func sameMap(keys, values, okeys, ovalues []string) bool {
	if len(keys) != len(okeys) {
		return false
	}
	orig := make(map[string]string, len(okeys))
	for i, k := range okeys {
		orig[k] = ovalues[i]
	}
	for i, k := range keys {
		if v, ok := orig[k]; !ok || v != values[i] {
			return false
		}
	}
	return true
}

// labelErrors mirrors k8s.io/apimachinery's metav1validation.ValidateLabels.
func labelErrors(keys, values []string) []string {
	var msgs []string
	for i, k := range keys {
		for _, m := range validation.IsQualifiedName(k) {
			msgs = append(msgs, fmt.Sprintf("key %q: %s", k, m))
		}
		for _, m := range validation.IsValidLabelValue(values[i]) {
			msgs = append(msgs, fmt.Sprintf("value %q of key %q: %s", values[i], k, m))
		}
	}
	return msgs
}

// annotationErrors mirrors k8s.io/apimachinery's
// apivalidation.ValidateAnnotations.
func annotationErrors(keys, values []string) []string {
	var msgs []string
	total := 0
	for i, k := range keys {
		for _, m := range validation.IsQualifiedName(strings.ToLower(k)) {
			msgs = append(msgs, fmt.Sprintf("key %q: %s", k, m))
		}
		total += len(k) + len(values[i])
	}
	if total > TotalAnnotationSizeLimit {
		msgs = append(msgs, fmt.Sprintf("total size %d bytes exceeds the limit of %d bytes", total, TotalAnnotationSizeLimit))
	}
	return msgs
}
