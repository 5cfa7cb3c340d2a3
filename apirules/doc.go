// Package apirules holds, once, the rules the Kubernetes API server applies
// to a conversion webhook's answer (k8s.io/apiextensions-apiserver's
// pkg/apiserver/conversion/webhook_converter.go and what it calls). A
// response that breaks one is refused by the API server, so every reader or
// writer of ConversionReviews in hubspoke checks them here: the webhook's
// self-check (package review), check's output validation and black-box
// conformance, and migrate's webhook probe.
//
// For the review as a whole (Response), read as the API server's decoder
// reads it (keys matched exactly, the last of duplicates winning, a value
// of the wrong JSON type failing the whole answer): the answer is a
// ConversionReview of the request's apiVersion (a v1beta1 answer may leave
// apiVersion and kind out; a v1 answer to a v1beta1 request fails),
// response.uid echoes the request's (v1), result.status is Success, and
// convertedObjects has exactly as many items as request.objects, in order,
// each checked against the request object at its index. Its errors are
// *ResponseError values naming the rule.
//
// For each converted object (Object, CheckHead):
//
//   - it is a JSON object the API server decodes, with its numbers as int64
//     or float64 (a literal such as 1e400 or a 400-digit integer fails the
//     whole response), nested at most MaxObjectDepth levels (the decoder's
//     limit of MaxDepth counts the EnvelopeDepth levels of the review
//     around the object), and with strings of valid UTF-8 (the decoder would
//     replace an invalid byte with U+FFFD, changing the object silently);
//   - apiVersion is the desired apiVersion, and kind, metadata.name,
//     metadata.namespace and metadata.uid are the original's;
//   - metadata is present and is an object, even when the original has
//     none (as in server-side apply across versions); the API server then
//     restores it to an empty object and keeps its labels and annotations,
//     so a webhook adds an empty one (NeedsMetadata, EmptyMetadata);
//   - metadata.labels and metadata.annotations, which the API server takes
//     from the response (all other metadata it restores from the
//     original), are objects of strings which, when they differ from the
//     original's, are valid: label keys qualified names and values label
//     values, annotation keys qualified names, annotations at most
//     MaxAnnotationsBytes in total.
//
// The package links no client-go and no net/http.
package apirules
