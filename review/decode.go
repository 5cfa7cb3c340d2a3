package review

import "fmt"

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

// object is one entry of request.objects, or a converted object.
type object struct {
	raw              []byte // the whole JSON object
	apiVersion, kind []byte // nil when absent or not a string
	meta             meta
}

type meta struct {
	present, notObject   bool
	name, namespace, uid []byte // nil when absent or not a string
	// labels and annotations are the raw JSON values; nil when absent.
	labels, annotations []byte
}

var errNoBody = &RequestError{msg: "request body is empty", syntax: true}

// decode parses body as a ConversionReview request. It validates the whole
// body as JSON, then the envelope; objects are only scanned for the fields
// the handler needs.
func (rv *review) decode(body []byte) error { return rv.decodeMode(body, nil, false) }

// decodeLazy is decode without validating the inside of the objects beyond
// what it reads (apiVersion, kind and the metadata it needs): it only
// finds where each value ends. The caller validates each object later,
// typically by converting it with a *convert.Converter, which validates
// whatever it converts, and calls decode to report a body that is not
// valid JSON exactly as decode would. Any error it returns may differ from
// decode's. marks are the stop bits of body (internal/stopbits), with which
// it finds where strings end.
func (rv *review) decodeLazy(body []byte, marks []uint64) error {
	return rv.decodeMode(body, marks, true)
}

func (rv *review) decodeMode(body []byte, marks []uint64, lazy bool) error {
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
		end, err = skipValue(body, i, 0)
		sem("request body is %s, not a ConversionReview object", valueKind(body[i]))
	} else {
		var seenAPIVersion, seenKind, seenRequest bool
		var kind []byte
		end, err = eachMember(body, i, 1, func(key []byte, v int) (int, error) {
			switch string(key) {
			case "apiVersion":
				s, end, ok, err := stringValue(body, v, 1)
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
				case string(s) == APIVersionV1:
					rv.apiVersion = APIVersionV1
				case string(s) == APIVersionV1beta1:
					rv.apiVersion = APIVersionV1beta1
				default:
					sem("unsupported apiVersion %q: want %s or %s", s, APIVersionV1, APIVersionV1beta1)
				}
				return end, nil
			case "kind":
				s, end, ok, err := stringValue(body, v, 1)
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
				kind = s
				return end, nil
			case "request":
				if seenRequest {
					sem("duplicate field request")
				}
				seenRequest = true
				if v < len(body) && body[v] == '{' {
					return rv.decodeRequest(body, marks, v, sem, lazy)
				}
				end, err := skipValue(body, v, 1)
				if err == nil && body[v] != 'n' {
					sem("request is %s, want an object", valueKind(body[v]))
				} else if err == nil {
					seenRequest = false // null: same as missing
				}
				return end, err
			}
			return skipValue(body, v, 1)
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

func (rv *review) decodeRequest(body []byte, marks []uint64, i int, sem func(string, ...any), lazy bool) (int, error) {
	var seenUID, seenDesired, seenObjects bool
	end, err := eachMember(body, i, 2, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "uid":
			s, end, ok, err := stringValue(body, v, 2)
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
			rv.uidRaw, rv.uid = body[v:end], s
			return end, nil
		case "desiredAPIVersion":
			s, end, ok, err := stringValue(body, v, 2)
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
			if s == nil {
				s = []byte{}
			}
			rv.desired = s
			return end, nil
		case "objects":
			if seenObjects {
				sem("duplicate field request.objects")
			}
			seenObjects = true
			if v >= len(body) || body[v] != '[' {
				end, err := skipValue(body, v, 2)
				if err == nil {
					sem("request.objects is %s, want an array", valueKind(body[v]))
				}
				return end, err
			}
			return eachElement(body, v, 3, func(n, v int) (int, error) {
				if v >= len(body) || body[v] != '{' {
					end, err := skipValue(body, v, 3)
					if err == nil {
						sem("request.objects[%d] is %s, want an object", n, valueKind(body[v]))
					}
					return end, err
				}
				rv.objects = append(rv.objects, object{})
				o := &rv.objects[len(rv.objects)-1]
				end, err := scanObject(body, marks, v, 4, o, lazy)
				o.raw = body[v:end]
				return end, err
			})
		}
		return skipValue(body, v, 2)
	})
	if err == nil && !seenObjects {
		sem("missing request.objects")
	}
	return end, err
}

// scanObject validates the JSON object at d[i], at nesting depth depth, and
// fills o with its apiVersion, kind and metadata fields. Like the API
// server's decoder, the last of duplicate keys wins. When trusted, the
// values of other fields are skipped without validation (see skipTrusted);
// where that finds a problem, they are validated, for the error. marks are
// the stop bits of d when trusted.
func scanObject(d []byte, marks []uint64, i, depth int, o *object, trusted bool) (int, error) {
	skip := func(v, depth int) (int, error) {
		if trusted {
			if end, err := skipTrusted(d, marks, v, depth); err == nil {
				return end, nil
			}
		}
		return skipValue(d, v, depth)
	}
	return eachMember(d, i, depth, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "apiVersion":
			s, end, ok, err := stringValue(d, v, depth)
			if ok {
				o.apiVersion = nonNil(s)
			} else {
				o.apiVersion = nil
			}
			return end, err
		case "kind":
			s, end, ok, err := stringValue(d, v, depth)
			if ok {
				o.kind = nonNil(s)
			} else {
				o.kind = nil
			}
			return end, err
		case "metadata":
			o.meta = meta{present: true}
			if v >= len(d) || d[v] != '{' {
				o.meta.notObject = v < len(d) && d[v] != 'n'
				o.meta.present = !(v < len(d) && d[v] == 'n')
				return skip(v, depth)
			}
			return eachMember(d, v, depth+1, func(key []byte, v int) (int, error) {
				var dst *[]byte
				switch string(key) {
				case "name":
					dst = &o.meta.name
				case "namespace":
					dst = &o.meta.namespace
				case "uid":
					dst = &o.meta.uid
				case "labels", "annotations":
					end, err := skip(v, depth+1)
					raw := d[v:end]
					if string(raw) == "null" {
						raw = nil
					}
					if key[0] == 'l' {
						o.meta.labels = raw
					} else {
						o.meta.annotations = raw
					}
					return end, err
				default:
					return skip(v, depth+1)
				}
				s, end, ok, err := stringValue(d, v, depth+1)
				if ok {
					*dst = nonNil(s)
				} else {
					*dst = nil
				}
				return end, err
			})
		}
		return skip(v, depth)
	})
}

func nonNil(s []byte) []byte {
	if s == nil {
		return []byte{}
	}
	return s
}
