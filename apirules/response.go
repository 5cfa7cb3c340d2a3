package apirules

import (
	"fmt"

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

// Response checks body, a webhook's answer to req, as the API server
// checks it (see the package doc), and returns the converted objects,
// sub-slices of body. A Failure answer is an error carrying its message,
// as the API server reports it.
func Response(req Request, body []byte) ([][]byte, error) {
	var s jsonscan.Scanner
	s.Reset(body)
	var (
		apiVersion, kind, uid, status, message []byte
		hasResponse, hasResult                 bool
		objects                                [][]byte
		heads                                  []Head
	)
	str := func(dst *[]byte, v, depth int) (int, error) {
		v2, end, ok, err := s.StringValue(v, depth)
		if ok {
			*dst = v2
		} else {
			*dst = nil
		}
		return end, err
	}
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		if err := s.Document(0); err != nil {
			return nil, fmt.Errorf("the answer is not valid JSON: %w", err)
		}
		return nil, fmt.Errorf("the answer is %s, not a ConversionReview object", jsonscan.Kind(body[i]))
	}
	end, err := s.Object(i, 1, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "apiVersion":
			return str(&apiVersion, v, 1)
		case "kind":
			return str(&kind, v, 1)
		case "response":
			hasResponse, hasResult = false, false
			uid, status, message, objects, heads = nil, nil, nil, nil, nil
			if body[v] != '{' {
				return s.Value(v, 1)
			}
			hasResponse = true
			return s.Object(v, 2, func(key []byte, v int) (int, error) {
				switch string(key) {
				case "uid":
					return str(&uid, v, 2)
				case "result":
					hasResult = body[v] == '{'
					if !hasResult {
						return s.Value(v, 2)
					}
					return s.Object(v, 3, func(key []byte, v int) (int, error) {
						switch string(key) {
						case "status":
							return str(&status, v, 3)
						case "message":
							return str(&message, v, 3)
						}
						return s.Value(v, 3)
					})
				case "convertedObjects":
					objects, heads = objects[:0], heads[:0]
					if body[v] != '[' {
						return s.Value(v, 2)
					}
					return s.Array(v, 3, func(_, v int) (int, error) {
						var h Head
						var end int
						var err error
						if body[v] == '{' {
							end, err = ScanHead(&s, v, EnvelopeDepth+1, &h, false)
						} else {
							end, err = s.Value(v, 3)
						}
						objects = append(objects, body[v:end])
						heads = append(heads, h)
						return end, err
					})
				}
				return s.Value(v, 2)
			})
		}
		return s.Value(v, 1)
	})
	if err != nil {
		return nil, fmt.Errorf("the answer is not valid JSON: %w", err)
	}
	if end = jsonscan.SkipSpace(body, end); end != len(body) {
		return nil, fmt.Errorf("the answer is not valid JSON: %w", jsonscan.Errorf(end, "unexpected data after the top-level value"))
	}
	if req.APIVersion == ReviewV1 && (string(apiVersion) != ReviewV1 || string(kind) != "ConversionReview") {
		return nil, fmt.Errorf("the answer is %q, %q; want %s, ConversionReview (the request's)", apiVersion, kind, ReviewV1)
	}
	if !hasResponse {
		return nil, fmt.Errorf("the answer has no response")
	}
	if req.APIVersion == ReviewV1 && string(uid) != req.UID {
		return nil, fmt.Errorf("the answer's response.uid is %q, want %q (the request's)", uid, req.UID)
	}
	if !hasResult || string(status) != "Success" {
		if len(message) > 0 {
			return nil, fmt.Errorf("the conversion failed: %s", message)
		}
		return nil, fmt.Errorf("the answer's response.result.status is %q, not \"Success\"", status)
	}
	if len(objects) != len(req.Objects) {
		return nil, fmt.Errorf("the answer has %d converted objects, want %d (one for each object sent, in order)", len(objects), len(req.Objects))
	}
	desired := []byte(req.DesiredAPIVersion)
	for n, raw := range objects {
		if raw[0] != '{' {
			return nil, fmt.Errorf("converted object %d is %s, not a JSON object", n, jsonscan.Kind(raw[0]))
		}
		in, err := readHead(req.Objects[n], fmt.Sprintf("request object %d", n))
		if err != nil {
			return nil, err
		}
		if err := CheckHead(&in, &heads[n], desired); err != nil {
			return nil, fmt.Errorf("converted object %d: %w", n, err)
		}
	}
	return objects, nil
}
