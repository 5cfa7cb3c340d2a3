// Package crconvert runs existing controller-runtime typed conversions
// (conversion.Hub and conversion.Convertible) as a hubspoke rule, so an
// operator can move its webhook to hubspoke without rewriting them first.
//
// A typed conversion decodes the whole object, so whatever its Go types do
// not declare is dropped; declarative rules keep it. The adapter limits the
// damage to what the typed code owns: it takes every top-level field but
// apiVersion, kind and metadata from the typed result, and from metadata only
// labels and annotations (the only metadata the API server accepts from a
// conversion). Everything else of metadata stays byte for byte.
package crconvert

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/hubspoke/hubspoke/convert"
)

// Rule returns a rule that converts a spoke to the hub with the spoke's
// ConvertTo and back with its ConvertFrom. newSpoke and newHub return fresh,
// empty objects of the spoke and hub Go types.
func Rule(name string, newSpoke func() conversion.Convertible, newHub func() conversion.Hub) (convert.Rule, error) {
	if newSpoke == nil || newHub == nil {
		return nil, fmt.Errorf("crconvert %s: newSpoke and newHub are required", name)
	}
	a := &adapter{newSpoke: newSpoke, newHub: newHub}
	return convert.Funcs(name, a.toHub, a.fromHub)
}

type adapter struct {
	newSpoke func() conversion.Convertible
	newHub   func() conversion.Hub
}

var (
	whole       = convert.Path{}
	labels      = convert.MustPath("metadata.labels")
	annotations = convert.MustPath("metadata.annotations")
)

func (a *adapter) toHub(o *convert.Object) error {
	spoke := a.newSpoke()
	if err := decode(o, spoke); err != nil {
		return err
	}
	hub := a.newHub()
	if err := spoke.ConvertTo(hub); err != nil {
		return fmt.Errorf("ConvertTo: %w", err)
	}
	return merge(o, hub)
}

func (a *adapter) fromHub(o *convert.Object) error {
	hub := a.newHub()
	if err := decode(o, hub); err != nil {
		return err
	}
	spoke := a.newSpoke()
	if err := spoke.ConvertFrom(hub); err != nil {
		return fmt.Errorf("ConvertFrom: %w", err)
	}
	return merge(o, spoke)
}

func decode(o *convert.Object, into any) error {
	raw, _, err := o.Get(whole)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decoding into %T: %w", into, err)
	}
	return nil
}

// merge writes the typed result into o: top-level fields but apiVersion,
// kind and metadata, then labels and annotations.
func merge(o *convert.Object, typed any) error {
	raw, err := json.Marshal(typed)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", typed, err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		return err
	}
	var cur map[string]json.RawMessage
	if err := decode(o, &cur); err != nil {
		return err
	}
	for k := range cur {
		if _, keep := out[k]; !keep && k != "apiVersion" && k != "kind" && k != "metadata" {
			if _, _, err := o.Delete(convert.MustPath("/" + convert.EscapePointerToken(k))); err != nil {
				return err
			}
		}
	}
	for k, v := range out {
		if k == "apiVersion" || k == "kind" || k == "metadata" {
			continue
		}
		if err := o.Set(convert.MustPath("/"+convert.EscapePointerToken(k)), v); err != nil {
			return err
		}
	}
	var md struct {
		Labels      json.RawMessage `json:"labels"`
		Annotations json.RawMessage `json:"annotations"`
	}
	if m, ok := out["metadata"]; ok {
		if err := json.Unmarshal(m, &md); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		p   convert.Path
		raw json.RawMessage
	}{{labels, md.Labels}, {annotations, md.Annotations}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			if _, _, err := o.Delete(f.p); err != nil {
				return err
			}
			continue
		}
		if err := o.Set(f.p, f.raw); err != nil {
			return err
		}
	}
	return nil
}
