package schema

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

type validatorState struct {
	v   apiextvalidation.SchemaCreateValidator
	err error
}

type plainValidator struct{ v *validate.SchemaValidator }

func (p plainValidator) Validate(obj any, _ ...apiextvalidation.ValidationOption) *validate.Result {
	return p.v.Validate(obj)
}

// Problem is one reason an object does not validate against a version's
// schema.
type Problem struct {
	// Path is the field path in the API server's notation
	// (spec.endpoints[0].port).
	Path string
	// Message says what is wrong.
	Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Validate checks an object (decoded JSON: map[string]any with int64 and
// float64 numbers, as from DecodeJSON) against the version's schema the way
// the API server does on create: OpenAPI value validation, list-type sets
// and maps, embedded ObjectMeta, and fields that the server would prune
// (reported as problems, since pruning silently loses data). CEL rules
// (x-kubernetes-validations) are not evaluated. The object is not changed.
func (v *Version) Validate(obj map[string]any) []Problem {
	v.once.Do(func() {
		if v.internal == nil {
			return
		}
		// The API server's validator re-creates a kube-openapi validator
		// on every call when ratcheting is on; with no old object to
		// ratchet against, one plain validator is equivalent and faster.
		_, spec, err := apiextvalidation.NewSchemaValidator(v.internal)
		if err == nil {
			v.validator = validatorState{v: plainValidator{validate.NewSchemaValidator(spec, nil, "", strfmt.Default)}}
		} else {
			v.validator = validatorState{err: err}
		}
	})
	var out []Problem
	add := func(errs field.ErrorList) {
		for _, e := range errs {
			msg := e.ErrorBody()
			out = append(out, Problem{Path: e.Field, Message: msg})
		}
	}
	if v.validator.err != nil {
		return []Problem{{Message: fmt.Sprintf("schema of version %s cannot be compiled: %v", v.Name, v.validator.err)}}
	}
	if v.validator.v != nil {
		add(apiextvalidation.ValidateCustomResource(nil, obj, v.validator.v))
	}
	if v.Structural != nil {
		add(listtype.ValidateListSetsAndMaps(nil, v.Structural, obj))
		add(objectmeta.Validate(context.Background(), nil, obj, v.Structural, true))
		for _, p := range v.Pruned(obj) {
			out = append(out, Problem{Path: p, Message: "unknown field, the API server would prune it"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Pruned returns the paths of the fields of obj that the API server would
// prune for this version (without changing obj).
func (v *Version) Pruned(obj map[string]any) []string {
	if v.Structural == nil {
		return nil
	}
	cp := runtime.DeepCopyJSON(obj)
	return pruning.PruneWithOptions(cp, v.Structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// Prune removes, in place, the fields the API server would prune.
func (v *Version) Prune(obj map[string]any) {
	if v.Structural != nil {
		pruning.Prune(obj, v.Structural, true)
	}
}

// ApplyDefaults sets, in place, the schema defaults the API server applies
// when it reads or writes obj in this version.
func (v *Version) ApplyDefaults(obj map[string]any) {
	if v.Structural != nil {
		defaulting.Default(obj, v.Structural)
	}
}

// DecodeObject decodes the JSON of one object into the form Validate,
// Prune and ApplyDefaults expect: maps, slices, strings, bools, int64 for
// integers that fit and float64 for other numbers.
func DecodeObject(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode object: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("decode object: not a JSON object")
	}
	return m, nil
}
