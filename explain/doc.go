// Package explain translates the error messages users see around a
// conversion webhook — from kubectl, a controller's log or an event, or the
// webhook's own log — into where the failure happened (its Class, and the
// failure_type the API server counts it under), their cause, the likely
// fixes and the `hubspoke doctor` check that confirms the diagnosis.
//
// The table of messages is built from the format strings of the code that
// writes them: the API server's conversion webhook client
// (k8s.io/apiextensions-apiserver/pkg/apiserver/conversion) and the
// client-go request it makes, its service resolver
// (k8s.io/apiserver/pkg/util/proxy and .../util/webhook), the CRD
// validation (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation),
// Go's crypto/x509, crypto/tls, net and net/http (the server's log too).
// Its tests produce each message by running that code, so a change of
// wording upstream fails them; older wordings of the same messages are
// recognised too.
//
// A message usually nests several errors ("conversion webhook for X failed:
// Post URL: tls: failed to verify certificate: x509: ..."). Explain returns
// one Explanation per recognised part, the innermost — the root cause —
// first. Messages are read as users paste them: JSON escapes of a
// structured log line are undone, lines wrapped at a space or in a word
// are joined, and the values taken from a message are cleaned of what
// surrounds them. A message in which nothing is recognised gives no
// Explanation at all (see Unrecognised): no cause is guessed, and an error
// explain does not know inside a call it does know is reported as that
// call's failure, for an unknown reason.
//
// The package imports neither client-go nor net/http: package doctor uses
// it to name the cause of a live conversion failure.
package explain
