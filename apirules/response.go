package apirules

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// The ConversionReview apiVersions.
const (
	ReviewV1      = "apiextensions.k8s.io/v1"
	ReviewV1beta1 = "apiextensions.k8s.io/v1beta1"
)

// Request is a ConversionReview request as the API server sent it.
type Request struct {
	// APIVersion is the review's: ReviewV1 or ReviewV1beta1.
	APIVersion        string
	UID               string
	DesiredAPIVersion string
	// Objects are the JSON of request.objects.
	Objects [][]byte
}

// ResponseRule names the rule of a webhook's answer that a ResponseError
// reports.
type ResponseRule string

// The rules Response checks, in the order it checks them.
const (
	// RuleJSON: the answer is one JSON object the API server decodes.
	RuleJSON ResponseRule = "json"
	// RuleReviewKind: a v1 answer is apiextensions.k8s.io/v1,
	// ConversionReview.
	RuleReviewKind ResponseRule = "review-kind"
	// RuleResponse: the answer has a response.
	RuleResponse ResponseRule = "response"
	// RuleUID: a v1 answer's response.uid is the request's.
	RuleUID ResponseRule = "uid"
	// RuleStatus: response.result.status is Success. A Failure with a
	// message is the webhook's refusal; ResponseError.Message holds it.
	RuleStatus ResponseRule = "status"
	// RuleCount: one converted object for each object sent.
	RuleCount ResponseRule = "count"
	// RuleObject: each converted object passes the rules for a converted
	// object (CheckHead) against the request object at its index.
	RuleObject ResponseRule = "object"
)

// ResponseError is a webhook's answer the API server refuses: which rule
// it breaks and why.
type ResponseError struct {
	Rule ResponseRule
	// Index is the converted object's, for RuleObject; -1 otherwise.
	Index int
	// Message is the answer's response.result.message, for RuleStatus.
	Message string
	Err     error
}

func (e *ResponseError) Error() string { return e.Err.Error() }
func (e *ResponseError) Unwrap() error { return e.Err }

// Refused reports whether the answer is the webhook's clean refusal: a
// result.status other than Success with a message, which the API server
// shows to the user as it is.
func (e *ResponseError) Refused() bool { return e.Rule == RuleStatus && e.Message != "" }

func responseErr(rule ResponseRule, format string, args ...any) *ResponseError {
	return &ResponseError{Rule: rule, Index: -1, Err: fmt.Errorf(format, args...)}
}

// Response checks body, a webhook's answer to req, as the API server
// checks it (see the package doc), and returns the converted objects,
// sub-slices of body. It reads the answer as the API server's decoder
// does: keys match exactly ("UID" is not "uid"), the last of duplicate keys
// wins, a null leaves a string or result as it was, and a second response
// or result object adds to the first. Every error is a *ResponseError; a
// Failure answer's carries the webhook's message, as the API server
// reports it. An error reading a request object is not a ResponseError.
func Response(req Request, body []byte) ([][]byte, error) {
	var s jsonscan.Scanner
	s.Reset(body)
	var (
		apiVersion, kind, uid, status, message []byte
		hasResponse, hasResult                 bool
		objects                                [][]byte
		heads                                  []Head
		// typeErr is the first member whose JSON type the API server's
		// decoder cannot put in its field: the whole answer then fails
		// to decode, whatever follows.
		typeErr *ResponseError
		// foldAPIVersion and foldKind are what the API server's
		// serializer takes for the answer's type before decoding it
		// (SimpleMetaFactory.Interpret: keys matched regardless of case,
		// the last match winning).
		foldAPIVersion, foldKind []byte
	)
	// at is the byte at v, 0 past the end (where the scan reports it).
	at := func(v int) byte {
		if v < len(body) {
			return body[v]
		}
		return 0
	}
	mistyped := func(field string, v int, want string) {
		if typeErr == nil {
			typeErr = responseErr(RuleJSON, "the answer does not decode as a ConversionReview: %s is %s, want %s", field, jsonscan.Kind(at(v)), want)
		}
	}
	// str reads a string member into dst; null leaves dst as it was, as
	// the API server's decoder leaves a string field.
	str := func(field string, dst *[]byte, v, depth int) (int, error) {
		if at(v) == 'n' {
			return s.Value(v, depth)
		}
		v2, end, ok, err := s.StringValue(v, depth)
		if ok {
			*dst = v2
		} else {
			mistyped(field, v, "a string")
		}
		return end, err
	}
	// typed checks a value of a field whose Go type is sh, at depth
	// (its container's), as the decoder would put it there.
	var typed func(sh *shape, field string, v, depth int) (int, error)
	typed = func(sh *shape, field string, v, depth int) (int, error) {
		c := at(v)
		if sh == nil || c == 'n' {
			return s.Value(v, depth)
		}
		switch sh.kind {
		case 's':
			if c != '"' {
				mistyped(field, v, "a string")
			}
		case 'i':
			end, err := s.Value(v, depth)
			if err != nil {
				return end, err
			}
			if _, perr := strconv.ParseInt(string(body[v:end]), 10, sh.bits); perr != nil {
				if c == '-' || c >= '0' && c <= '9' {
					typeErr = cmpOr(typeErr, responseErr(RuleJSON, "the answer does not decode as a ConversionReview: %s is %s, want an integer of %d bits", field, body[v:end], sh.bits))
				} else {
					mistyped(field, v, fmt.Sprintf("an integer of %d bits", sh.bits))
				}
			}
			return end, nil
		case 'o':
			if c != '{' {
				mistyped(field, v, "an object")
				break
			}
			return s.Object(v, depth+1, func(key []byte, v int) (int, error) {
				return typed(sh.fields[string(key)], field+"."+string(key), v, depth+1)
			})
		case 'a':
			if c != '[' {
				mistyped(field, v, "an array")
				break
			}
			return s.Array(v, depth+1, func(n, v int) (int, error) {
				return typed(sh.elem, fmt.Sprintf("%s[%d]", field, n), v, depth+1)
			})
		}
		return s.Value(v, depth)
	}
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		if err := s.Document(0); err != nil {
			return nil, responseErr(RuleJSON, "the answer is not valid JSON: %w", err)
		}
		return nil, responseErr(RuleJSON, "the answer is %s, not a ConversionReview object", jsonscan.Kind(body[i]))
	}
	end, err := s.Object(i, 1, func(key []byte, v int) (int, error) {
		if fold := bytes.EqualFold(key, []byte("apiVersion")); fold || bytes.EqualFold(key, []byte("kind")) {
			dst, field := &foldKind, "kind"
			if fold {
				dst, field = &foldAPIVersion, "apiVersion"
			}
			if end, err := str(field, dst, v, 1); err != nil || string(key) != field {
				return end, err
			}
		}
		switch string(key) {
		case "apiVersion":
			return str("apiVersion", &apiVersion, v, 1)
		case "kind":
			return str("kind", &kind, v, 1)
		case "response":
			if at(v) != '{' {
				// null: no response (a pointer set to nil).
				if at(v) != 'n' {
					mistyped("response", v, "an object")
				}
				hasResponse, hasResult = false, false
				uid, status, message, objects, heads = nil, nil, nil, nil, nil
				return s.Value(v, 1)
			}
			hasResponse = true
			return s.Object(v, 2, func(key []byte, v int) (int, error) {
				switch string(key) {
				case "uid":
					return str("response.uid", &uid, v, 2)
				case "result":
					switch at(v) {
					case 'n':
						return s.Value(v, 2) // null leaves the result as it was
					case '{':
						hasResult = true
					default:
						mistyped("response.result", v, "an object")
						return s.Value(v, 2)
					}
					return s.Object(v, 3, func(key []byte, v int) (int, error) {
						switch string(key) {
						case "status":
							return str("response.result.status", &status, v, 3)
						case "message":
							return str("response.result.message", &message, v, 3)
						}
						return typed(statusShape.fields[string(key)], "response.result."+string(key), v, 3)
					})
				case "convertedObjects":
					objects, heads = objects[:0], heads[:0]
					if at(v) != '[' {
						if at(v) != 'n' {
							mistyped("response.convertedObjects", v, "an array")
						}
						return s.Value(v, 2)
					}
					return s.Array(v, 3, func(_, v int) (int, error) {
						var h Head
						var end int
						var err error
						if at(v) == '{' {
							end, err = ScanHead(&s, v, EnvelopeDepth+1, &h, false)
						} else {
							end, err = s.Value(v, 3)
						}
						if err != nil {
							return end, err
						}
						objects = append(objects, body[v:end])
						heads = append(heads, h)
						return end, err
					})
				}
				return s.Value(v, 2)
			})
		case "request":
			return typed(requestShape, "request", v, 1)
		}
		return s.Value(v, 1)
	})
	if err != nil {
		return nil, responseErr(RuleJSON, "the answer is not valid JSON: %w", err)
	}
	if end = jsonscan.SkipSpace(body, end); end != len(body) {
		return nil, responseErr(RuleJSON, "the answer is not valid JSON: %w", jsonscan.Errorf(end, "unexpected data after the top-level value"))
	}
	if typeErr != nil {
		return nil, typeErr
	}
	if want := req.APIVersion; want == ReviewV1 || want == ReviewV1beta1 {
		if av := typeOf(foldAPIVersion, foldKind, want); av != want+", ConversionReview" {
			return nil, responseErr(RuleReviewKind, "the answer is %s; want %s, ConversionReview (the request's)", av, want)
		}
	}
	if req.APIVersion == ReviewV1 && (string(apiVersion) != ReviewV1 || string(kind) != "ConversionReview") {
		return nil, responseErr(RuleReviewKind, "the answer is %q, %q; want %s, ConversionReview (the request's)", apiVersion, kind, ReviewV1)
	}
	if !hasResponse {
		return nil, responseErr(RuleResponse, "the answer has no response")
	}
	if req.APIVersion == ReviewV1 && string(uid) != req.UID {
		return nil, responseErr(RuleUID, "the answer's response.uid is %q, want %q (the request's)", uid, req.UID)
	}
	if !hasResult || string(status) != "Success" {
		if len(message) > 0 {
			e := responseErr(RuleStatus, "the conversion failed: %s", message)
			e.Message = string(message)
			return nil, e
		}
		if !hasResult {
			return nil, responseErr(RuleStatus, "the answer has no response.result: its status must be \"Success\"")
		}
		return nil, responseErr(RuleStatus, "the answer's response.result.status is %q, not \"Success\"", status)
	}
	if len(objects) != len(req.Objects) {
		return nil, responseErr(RuleCount, "the answer has %d converted objects, want %d (one for each object sent, in order)", len(objects), len(req.Objects))
	}
	desired := []byte(req.DesiredAPIVersion)
	for n, raw := range objects {
		if raw[0] != '{' {
			return nil, &ResponseError{Rule: RuleObject, Index: n, Err: fmt.Errorf("converted object %d is %s, not a JSON object", n, jsonscan.Kind(raw[0]))}
		}
		in, err := readHead(req.Objects[n], fmt.Sprintf("request object %d", n))
		if err != nil {
			return nil, err
		}
		if err := CheckHead(&in, &heads[n], desired); err != nil {
			return nil, &ResponseError{Rule: RuleObject, Index: n, Err: fmt.Errorf("converted object %d: %w", n, err)}
		}
	}
	return objects, nil
}

// typeOf returns "APIVERSION, KIND": the type the API server's serializer
// decodes an answer with the given apiVersion and kind as, when it
// expects a review of apiVersion want (k8s.io/apimachinery's
// serializer/json gvkWithDefaults: what the answer leaves out is the
// expected type's).
func typeOf(apiVersion, kind []byte, want string) string {
	wantGroup, wantVersion, _ := strings.Cut(want, "/")
	av := string(apiVersion)
	group, version := "", av
	if g, v, ok := strings.Cut(av, "/"); ok {
		group, version = g, v
		if strings.Contains(v, "/") {
			return fmt.Sprintf("%q (not a group/version)", av)
		}
	}
	k := string(kind)
	if k == "" {
		k = "ConversionReview"
	}
	if version == "" && (group == "" || group == wantGroup) {
		group, version = wantGroup, wantVersion
	}
	if group == "" {
		return version + ", " + k
	}
	return group + "/" + version + ", " + k
}

// shape is the JSON type the API server's decoder needs for a Go field of
// a ConversionReview: a value of another type fails the whole answer.
type shape struct {
	kind   byte // 's' string, 'i' integer, 'o' object, 'a' array
	bits   int  // 'i': 32 or 64
	fields map[string]*shape
	elem   *shape // 'a'; nil: any value
}

var (
	strShape    = &shape{kind: 's'}
	int32Shape  = &shape{kind: 'i', bits: 32}
	statusShape = &shape{kind: 'o', fields: map[string]*shape{ // metav1.Status
		"kind": strShape, "apiVersion": strShape, "status": strShape, "message": strShape, "reason": strShape, "code": int32Shape,
		"metadata": {kind: 'o', fields: map[string]*shape{ // metav1.ListMeta
			"selfLink": strShape, "resourceVersion": strShape, "continue": strShape, "remainingItemCount": {kind: 'i', bits: 64},
		}},
		"details": {kind: 'o', fields: map[string]*shape{ // metav1.StatusDetails
			"name": strShape, "group": strShape, "kind": strShape, "uid": strShape, "retryAfterSeconds": int32Shape,
			"causes": {kind: 'a', elem: &shape{kind: 'o', fields: map[string]*shape{"reason": strShape, "message": strShape, "field": strShape}}},
		}},
	}}
	requestShape = &shape{kind: 'o', fields: map[string]*shape{ // ConversionRequest
		"uid": strShape, "desiredAPIVersion": strShape, "objects": {kind: 'a'},
	}}
)

// cmpOr returns a unless it is nil, else b.
func cmpOr(a, b *ResponseError) *ResponseError {
	if a != nil {
		return a
	}
	return b
}
