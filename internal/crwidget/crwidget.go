// Package crwidget is the controller-runtime baseline for hubspoke's
// benchmarks: the example.com Widget kind as typed Go structs (packages v1,
// the hub, and v1alpha1, a spoke implementing conversion.Convertible), a
// scheme holding both, and Converter, which converts one object the way
// controller-runtime's conversion webhook does (decode through the scheme's
// universal deserializer, ConvertTo/ConvertFrom through the hub, encode with
// encoding/json).
//
// Converter has the same Convert signature as hubspoke's convert.Converter so
// the two can be benchmarked and compared object for object.
package crwidget

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	widgetv1 "github.com/hubspoke/hubspoke/internal/crwidget/v1"
	"github.com/hubspoke/hubspoke/internal/crwidget/v1alpha1"
)

// Kind is the kind of the Widget types.
const Kind = "Widget"

// AddToScheme registers every Widget version in s.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{widgetv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return fmt.Errorf("register widget types: %w", err)
		}
	}
	return nil
}

// NewScheme returns a new scheme holding every Widget version.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Converter converts Widgets between versions with typed Go structs, doing
// per object what controller-runtime's conversion webhook handler does. It
// is safe for concurrent use.
type Converter struct {
	scheme  *runtime.Scheme
	decoder *crconversion.Decoder
}

// NewConverter returns a Converter over a scheme from NewScheme.
func NewConverter(s *runtime.Scheme) *Converter {
	return &Converter{scheme: s, decoder: crconversion.NewDecoder(s)}
}

// Convert appends to dst the JSON of obj converted to toAPIVersion
// ("group/version") and returns the extended buffer. An object already at
// toAPIVersion is appended unchanged.
func (c *Converter) Convert(dst, obj []byte, toAPIVersion string) ([]byte, error) {
	src, gvk, err := c.decoder.Decode(obj)
	if err != nil {
		return dst, fmt.Errorf("decode widget: %w", err)
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
	if err := c.convert(src, out); err != nil {
		return dst, fmt.Errorf("convert widget from %s to %s: %w", gvk.GroupVersion(), toAPIVersion, err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return dst, fmt.Errorf("encode %s: %w", to, err)
	}
	return append(dst, b...), nil
}

// convert mirrors controller-runtime's webhook.convertObject.
func (c *Converter) convert(src, dst runtime.Object) error {
	srcHub, srcIsHub := src.(conversion.Hub)
	dstHub, dstIsHub := dst.(conversion.Hub)
	srcConv, srcIsConv := src.(conversion.Convertible)
	dstConv, dstIsConv := dst.(conversion.Convertible)
	switch {
	case srcIsHub && dstIsConv:
		return dstConv.ConvertFrom(srcHub)
	case dstIsHub && srcIsConv:
		return srcConv.ConvertTo(dstHub)
	case srcIsConv && dstIsConv:
		hub := &widgetv1.Widget{}
		if err := srcConv.ConvertTo(hub); err != nil {
			return err
		}
		return dstConv.ConvertFrom(hub)
	default:
		return fmt.Errorf("%T is not convertible to %T", src, dst)
	}
}
