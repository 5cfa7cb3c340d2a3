package deploy

import (
	"fmt"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert/rules"
)

// ConversionCRD returns the CustomResourceDefinition of the Conversion
// resource (hubspoke.dev/v1alpha1, cluster-scoped).
//
// Its spec schema is built from the rule loader's own table
// (rules.Grammar, rules.SpecFields): every field the loader reads has a
// schema, and a field it does not know is none (kubectl's strict field
// validation refuses it, and the API server would prune it). What OpenAPI
// cannot say — a value outside a rule's choices, a path that does not
// parse, a rule that cannot be inverted — is the loader's to refuse, at
// admission, with the field it concerns.
func ConversionCRD() *apiextv1.CustomResourceDefinition {
	str := apiextv1.JSONSchemaProps{Type: "string"}
	nonEmpty := apiextv1.JSONSchemaProps{Type: "string", MinLength: ptr[int64](1)}
	i64 := apiextv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	boolean := apiextv1.JSONSchemaProps{Type: "boolean"}
	conditions := apiextv1.JSONSchemaProps{
		Type:         "array",
		XListType:    ptr("map"),
		XListMapKeys: []string{"type"},
		Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"type", "status", "lastTransitionTime", "reason", "message"},
			Properties: map[string]apiextv1.JSONSchemaProps{
				"type":               {Type: "string", MaxLength: ptr[int64](316)},
				"status":             {Type: "string", Enum: enumJSON("True", "False", "Unknown")},
				"observedGeneration": {Type: "integer", Format: "int64", Minimum: ptr[float64](0)},
				"lastTransitionTime": {Type: "string", Format: "date-time"},
				"reason":             {Type: "string", MaxLength: ptr[int64](1024)},
				"message":            {Type: "string", MaxLength: ptr[int64](32768)},
			},
		}},
	}
	spokes := apiextv1.JSONSchemaProps{
		Type: "array",
		Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"version"},
			Properties: map[string]apiextv1.JSONSchemaProps{
				"version": nonEmpty,
				"rules":   {Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: ruleSchema()}},
			},
		}},
	}
	spec := apiextv1.JSONSchemaProps{
		Type:        "object",
		Description: "The rule file's spec: see docs/rules.md. The rule loader validates what the schema cannot say.",
		Required:    []string{"group", "kind", "hub"},
		Properties: map[string]apiextv1.JSONSchemaProps{
			"group":  nonEmpty,
			"kind":   nonEmpty,
			"hub":    nonEmpty,
			"spokes": spokes,
			"rollout": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
				"acknowledgeDifferences": {
					Type:        "object",
					Description: "Let the new rules answer differently from generation fromGeneration (status.servedGeneration), for the reason given.",
					Required:    []string{"fromGeneration", "reason"},
					Properties: map[string]apiextv1.JSONSchemaProps{
						"fromGeneration": {Type: "integer", Format: "int64", Minimum: ptr[float64](1)},
						"reason":         nonEmpty,
					},
				},
			}},
			"storage": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
				"migrate":             boolean,
				"pruneStoredVersions": boolean,
				"backup":              boolean,
			}},
		},
	}
	for _, f := range rules.SpecFields {
		if _, ok := spec.Properties[f]; !ok {
			panic(fmt.Sprintf("deploy: the Conversion schema has no field spec.%s, which the rule loader reads", f))
		}
	}
	replica := apiextv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"name", "ready"},
		Properties: map[string]apiextv1.JSONSchemaProps{
			"name":             str,
			"address":          str,
			"ready":            boolean,
			"servedGeneration": i64,
			"message":          str,
		},
	}
	status := apiextv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextv1.JSONSchemaProps{
			"observedGeneration": i64,
			"servedGeneration":   i64,
			"crd":                str,
			"replicas": {
				Type:         "array",
				XListType:    ptr("map"),
				XListMapKeys: []string{"name"},
				Items:        &apiextv1.JSONSchemaPropsOrArray{Schema: &replica},
			},
			"migration": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
				"generation":     i64,
				"storageVersion": str,
				"objects":        i64,
				"rewritten":      i64,
				"storedVersions": {Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &str}},
				"backup":         str,
				"backupSHA256":   str,
			}},
			"conditions": conditions,
		},
	}
	condColumn := func(t string) apiextv1.CustomResourceColumnDefinition {
		return apiextv1.CustomResourceColumnDefinition{Name: t, Type: "string", JSONPath: `.status.conditions[?(@.type=="` + t + `")].status`}
	}
	return &apiextv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.CRDName, Labels: map[string]string{
			"app.kubernetes.io/name":    "hubspoke",
			"app.kubernetes.io/part-of": "hubspoke",
		}},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: v1alpha1.Group,
			Names: apiextv1.CustomResourceDefinitionNames{
				Plural: v1alpha1.Resource, Singular: v1alpha1.Singular, Kind: v1alpha1.Kind, ListKind: v1alpha1.ListKind,
				Categories: []string{"hubspoke"},
			},
			Scope: apiextv1.ClusterScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: v1alpha1.Version, Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type:        "object",
					Description: "A hub-and-spoke conversion of one CRD, served live by hubspoke's webhook and rolled out by its operator.",
					Required:    []string{"spec"},
					Properties: map[string]apiextv1.JSONSchemaProps{
						"apiVersion": str,
						"kind":       str,
						"metadata":   {Type: "object"},
						"spec":       spec,
						"status":     status,
					},
				}},
				Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextv1.CustomResourceColumnDefinition{
					{Name: "CRD", Type: "string", JSONPath: ".status.crd"},
					{Name: "Served", Type: "integer", JSONPath: ".status.servedGeneration"},
					condColumn(v1alpha1.ConditionAccepted),
					condColumn(v1alpha1.ConditionServing),
					condColumn(v1alpha1.ConditionCRDConfigured),
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			}},
		},
	}
}

// ruleSchema is one rule: a mapping with exactly one key, the rule kind,
// whose value holds the kind's parameters and modifiers.
func ruleSchema() *apiextv1.JSONSchemaProps {
	props := map[string]apiextv1.JSONSchemaProps{}
	for _, k := range rules.Grammar() {
		params := map[string]apiextv1.JSONSchemaProps{}
		for _, p := range append(k.Params, k.Modifiers...) {
			s, ok := paramSchema(k.Name, p)
			if !ok {
				// TestEveryRuleParameterHasASchema names them all.
				panic(fmt.Sprintf("deploy: rule kind %s has a parameter %s that the Conversion schema does not know: give it a schema in paramSchema", k.Name, p))
			}
			params[p] = s
		}
		props[k.Name] = apiextv1.JSONSchemaProps{Type: "object", Properties: params}
	}
	return &apiextv1.JSONSchemaProps{
		Type:          "object",
		Description:   "One rule: a single key, the rule kind (docs/rules.md).",
		MinProperties: ptr[int64](1),
		MaxProperties: ptr[int64](1),
		Properties:    props,
	}
}

// paramSchema is the schema of parameter p of rule kind k, as the loader
// reads it; false if there is none.
func paramSchema(k, p string) (apiextv1.JSONSchemaProps, bool) {
	anyValue := apiextv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}
	switch {
	case k == "funcs" && (p == "from" || p == "to"):
		// A path or a list of paths.
		return anyValue, true
	case p == "default" || k == "constant" && p == "value" || k == "missing" && (p == "hub" || p == "spoke"):
		// Any JSON value.
		return anyValue, true
	case p == "values" || p == "hubValues":
		// A mapping of scalars: strings, numbers or booleans. OpenAPI
		// gives a value one type, and CEL none to an untyped value: the
		// loader refuses the others (the Accepted condition says where).
		return apiextv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextv1.JSONSchemaPropsOrBool{
			Allows: true, Schema: &anyValue,
		}}, true
	case p == "defaults":
		// A mapping of strings.
		return apiextv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextv1.JSONSchemaPropsOrBool{
			Allows: true, Schema: &apiextv1.JSONSchemaProps{Type: "string"},
		}}, true
	case p == "multiply" || p == "divide":
		// The loader reads the number's text: 1000 or "1000".
		return apiextv1.JSONSchemaProps{XIntOrString: true}, true
	case p == "dropIfEmpty":
		return apiextv1.JSONSchemaProps{Type: "boolean"}, true
	case stringParams[p]:
		return apiextv1.JSONSchemaProps{Type: "string"}, true
	}
	return apiextv1.JSONSchemaProps{}, false
}

// stringParams are the parameters the loader reads as one string: paths,
// names, choices, patterns, reasons and CEL expressions.
var stringParams = map[string]bool{
	"from": true, "to": true, "path": true, "name": true, "key": true, "keyType": true,
	"order": true, "otherwise": true, "pattern": true, "unit": true, "round": true,
	"spoke": true, "hub": true, "format": true, "empty": true, "in": true,
	"acknowledgeLoss": true, "derive": true, "toHub": true, "fromHub": true,
	"when": true, "restore": true,
}

func enumJSON(vals ...string) []apiextv1.JSON {
	out := make([]apiextv1.JSON, len(vals))
	for i, v := range vals {
		out[i] = apiextv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))}
	}
	return out
}
