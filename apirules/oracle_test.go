package apirules_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/hubspoke/hubspoke/apirules"
)

// apiServerDecoder is the decoder the API server's conversion webhook
// client reads an answer with (k8s.io/apiserver/pkg/util/webhook
// NewClientManager, as apiextensions-apiserver calls it).
var apiServerDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := apiextv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s).LegacyCodec(apiextv1.SchemeGroupVersion, apiextv1beta1.SchemeGroupVersion)
}()

// apiServerVerdict reads body as the API server reads a webhook's answer to
// a review of n objects in reviewVersion (client-go's Result.Into, then
// webhook_converter.go's getConvertedObjectsFromResponse and its count
// check), and returns the converted objects' JSON or why it fails. The
// object rules (CheckHead) are apirules' own and compared elsewhere.
func apiServerVerdict(reviewVersion, uid string, n int, body []byte) ([][]byte, error) {
	var into runtime.Object = &apiextv1.ConversionReview{}
	if reviewVersion == apirules.ReviewV1beta1 {
		into = &apiextv1beta1.ConversionReview{}
	}
	out, _, err := apiServerDecoder.Decode(body, nil, into)
	if err != nil {
		return nil, err
	}
	if out != into {
		if st, ok := out.(*metav1.Status); ok && st.Status != metav1.StatusSuccess {
			return nil, errors.New(st.Message)
		}
	}
	var objs []runtime.RawExtension
	switch r := into.(type) {
	case *apiextv1.ConversionReview:
		if gvk := r.GroupVersionKind(); gvk != apiextv1.SchemeGroupVersion.WithKind("ConversionReview") {
			return nil, fmt.Errorf("expected webhook response of v1 ConversionReview, got %v", gvk)
		}
		if r.Response == nil {
			return nil, errors.New("no response provided")
		}
		if string(r.Response.UID) != uid {
			return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, r.Response.UID)
		}
		if r.Response.Result.Status != metav1.StatusSuccess {
			return nil, fmt.Errorf("status %q: %s", r.Response.Result.Status, r.Response.Result.Message)
		}
		objs = r.Response.ConvertedObjects
	case *apiextv1beta1.ConversionReview:
		if r.Response == nil {
			return nil, errors.New("no response provided")
		}
		if r.Response.Result.Status != metav1.StatusSuccess {
			return nil, fmt.Errorf("status %q: %s", r.Response.Result.Status, r.Response.Result.Message)
		}
		objs = r.Response.ConvertedObjects
	}
	if len(objs) != n {
		return nil, fmt.Errorf("returned %d objects, expected %d", len(objs), n)
	}
	raws := make([][]byte, len(objs))
	for i, o := range objs {
		raws[i] = o.Raw
	}
	return raws, nil
}

var _ = schema.GroupVersion{}

// oracleBodies are answers that differ from a plain valid one in the ways
// a decoder can read differently: key case, duplicates, nulls, types.
func oracleBodies() []string {
	obj := conv(idMeta, `,"spec":{"size":1}`)
	env := func(top, resp string) string {
		return `{` + top + `"response":{` + resp + `}}`
	}
	v1 := `"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",`
	ok := `"uid":"r1","convertedObjects":[` + obj + `],"result":{"status":"Success"}`
	return []string{
		env(v1, ok),
		env(v1, `"UID":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success"}`),
		env(v1, `"uid":"r1","ConvertedObjects":[`+obj+`],"result":{"status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"Result":{"status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"Status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`]`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":null`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":"Success"`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success"},"result":null`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success"},"result":{"message":"x"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success"},"result":{"status":"Failure"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Failure","message":"no"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","message":7}`),
		env(v1, `"uid":"r1","uid":null,"convertedObjects":[`+obj+`],"result":{"status":"Success"}`),
		env(v1, `"uid":"r2","uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","code":"x"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","code":1.5}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","code":200}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","details":5}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","metadata":[]}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success","reason":1}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"result":{"status":"Success"},"extra":1}`),
		env(v1, `"uid":1,"convertedObjects":[`+obj+`],"result":{"status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`],"convertedObjects":null,"result":{"status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":[`+obj+`,`+obj+`],"convertedObjects":[`+obj+`],"result":{"status":"Success"}`),
		env(v1, `"uid":"r1","convertedObjects":{},"result":{"status":"Success"}`),
		env(v1, ok) + ``,
		`{` + v1 + `"response":{` + ok + `},"response":null}`,
		`{` + v1 + `"response":{"uid":"r1"},"response":{"convertedObjects":[` + obj + `],"result":{"status":"Success"}}}`,
		`{` + v1 + `"response":{` + ok + `},"response":{"uid":"r2"}}`,
		`{` + v1 + `"response":7}`,
		`{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","response":{` + ok + `}}`,
		`{"kind":"ConversionReview","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"conversionreview","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","kind":"ConversionReview","response":{` + ok + `}}`,
		`{"ApiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","Kind":"ConversionReview","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","Response":{` + ok + `}}`,
		`{"response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1beta1","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"Status","response":{` + ok + `}}`,
		`{"apiVersion":"apiextensions.k8s.io/v2","kind":"ConversionReview","response":{` + ok + `}}`,
		`{"apiVersion":"example.com/v1","kind":"ConversionReview","response":{` + ok + `}}`,
		`{"apiVersion":"v1","kind":"Status","status":"Failure","message":"boom"}`,
		`{"apiVersion":"v1","kind":"Status","status":"Success"}`,
		`{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{` + ok + `}}`,
		`{"kind":"ConversionReview","response":{` + ok + `},"apiVersion":"apiextensions.k8s.io/v1"}`,
		`[]`,
		`{`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{` + ok + `}} x`,
	}
}

// TestResponseAgreesWithAPIServer holds Response's verdict on the
// envelope of an answer to the API server's own decoder: the same answers
// succeed, with the same converted objects.
func TestResponseAgreesWithAPIServer(t *testing.T) {
	req := apirules.Request{APIVersion: apirules.ReviewV1, UID: "r1", DesiredAPIVersion: "example.com/v1", Objects: [][]byte{[]byte(orig)}}
	for _, reviewVersion := range []string{apirules.ReviewV1, apirules.ReviewV1beta1} {
		req.APIVersion = reviewVersion
		for i, body := range oracleBodies() {
			t.Run(fmt.Sprintf("%s/%d", reviewVersion[len("apiextensions.k8s.io/"):], i), func(t *testing.T) {
				want, wantErr := apiServerVerdict(reviewVersion, req.UID, len(req.Objects), []byte(body))
				got, err := apirules.Response(req, []byte(body))
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("Response: %v; the API server: %v\nbody: %s", err, wantErr, body)
				}
				if err != nil {
					if re := (*apirules.ResponseError)(nil); !errors.As(err, &re) {
						t.Errorf("error %v is not a *ResponseError", err)
					}
					return
				}
				for n := range want {
					if !bytes.Equal(bytes.TrimSpace(got[n]), bytes.TrimSpace(want[n])) {
						t.Errorf("object %d: %s, the API server read %s", n, got[n], want[n])
					}
				}
			})
		}
	}
}

// FuzzResponseAgreesWithAPIServer is TestResponseAgreesWithAPIServer on
// any answer.
func FuzzResponseAgreesWithAPIServer(f *testing.F) {
	for _, b := range oracleBodies() {
		f.Add([]byte(b), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, beta bool) {
		rv := apirules.ReviewV1
		if beta {
			rv = apirules.ReviewV1beta1
		}
		req := apirules.Request{APIVersion: rv, UID: "r1", DesiredAPIVersion: "example.com/v1", Objects: [][]byte{[]byte(orig)}}
		_, wantErr := apiServerVerdict(rv, req.UID, 1, body)
		got, err := apirules.Response(req, body)
		if err != nil && strings.HasPrefix(err.Error(), "converted object") {
			return // an object rule: CheckHead's, compared in TestObject
		}
		if err != nil && strings.Contains(err.Error(), "invalid UTF-8") && !utf8.Valid(body) {
			return // refused on purpose: the API server would replace the byte silently
		}
		if wantErr == nil && err != nil || wantErr != nil && err == nil {
			t.Fatalf("Response: %v (%d objects); the API server: %v\nbody: %q", err, len(got), wantErr, body)
		}
	})
}
