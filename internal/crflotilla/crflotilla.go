// Package crflotilla is the controller-runtime baseline of hubspoke's
// benchmark of rules inside list items: the example.com Flotilla kind as
// typed Go structs (v1, the hub, and v1alpha1, whose ships call their image
// img and whose schedule is one cron string) and Converter, which converts
// one object the way controller-runtime's conversion webhook does (decode
// through the scheme's universal deserializer, ConvertTo/ConvertFrom through
// the hub, encode with encoding/json).
package crflotilla

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	flotillav1 "github.com/hubspoke/hubspoke/internal/crflotilla/v1"
	"github.com/hubspoke/hubspoke/internal/crflotilla/v1alpha1"
)

// Rules is the hubspoke rule file of the same conversion.
const Rules = `apiVersion: hubspoke.dev/v1alpha1
kind: Conversion
metadata: {name: flotillas.example.com}
spec:
  group: example.com
  kind: Flotilla
  hub: v1
  spokes:
  - version: v1alpha1
    rules:
    - rename:
        from: spec.ships[*].img
        to: spec.ships[*].image
    - split:
        from: spec.schedule
        pattern: "{minute} {hour} {dayOfMonth} {month} {dayOfWeek}"
`

// Converter converts Flotillas between versions with typed Go structs. It is
// safe for concurrent use.
type Converter struct {
	scheme  *runtime.Scheme
	decoder *crconversion.Decoder
}

// NewConverter returns a Converter.
func NewConverter() (*Converter, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{flotillav1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("register flotilla types: %w", err)
		}
	}
	return &Converter{scheme: s, decoder: crconversion.NewDecoder(s)}, nil
}

// Convert appends to dst the JSON of obj converted to toAPIVersion.
func (c *Converter) Convert(dst, obj []byte, toAPIVersion string) ([]byte, error) {
	src, gvk, err := c.decoder.Decode(obj)
	if err != nil {
		return dst, fmt.Errorf("decode flotilla: %w", err)
	}
	if gvk.GroupVersion().String() == toAPIVersion {
		return append(dst, obj...), nil
	}
	to := schema.FromAPIVersionAndKind(toAPIVersion, gvk.Kind)
	out, err := c.scheme.New(to)
	if err != nil {
		return dst, fmt.Errorf("allocate %s: %w", to, err)
	}
	out.GetObjectKind().SetGroupVersionKind(to)
	switch {
	case isHub(src):
		err = out.(conversion.Convertible).ConvertFrom(src.(conversion.Hub))
	case isHub(out):
		err = src.(conversion.Convertible).ConvertTo(out.(conversion.Hub))
	default:
		err = fmt.Errorf("%T is not convertible to %T", src, out)
	}
	if err != nil {
		return dst, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return dst, fmt.Errorf("encode %s: %w", to, err)
	}
	return append(dst, b...), nil
}

func isHub(o runtime.Object) bool { _, ok := o.(conversion.Hub); return ok }
