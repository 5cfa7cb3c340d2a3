package review

import (
	"errors"
	"fmt"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/internal/jsonscan"
)

// The ConversionReview apiVersions the handler answers, each in kind.
const (
	APIVersionV1      = "apiextensions.k8s.io/v1"
	APIVersionV1beta1 = "apiextensions.k8s.io/v1beta1"
)

// RequestError is a request body that is not a valid ConversionReview. The
// handler answers it with HTTP 400 and the error's text.
type RequestError struct {
	msg string
	// syntax is true when the body is not valid JSON.
	syntax bool
}

func (e *RequestError) Error() string { return e.msg }

func badRequest(format string, args ...any) *RequestError {
	return &RequestError{msg: fmt.Sprintf(format, args...)}
}

// review is a decoded ConversionReview request. Every byte slice points into
// the request body, except strings that held escapes, which are decoded
// copies.
type review struct {
	apiVersion string // APIVersionV1 or APIVersionV1beta1
	uidRaw     []byte // request.uid as its JSON string token, quotes included
	uid        []byte // request.uid decoded
	desired    []byte // request.desiredAPIVersion decoded
	objects    []object
}

// object is one entry of request.objects.
type object struct {
	raw []byte // the whole JSON object
	apirules.Head
}

var errNoBody = &RequestError{msg: "request body is empty", syntax: true}

// decode parses body as a ConversionReview request. It validates the whole
// body as the API server's JSON (package internal/jsonscan), then the
// envelope; objects are only scanned for the fields the handler needs.
func (rv *review) decode(body []byte) error {
	var s jsonscan.Scanner
	s.Reset(body)
	return rv.decodeMode(&s, false, nil)
}

// decodeLazy is decode without validating the inside of the objects beyond
// what it reads (apiVersion, kind and the metadata it needs): it only
// finds where each value ends. The caller validates each object later,
// typically by converting it with a *convert.Converter, which validates
// whatever it converts, and calls decode to report a body that is not
// valid JSON exactly as decode would. Any error it returns may differ from
// decode's. s holds the body and its stop bits.
func (rv *review) decodeLazy(s *jsonscan.Scanner) error {
	return rv.decodeMode(s, true, nil)
}

// inlineFunc converts the object whose opening brace is at s.Data[v] as
// the decoder reaches it, and returns the offset after the object; ok
// false stops the decoding with errGiveUp.
type inlineFunc func(s *jsonscan.Scanner, v int) (end int, ok bool)

// errGiveUp is decodeInline's error when its inlineFunc gave up.
var errGiveUp = errors.New("review: the inline conversion gave up")

// decodeInline is decodeLazy that hands each object of request.objects
// to inline instead of reading its head and recording it (rv.objects
// stays empty): the object's bytes are read once, by the converter.
// Unlike decode it returns errGiveUp when inline gives up; any other
// error may differ from decode's.
func (rv *review) decodeInline(s *jsonscan.Scanner, inline inlineFunc) error {
	return rv.decodeMode(s, true, inline)
}

func (rv *review) decodeMode(s *jsonscan.Scanner, lazy bool, inline inlineFunc) error {
	body := s.Data
	*rv = review{objects: rv.objects[:0]}
	i := skipSpace(body, 0)
	if i == len(body) {
		return errNoBody
	}
	var semantic *RequestError // first envelope problem; reported if the JSON is valid
	sem := func(format string, args ...any) {
		if semantic == nil {
			semantic = badRequest(format, args...)
		}
	}
	var end int
	var err error
	if body[i] != '{' {
		end, err = s.Value(i, 0)
		sem("request body is %s, not a ConversionReview object", valueKind(body[i]))
	} else {
		var seenAPIVersion, seenKind, seenRequest bool
		var kind []byte
		end, err = s.Object(i, 1, func(key []byte, v int) (int, error) {
			switch string(key) {
			case "apiVersion":
				str, end, ok, err := s.StringValue(v, 1)
				if err != nil {
					return end, err
				}
				if seenAPIVersion {
					sem("duplicate field apiVersion")
				}
				seenAPIVersion = true
				switch {
				case !ok:
					sem("apiVersion is %s, want a string", valueKind(body[v]))
				case string(str) == APIVersionV1:
					rv.apiVersion = APIVersionV1
				case string(str) == APIVersionV1beta1:
					rv.apiVersion = APIVersionV1beta1
				default:
					sem("unsupported apiVersion %q: want %s or %s", str, APIVersionV1, APIVersionV1beta1)
				}
				return end, nil
			case "kind":
				str, end, ok, err := s.StringValue(v, 1)
				if err != nil {
					return end, err
				}
				if seenKind {
					sem("duplicate field kind")
				}
				seenKind = true
				if !ok {
					sem("kind is %s, want a string", valueKind(body[v]))
				}
				kind = str
				return end, nil
			case "request":
				if seenRequest {
					sem("duplicate field request")
				}
				seenRequest = true
				if v < len(body) && body[v] == '{' {
					return rv.decodeRequest(s, v, sem, lazy, inline)
				}
				end, err := s.Value(v, 1)
				if err == nil && body[v] != 'n' {
					sem("request is %s, want an object", valueKind(body[v]))
				} else if err == nil {
					seenRequest = false // null: same as missing
				}
				return end, err
			}
			return s.Value(v, 1)
		})
		if err == nil {
			switch {
			case !seenAPIVersion:
				sem("missing apiVersion: want %s or %s", APIVersionV1, APIVersionV1beta1)
			case !seenKind:
				sem("missing kind: want ConversionReview")
			case kind != nil && string(kind) != "ConversionReview":
				sem("kind is %q, want ConversionReview", kind)
			case !seenRequest:
				sem("missing request")
			case rv.uidRaw == nil:
				sem("missing request.uid")
			case len(rv.uid) == 0:
				sem("request.uid is empty")
			case rv.desired == nil:
				sem("missing request.desiredAPIVersion")
			case len(rv.desired) == 0:
				sem("request.desiredAPIVersion is empty")
			}
		}
	}
	if err == errGiveUp {
		return err
	}
	if err != nil {
		return &RequestError{msg: "request body is not valid JSON: " + err.Error(), syntax: true}
	}
	if end = skipSpace(body, end); end != len(body) {
		return &RequestError{msg: "request body is not valid JSON: " + errAt(end, "unexpected data after the top-level value").Error(), syntax: true}
	}
	if semantic != nil {
		return semantic
	}
	return nil
}

func (rv *review) decodeRequest(s *jsonscan.Scanner, i int, sem func(string, ...any), lazy bool, inline inlineFunc) (int, error) {
	body := s.Data
	var seenUID, seenDesired, seenObjects bool
	end, err := s.Object(i, 2, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "uid":
			str, end, ok, err := s.StringValue(v, 2)
			if err != nil {
				return end, err
			}
			if seenUID {
				sem("duplicate field request.uid")
			}
			seenUID = true
			if !ok {
				sem("request.uid is %s, want a string", valueKind(body[v]))
				return end, nil
			}
			rv.uidRaw, rv.uid = body[v:end], str
			return end, nil
		case "desiredAPIVersion":
			str, end, ok, err := s.StringValue(v, 2)
			if err != nil {
				return end, err
			}
			if seenDesired {
				sem("duplicate field request.desiredAPIVersion")
			}
			seenDesired = true
			if !ok {
				sem("request.desiredAPIVersion is %s, want a string", valueKind(body[v]))
				return end, nil
			}
			rv.desired = str
			return end, nil
		case "objects":
			if seenObjects {
				sem("duplicate field request.objects")
			}
			seenObjects = true
			if v >= len(body) || body[v] != '[' {
				end, err := s.Value(v, 2)
				if err == nil {
					sem("request.objects is %s, want an array", valueKind(body[v]))
				}
				return end, err
			}
			return s.Array(v, 3, func(n, v int) (int, error) {
				if v >= len(body) || body[v] != '{' {
					end, err := s.Value(v, 3)
					if err == nil {
						sem("request.objects[%d] is %s, want an object", n, valueKind(body[v]))
					}
					return end, err
				}
				if inline != nil {
					end, ok := inline(s, v)
					if !ok {
						return v, errGiveUp
					}
					return end, nil
				}
				rv.objects = append(rv.objects, object{})
				o := &rv.objects[len(rv.objects)-1]
				end, err := apirules.ScanHead(s, v, 4, &o.Head, lazy)
				o.raw = body[v:end]
				return end, err
			})
		}
		return s.Value(v, 2)
	})
	if err == nil && !seenObjects {
		sem("missing request.objects")
	}
	return end, err
}

var (
	skipSpace = jsonscan.SkipSpace
	valueKind = jsonscan.Kind
	errAt     = jsonscan.Errorf
)
