package review

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
)

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
