package apirules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// LabelKey reports why k cannot be a label key, as the API server judges
// it (a qualified name: an optional DNS subdomain prefix and a name of at
// most 63 characters), or nil.
func LabelKey(k string) error { return joined(validation.IsQualifiedName(k)) }

// LabelValue reports why v cannot be a label value, as the API server
// judges it (at most 63 characters, alphanumeric at both ends, '-', '_'
// and '.' between), or nil.
func LabelValue(v string) error { return joined(validation.IsValidLabelValue(v)) }

// AnnotationKey reports why k cannot be an annotation key, as the API
// server judges it (a qualified name once lowercased), or nil.
func AnnotationKey(k string) error {
	if msgs := validation.IsQualifiedName(strings.ToLower(k)); len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}
