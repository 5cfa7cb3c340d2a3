package v1alpha1

import "encoding/json"

// ServedPath is where a webhook run with --watch-conversions reports what
// it serves: GET answers a [Served] as JSON, on the same HTTPS port as
// /convert and the probes. ServedPath + "/NAME" answers one
// [ServedConversion] with its Document.
//
// Why an endpoint the operator polls, rather than pod annotations or
// conditions the replicas write: the answer comes from the process that
// converts, at the address the API server calls (the endpoint in the
// Service's EndpointSlice), over the TLS the API server will check — so
// "every ready replica serves generation N" is read from the replicas the
// API server can reach, never from a write that may lag or outlive the
// process; and the webhook needs no write access to the API (it only
// reads Conversion objects).
const ServedPath = "/conversions"

// Served is what one webhook replica serves.
type Served struct {
	// Funcs are the Go funcs the binary registers (webhookmain), which a
	// Conversion's funcs rules may name.
	Funcs []string `json:"funcs"`
	// Synced is true once the replica has loaded every Conversion that
	// existed when it started (it is not ready before).
	Synced bool `json:"synced"`
	// Conversions, by name.
	Conversions []ServedConversion `json:"conversions"`
}

// ServedConversion is one Conversion in a replica.
type ServedConversion struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
	// Generation is the generation being served (0: none loaded).
	Generation int64 `json:"generation,omitempty"`
	// CRD is "Kind.group" of what it converts.
	CRD string `json:"crd,omitempty"`
	// FailedGeneration is the newest generation that failed to load, and
	// Error why; Generation keeps serving meanwhile.
	FailedGeneration int64  `json:"failedGeneration,omitempty"`
	Error            string `json:"error,omitempty"`
	// Document is the served rule document (ServedPath/NAME only).
	Document json.RawMessage `json:"document,omitempty"`
}
