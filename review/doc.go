// Package review implements the ConversionReview protocol of Kubernetes
// CustomResourceDefinition conversion webhooks (apiextensions.k8s.io/v1 and
// v1beta1) as an http.Handler.
//
// The handler never decodes objects into maps: it validates the request
// body with a small JSON scanner, hands each object's raw bytes (a
// sub-slice of the body) to the Converter registered for the object's group
// and kind, and appends the converted objects straight into a pooled
// response buffer. Every response is checked against the rules the API
// server applies to a webhook's answer (package apirules: count,
// apiVersion, kind, name, namespace, uid, metadata, labels, annotations,
// JSON the API server decodes) before it is sent; a violation turns the
// review into a Failure with a clear message. Bodies are read with
// internal/jsonscan, whose policy is the API server's decoder: valid UTF-8,
// numbers within float64, nesting within 10000 levels.
//
// Each byte of an object is read once. The body's stop bits are computed
// once, for the envelope decoder and the engine alike. In a review in the
// API server's field order whose objects all go to a *convert.Converter,
// each object is converted where it lies in the body as the decoder
// reaches it (convert's ConvertAt): the engine validates it, finds its end
// and reports its head as read and as written, and the self-check compares
// the two heads. Any other review, or one in which an object fails, is
// answered by the general path, which reports exactly what is wrong: the
// decoder skips over each object to find its end and head, then each is
// converted (a failing review costs up to twice a successful one).
//
// Memory: a request body is read into a buffer that grows with the bytes
// that arrive (at most four times what has arrived, never past the
// declared Content-Length or Options.MaxRequestBytes), so a request that
// declares a large length and sends little costs little. Per-request
// state is pooled; a pooled state keeps at most 16 MiB of body and its
// stop bits (2 MiB), 16 MiB of response, 16384 object entries (about 4
// MiB) and the stop bits of a 1 MiB converted object (128 KiB), about 38
// MiB, and the pool holds about one state per request served at once
// (sync.Pool frees idle ones over two garbage collections). A review of 10,000 Widgets (32 MB)
// peaks under three times its size.
//
// Status codes: 200 for every ConversionReview, including failed
// conversions (result.status Failure; the message names each failing
// object by index, namespace/name, JSON pointer and reason); 400 for a body
// that is not a ConversionReview; 405 for a method other than POST; 413 for
// a body over Options.MaxRequestBytes; 415 for a content type other than
// application/json.
//
// Metrics, registered on Options.Registerer:
//
//	hubspoke_conversion_reviews_total{crd,from_version,to_version,result}
//	hubspoke_conversion_objects_total{crd,from_version,to_version,result}
//	hubspoke_conversion_review_duration_seconds{crd}       (histogram)
//	hubspoke_conversion_request_size_bytes                 (histogram)
//	hubspoke_conversion_self_check_failures_total{crd}
//	hubspoke_conversion_panics_recovered_total
//	hubspoke_conversion_bad_requests_total{code}
//
// crd is Kind.group ("Widget.example.com"); version labels are limited to
// the versions the converter declares ("unknown" otherwise, "mixed" when a
// review holds several); result is success, failure or self_check_failure.
package review
