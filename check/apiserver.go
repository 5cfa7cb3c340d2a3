package check

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/hubspoke/hubspoke/schema"
)

// This file holds what the API server does with a converted object, with
// the API server's own functions: the rules a webhook response must meet,
// the coercion it applies after every conversion, and the validation an
// object must pass to be written back.

// ResponseRules applies the API server's rules for one converted object:
// out (the webhook's answer for in) must carry desiredAPIVersion, in's kind
// and in's metadata.name, namespace and uid, and annotations within the
// API server's size limit. It returns the JSON pointer of the first field
// that breaks a rule and what is wrong, or "", nil.
//
// TODO(apirules): call the one implementation in package apirules once it
// lands on main; this is the only place check states these rules.
func ResponseRules(in, out map[string]any, desiredAPIVersion string) (string, error) {
	if out["apiVersion"] != desiredAPIVersion {
		return "/apiVersion", fmt.Errorf("apiVersion is %s, want %s", jsonStr(out["apiVersion"]), desiredAPIVersion)
	}
	if !Equal(out["kind"], in["kind"]) {
		return "/kind", fmt.Errorf("kind changed from %s to %s", jsonStr(in["kind"]), jsonStr(out["kind"]))
	}
	imd, _ := in["metadata"].(map[string]any)
	omd, ok := out["metadata"].(map[string]any)
	if !ok {
		return "/metadata", fmt.Errorf("metadata is missing or not an object")
	}
	for _, k := range []string{"name", "namespace", "uid"} {
		if !Equal(imd[k], omd[k]) {
			return "/metadata/" + k, fmt.Errorf("metadata.%s changed from %s to %s: the API server rejects the response", k, jsonStr(imd[k]), jsonStr(omd[k]))
		}
	}
	if ann, ok := omd["annotations"].(map[string]any); ok {
		size := 0
		for k, v := range ann {
			s, _ := v.(string)
			size += len(k) + len(s)
		}
		if size > totalAnnotationSizeLimit {
			return "/metadata/annotations", fmt.Errorf("annotations total %d bytes, over the API server's 256 KiB limit", size)
		}
	}
	return "", nil
}

// totalAnnotationSizeLimit is the API server's limit on an object's
// annotations (keys plus values), in bytes.
// TODO(apirules): use the one constant once apirules lands.
const totalAnnotationSizeLimit = 256 * 1024

// restoreMetadata does what the API server does with the metadata of a
// converted object (webhook_converter.go, restoreObjectMeta): everything
// but labels and annotations comes back from the original. The function
// upstream is unexported, in a package that links client-go; this is the
// same rule, applied to decoded JSON.
func restoreMetadata(in, out map[string]any) {
	imd, _ := in["metadata"].(map[string]any)
	omd, _ := out["metadata"].(map[string]any)
	md := make(map[string]any, len(imd))
	for k, v := range imd {
		if k != "labels" && k != "annotations" {
			md[k] = v
		}
	}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := omd[k]; ok {
			md[k] = v
		}
	}
	out["metadata"] = md
}

// Coerce applies to obj (decoded JSON in the form schema.DecodeObject
// returns) what the API server applies after every conversion to version
// v, with its own functions, in its order: objectmeta coercion, pruning of
// unknown fields, removal of nulls in non-nullable fields without a
// default (apiextensions-apiserver's schemaCoercingConverter), then the
// version's defaults (its unstructuredDefaulter). obj is changed in place.
func Coerce(v *schema.Version, obj map[string]any) error {
	s := v.Structural
	if s == nil {
		return nil
	}
	meta, hasMeta, _, err := objectmeta.GetObjectMetaWithOptions(obj, objectmeta.ObjectMetaOptions{})
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	kind, hasKind := obj["kind"]
	apiVersion, hasAV := obj["apiVersion"]
	pruning.PruneWithOptions(obj, s, true, structuralschema.UnknownFieldPathOptions{})
	defaulting.PruneNonNullableNullsWithoutDefaults(obj, s)
	if ferr, _ := objectmeta.CoerceWithOptions(nil, obj, s, false, objectmeta.CoerceOptions{}); ferr != nil {
		return ferr
	}
	if hasKind {
		obj["kind"] = kind
	}
	if hasAV {
		obj["apiVersion"] = apiVersion
	}
	if hasMeta {
		if err := objectmeta.SetObjectMeta(obj, meta); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	defaulting.Default(obj, s)
	return nil
}

// validators validates objects like the API server on create: the
// version's OpenAPI schema, list types, embedded metadata, unknown fields
// (schema.Version.Validate) and the CEL rules (x-kubernetes-validations),
// with the API server's CEL validator and cost limits.
type validators struct {
	mu  sync.Mutex
	cel map[string]*cel.Validator
}

func (vs *validators) celFor(v *schema.Version) *cel.Validator {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.cel == nil {
		vs.cel = map[string]*cel.Validator{}
	}
	c, ok := vs.cel[v.Name]
	if !ok {
		if v.Structural != nil {
			c = cel.NewValidator(v.Structural, true, celconfig.PerCallLimit)
		}
		vs.cel[v.Name] = c
	}
	return c
}

// validate returns the problems of obj (int64/float64 numbers) in v.
func (vs *validators) validate(v *schema.Version, obj map[string]any) []schema.Problem {
	probs := v.Validate(obj)
	if c := vs.celFor(v); c != nil {
		errs, _ := c.Validate(context.Background(), nil, v.Structural, obj, nil, celconfig.RuntimeCELCostBudget)
		for _, e := range errs {
			probs = append(probs, schema.Problem{Path: e.Field, Message: e.ErrorBody()})
		}
	}
	return probs
}

// deepCopy copies decoded JSON.
func deepCopy(obj map[string]any) map[string]any {
	return runtime.DeepCopyJSON(obj)
}

// decodeObject decodes JSON into the API server's unstructured form.
func decodeObject(data []byte) (map[string]any, error) {
	m, err := schema.DecodeObject(data)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
