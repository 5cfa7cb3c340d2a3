// Package explain translates the error messages users see around a
// conversion webhook — from kubectl, a controller's log or an event — into
// their cause, the likely fixes and the `hubspoke doctor` check that
// confirms the diagnosis.
//
// The table of messages is built from the format strings of the code that
// writes them: the API server's conversion webhook client
// (k8s.io/apiextensions-apiserver/pkg/apiserver/conversion), its service
// resolver (k8s.io/apiserver/pkg/util/proxy and .../util/webhook), the CRD
// validation (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation),
// Go's crypto/x509, crypto/tls and net. Its tests produce each message by
// running that code, so a change of wording upstream fails them.
//
// A message usually nests several errors ("conversion webhook for X failed:
// Post URL: tls: failed to verify certificate: x509: ..."). Explain returns
// one Explanation per recognised part, the innermost — the root cause —
// first.
//
// The package imports neither client-go nor net/http: package doctor uses
// it to name the cause of a live conversion failure.
package explain
