package review

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestValidationMatchesAPIMachinery checks that the self-check's label and
// annotation rules accept and reject what k8s.io/apimachinery does.
func TestValidationMatchesAPIMachinery(t *testing.T) {
	long := strings.Repeat("a", 64)
	maps := []map[string]string{
		{"app": "demo"},
		{"example.com/app": "demo-1_x.y"},
		{"Example.COM/App": "v"},
		{"bad key": "v"},
		{"a/b/c": "v"},
		{"": "v"},
		{"k": long},
		{"k": "-bad"},
		{"k": ""},
		{long: "v"},
		{strings.Repeat("a", 254) + "/k": "v"},
		{"hubspoke.dev/preserved": `{"v1alpha1":{"spec":{"legacy":true}}}`},
		{"a": strings.Repeat("x", TotalAnnotationSizeLimit-1)},
		{"a": strings.Repeat("x", TotalAnnotationSizeLimit)},
	}
	for _, m := range maps {
		var keys, values []string
		for k, v := range m {
			keys, values = append(keys, k), append(values, v)
		}
		path := field.NewPath("metadata")
		if got, want := len(labelErrors(keys, values)) > 0, len(metav1validation.ValidateLabels(m, path)) > 0; got != want {
			t.Errorf("labels %.80v: invalid = %v, apimachinery says %v", m, got, want)
		}
		if got, want := len(annotationErrors(keys, values)) > 0, len(apivalidation.ValidateAnnotations(m, path)) > 0; got != want {
			t.Errorf("annotations %.80v: invalid = %v, apimachinery says %v", m, got, want)
		}
	}
}

// TestResponseDecodesAsKubernetesTypes decodes responses with the API
// server's own types.
func TestResponseDecodesAsKubernetesTypes(t *testing.T) {
	h, _ := newTestHandler(t, Options{})
	objs := []string{widget("v1alpha1", "a", ""), widget("v1alpha1", "b", "")}
	t.Run("v1", func(t *testing.T) {
		_, b := post(t, h, reviewBody(APIVersionV1, "u-1", "example.com/v1", objs...))
		var cr apiextensionsv1.ConversionReview
		if err := json.Unmarshal(b, &cr); err != nil {
			t.Fatal(err)
		}
		if cr.APIVersion != APIVersionV1 || cr.Kind != "ConversionReview" || cr.Response == nil ||
			cr.Response.UID != "u-1" || cr.Response.Result.Status != "Success" || len(cr.Response.ConvertedObjects) != 2 {
			t.Errorf("unexpected review %+v", cr)
		}
	})
	t.Run("v1beta1 failure", func(t *testing.T) {
		_, b := post(t, h, reviewBody(APIVersionV1beta1, "u-2", "nope.io/v1", objs...))
		var cr apiextensionsv1beta1.ConversionReview
		if err := json.Unmarshal(b, &cr); err != nil {
			t.Fatal(err)
		}
		if cr.APIVersion != APIVersionV1beta1 || cr.Response == nil || cr.Response.UID != "u-2" ||
			cr.Response.Result.Status != "Failure" || cr.Response.ConvertedObjects != nil || !strings.Contains(cr.Response.Result.Message, "object [0] default/a") {
			t.Errorf("unexpected review %+v", cr)
		}
	})
}
