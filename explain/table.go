package explain

import "regexp"

// Doctor checks the explanations point to. Package doctor defines the same
// names; its tests hold that every one here exists there.
const (
	checkStrategy       = "crd.strategy"
	checkClientConfig   = "crd.clientConfig"
	checkReviewVersions = "crd.conversionReviewVersions"
	checkVersions       = "crd.versions"
	checkConditions     = "crd.conditions"
	checkStoredVersions = "crd.storedVersions"
	checkCABundle       = "crd.caBundle"
	checkService        = "service"
	checkServicePort    = "service.port"
	checkEndpoints      = "endpoints"
	checkEndpointsReady = "endpoints.ready"
	checkReachable      = "webhook.reachable"
	checkCertChain      = "certificate.chain"
	checkCertUsage      = "certificate.usage"
	checkCertNames      = "certificate.names"
	checkCertExpiry     = "certificate.expiry"
	checkDirect         = "conversion.direct"
	checkLatency        = "conversion.latency"
	checkLive           = "conversion.live"
)

// Groups of the patterns.
const (
	gvk  = `(?P<gvk>\S+, Kind=\S*)`
	rest = `(?P<reason>.+)`
	// the webhook client's wrapper of a conversion's failure, or an
	// admission webhook's: what follows is the call's outcome
	callPrefix = `(?:conversion webhook for (?P<gvk>\S+, Kind=\S*) failed|failed calling webhook "(?P<webhook>[^"]*)"(?:: failed to call webhook)?): `
	// the request the error is about: Post "URL" (Go 1.14+) or Post URL
	post = `(?:Post|Get|Put|Patch) "?(?P<url>\[?https?://[^\s"]+)"?`
)

func quoted(name string) string { return `"(?P<` + name + `>[^"\n]*)"` }

const (
	srcConverter  = "k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go"
	srcRest       = "k8s.io/client-go/rest (the API server's webhook client)"
	srcStatus     = "k8s.io/apimachinery/pkg/api/errors (an HTTP status instead of a ConversionReview)"
	srcProxy      = "k8s.io/apiserver/pkg/util/proxy/proxy.go"
	srcWebhook    = "k8s.io/apiserver/pkg/util/webhook"
	srcValidation = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go"
	srcX509       = "crypto/x509 (Go standard library)"
	srcTLS        = "crypto/tls (Go standard library)"
	srcNet        = "net, net/http (Go standard library)"
	srcServerLog  = "net/http's server log (the webhook's side of the connection)"
)

const (
	fixDoctor   = "Run `hubspoke doctor CRD-NAME` (the CRD's name, plural.group): it walks CRD, Service, every endpoint, the certificate and live conversions, and names the first thing broken."
	fixLogs     = "Read the webhook's logs for this request (kubectl logs -n NAMESPACE deploy/WEBHOOK): the message is its own."
	fixEchoMeta = "Copy apiVersion-independent identity from each request object to its converted object: kind, metadata.name, metadata.namespace and metadata.uid, and return the objects in the order of request.objects."
	fixPath     = "Set the path to the webhook's conversion handler, e.g. kubectl patch crd CRD-NAME --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig/service/path\",\"value\":\"/convert\"}]'"
	fixCABundle = "Put the CA that signed the serving certificate in caBundle: kubectl patch crd CRD-NAME --type=merge -p '{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"'$(base64 -w0 ca.crt)'\"}}}}}'"
)

// table holds every message kind. Patterns are made from the format
// strings of the code that writes the messages (see each source).
var table = []entry{
	// --- the call to the webhook: its outcome as the webhook client reports it ---
	{
		id: "conversion-webhook-failed", title: "the webhook refused the conversion", class: ClassRefused, failure: FailureMalformedResponse,
		re:      pattern("conversion webhook for %v failed: %v", gvk, rest),
		cause:   "The webhook answered the review for ${gvk} with result.status Failure and this message, which the API server shows as is: \"${reason}\". It is not an error of the API server, of Go's network stack or of the ConversionReview protocol (explain knows those): the webhook refused the conversion — a direction or version it does not convert, or an error in its conversion code.",
		wrapped: "The API server could not convert ${gvk} objects through the conversion webhook; the reason is the error inside this one.",
		fixes: []string{fixLogs,
			"If it converts only one direction, add the other: the API server converts both ways (to the requested version on reads, to the storage version on writes).",
			"`hubspoke check --crd crd.yaml --webhook URL` sends reviews in every direction and names the pair that fails."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "webhook-call-failed", title: "the API server's call to the webhook failed", class: ClassCall, failure: FailureCall,
		re:      pattern("conversion webhook for %v failed: %v: %v", gvk, post, rest),
		cause:   "The API server's call to the webhook at ${url} for ${gvk} failed before any ConversionReview came back: \"${reason}\". explain does not recognise that error, so it names no cause.",
		wrapped: "The API server's call to the webhook at ${url} for ${gvk} failed before any ConversionReview came back; the reason is the error inside this one.",
		fixes:   []string{fixDoctor},
		check:   checkReachable, source: srcConverter + ", " + srcRest,
		replaces: []string{"conversion-webhook-failed"},
	},
	{
		id: "failed-calling-webhook", title: "the API server could not call a webhook", class: ClassCall, failure: FailureCall,
		re:      pattern("failed calling webhook %q: %v", quoted("webhook"), rest),
		cause:   "The API server could not call webhook \"${webhook}\": \"${reason}\". explain does not recognise that error, so it names no cause.",
		wrapped: "The API server could not call webhook \"${webhook}\"; the reason is the error inside this one.",
		fixes:   []string{fixDoctor},
		check:   checkClientConfig, source: srcWebhook + "/error.go",
	},

	// --- an HTTP status instead of a ConversionReview (client-go turns it into these texts) ---
	{
		id: "webhook-path-not-found", title: "the webhook answered HTTP 404: wrong path", class: ClassCall, failure: FailureCall,
		re:    spaced(callPrefix + `the server could not find the requested resource`),
		cause: "The webhook's server answered HTTP 404 to the review: spec.conversion.webhook.clientConfig names a path (service.path, or the URL's path) the webhook does not serve, or the request reached another server than the webhook.",
		fixes: []string{fixPath, "hubspoke's webhook serves /convert (and /convert/GROUP/KIND); controller-runtime's serves /convert; knative's /resource-conversion."},
		check: checkDirect, source: srcStatus, replaces: []string{"conversion-webhook-failed", "resource-not-found", "failed-calling-webhook"},
	},
	{
		id: "webhook-bad-request", title: "the webhook answered HTTP 400", class: ClassCall, failure: FailureCall,
		re:    spaced(callPrefix + `the server rejected our request for an unknown reason`),
		cause: "The webhook answered the review with HTTP 400 and no ConversionReview: it could not read the request — most often a ConversionReview version it does not decode (the API server sends the first of spec.conversion.webhook.conversionReviewVersions it supports, v1beta1 when v1 is not listed).",
		fixes: []string{"List v1 first in conversionReviewVersions: kubectl patch crd CRD-NAME --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/conversionReviewVersions\",\"value\":[\"v1\",\"v1beta1\"]}]'", fixLogs},
		check: checkReviewVersions, source: srcStatus, replaces: []string{"conversion-webhook-failed", "failed-calling-webhook"},
	},
	{
		id: "webhook-server-error", title: "the webhook answered an HTTP 5xx error", class: ClassCall, failure: FailureCall,
		re:    spaced(callPrefix + `an error on the server \("(?P<body>[^"]*)"\) has prevented the request from succeeding`),
		cause: "The webhook answered the review with an HTTP 5xx error (\"${body}\") instead of a ConversionReview: it crashed or failed while converting (a conversion that fails should answer 200 with result.status Failure and a message).",
		fixes: []string{fixLogs, "Return conversion errors in the ConversionReview (result.status Failure, message) rather than as HTTP errors."},
		check: checkDirect, source: srcStatus, replaces: []string{"conversion-webhook-failed", "failed-calling-webhook"},
	},
	{
		id: "webhook-unavailable", title: "HTTP 503 from the webhook's address", class: ClassCall, failure: FailureCall,
		re:    spaced(callPrefix + `the server is currently unable to handle the request`),
		cause: "The review was answered with HTTP 503 Service Unavailable: the webhook reports itself unavailable (starting, shutting down, overloaded), or a proxy or service mesh sidecar in front of it (Istio, Linkerd) has no healthy upstream.",
		fixes: []string{fixLogs, "If a service mesh injects a sidecar into the webhook pods, exclude the webhook's port from it (the API server is not in the mesh).", fixDoctor},
		check: checkDirect, source: srcStatus, replaces: []string{"conversion-webhook-failed", "failed-calling-webhook"},
	},
	{
		id: "webhook-gateway-timeout", title: "HTTP 504 from the webhook's address", class: ClassCall, failure: FailureCall,
		re:    spaced(callPrefix + `the server was unable to return a response in the time allotted`),
		cause: "The review was answered with HTTP 504 Gateway Timeout: something between the API server and the webhook (a proxy, a mesh sidecar) gave up waiting for it.",
		fixes: []string{"Measure the webhook's latency (hubspoke doctor CRD-NAME, check conversion.latency) and remove the proxy from the API server's path to it."},
		check: checkLatency, source: srcStatus, replaces: []string{"conversion-webhook-failed", "failed-calling-webhook"},
	},
	{
		id: "webhook-http-status", title: "the webhook answered another HTTP status", class: ClassCall, failure: FailureCall,
		re:    spaced(callPrefix + `(?P<status>the server has asked for the client to provide credentials|the server does not allow this method on the requested resource|the server has received too many requests and has asked us to try again later|the server responded with the status code (?P<code>\d+) but did not return more information|the server was unable to respond with a content type that the client supports)`),
		cause: "The webhook's address answered the review with an HTTP error and no ConversionReview (\"${status}\"): the path leads to another handler than the conversion one (authentication, a method or content-type check, rate limiting), or a proxy answered in its place.",
		fixes: []string{"Point clientConfig at the conversion handler, which must accept POST with Content-Type application/json from an unauthenticated client (the API server presents no credentials to a conversion webhook).", fixDoctor},
		check: checkDirect, source: srcStatus, replaces: []string{"conversion-webhook-failed", "failed-calling-webhook"},
	},

	// --- an answer that is not a ConversionReview the API server accepts ---
	{
		id: "empty-response", title: "the webhook answered with an empty body", class: ClassResponse, failure: FailureCall,
		re:    pattern("0-length response with status code: %d and content type: %v", `(?P<code>\d+)`, `(?P<type>\S*)`),
		cause: "The webhook answered HTTP ${code} with an empty body: it wrote no ConversionReview (a handler that returns without writing, or one that failed after sending the status).",
		fixes: []string{fixLogs, "Always write a ConversionReview response, also on failure (result.status Failure with a message)."},
		check: checkDirect, source: srcRest, replaces: []string{"conversion-webhook-failed"},
	},
	{
		id: "response-not-review", title: "the answer is not a ConversionReview", class: ClassResponse, failure: FailureCall,
		re:    spaced(`(?P<decode>couldn't get version/kind; json parse error|Object 'Kind' is missing|json: cannot unmarshal \S+ into Go (?:struct field|value of type) \S+|no kind "[^"]*" is registered for version "[^"]*")`),
		cause: "The webhook answered something the API server cannot decode as a ConversionReview (${decode}): another handler answered at the configured path (an HTML page, a health check), or the webhook writes a different object.",
		fixes: []string{"Point clientConfig at the conversion handler, and answer {\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{...}}.", fixDoctor},
		check: checkDirect, source: srcRest + " (decoding the answer)", replaces: []string{"conversion-webhook-failed"},
	},
	{
		id: "response-uid-mismatch", title: "the response's uid is not the request's", class: ClassResponse, failure: FailureMalformedResponse,
		re:    pattern("expected response.uid=%q, got %q", quoted("want"), quoted("got")),
		cause: "The webhook answered with response.uid \"${got}\" instead of echoing request.uid \"${want}\"; the API server drops a response meant for another request.",
		fixes: []string{"Set response.uid to the uid of the request being answered (never a new or cached one).", fixDoctor},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "response-wrong-kind", title: "the response is not a ConversionReview of the request's version", class: ClassResponse, failure: FailureMalformedResponse,
		re:    pattern("expected webhook response of %v, got %v", `(?P<want>\S+, Kind=\S*)`, `(?P<got>\S*, Kind=\S*)`),
		cause: "The webhook answered with ${got}; the API server sent ${want} and accepts only the same apiVersion and kind back.",
		fixes: []string{"Answer in the version of the request: apiVersion apiextensions.k8s.io/v1 and kind ConversionReview for a v1 request.",
			"If the webhook speaks only v1beta1, list only v1beta1 in spec.conversion.webhook.conversionReviewVersions until it is updated."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "response-other-version", title: "the response is a review of another version", class: ClassResponse, failure: FailureCall,
		re:    pattern("converting (%s) to (%s): unknown conversion", `(?P<got>[^)]+)`, `(?P<want>[^)]+)`),
		cause: "The webhook answered with a ${got} to a request it received as ${want}: a webhook must answer in the version of the review it was sent (for a conversion webhook, the first of conversionReviewVersions the API server supports).",
		fixes: []string{"Answer with the apiVersion of the request's review.",
			"If the webhook speaks only one version, list only that one in spec.conversion.webhook.conversionReviewVersions."},
		check: checkReviewVersions, source: "k8s.io/apimachinery/pkg/conversion/converter.go (decoding the answer)",
	},
	{
		id: "response-missing", title: "the reply holds no response", class: ClassResponse, failure: FailureMalformedResponse,
		re:    pattern("no response provided"),
		cause: "The webhook answered HTTP 200 with a body that has no \"response\" field: not a ConversionReview response (another handler answered, e.g. a health or index page at the configured path, or the request was echoed back).",
		fixes: []string{"Point clientConfig at the conversion handler's path.", "Return {\"apiVersion\":...,\"kind\":\"ConversionReview\",\"response\":{\"uid\":...,\"convertedObjects\":[...],\"result\":{\"status\":\"Success\"}}}."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "result-not-success", title: "result.status is not Success and there is no message", class: ClassRefused, failure: FailureMalformedResponse,
		re:    pattern("response.result.status was '%s', not 'Success'", `(?P<status>[^']*)`),
		cause: "The webhook's response has result.status \"${status}\" (not \"Success\") and no message to say why.",
		fixes: []string{"Set result.status to \"Success\" when the conversion succeeded; on failure, set status \"Failure\" and a message users can act on.", fixLogs},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-count", title: "the webhook returned a different number of objects", class: ClassResponse, failure: FailurePartialResponse,
		re:    pattern("conversion webhook for %v returned %d objects, expected %d", gvk, `(?P<got>\d+)`, `(?P<want>\d+)`),
		cause: "The webhook returned ${got} converted objects for the ${want} in request.objects; it must return exactly one per object, in order (a list is converted in one review).",
		fixes: []string{"Convert every object of request.objects, not only the first, and drop none (also those already at the desired version).", fixDoctor},
		check: checkDirect, source: srcConverter,
	},

	// --- a converted object the API server refuses ---
	{
		id: "object-wrong-version", title: "a converted object has the wrong apiVersion", class: ClassObject, failure: FailureInvalidConvertedObject,
		// "returned invalid converted object at index %v: invalid groupVersion ..." (lists)
		// and "returned invalid object at index 0: invalid groupVersion ..." (one object).
		re:    pattern("conversion webhook for %v returned invalid %vobject at index %v: invalid groupVersion (expected %v, received %v)", gvk, `(?:converted )?`, `(?P<index>\d+)`, `(?P<want>[^,\s]+)`, `(?P<got>[^)]*)`),
		cause: "The converted object at index ${index} has apiVersion ${got}; the review asked for ${want} (request.desiredAPIVersion). The webhook did not convert it, or set apiVersion from something else.",
		fixes: []string{"Set each converted object's apiVersion to request.desiredAPIVersion.", "If the webhook lacks the desired version, add it (the API server converts to every served version and to the storage version)."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-wrong-kind", title: "a converted object has another kind", class: ClassObject, failure: FailureInvalidConvertedObject,
		re:    pattern("conversion webhook for %v returned invalid %vobject at index %v: invalid kind (expected %v, received %v)", gvk, `(?:converted )?`, `(?P<index>\d+)`, `(?P<want>[^,\s]*)`, `(?P<got>[^)]*)`),
		cause: "The converted object at index ${index} has kind \"${got}\" instead of \"${want}\": conversion must keep the kind.",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-changed-name", title: "a converted object changed its name (or the order changed)", class: ClassObject, failure: FailureInvalidConvertedObject,
		re:    pattern("must have the same name: %v != %v", `(?P<want>\S*)`, `(?P<got>\S*)`),
		cause: "A converted object's metadata.name changed from \"${want}\" to \"${got}\": the webhook altered the name, or returned the objects in another order than request.objects.",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-changed-namespace", title: "a converted object changed its namespace", class: ClassObject, failure: FailureInvalidConvertedObject,
		re:    pattern("must have the same namespace: %v != %v", `(?P<want>\S*)`, `(?P<got>\S*)`),
		cause: "A converted object's metadata.namespace changed from \"${want}\" to \"${got}\" (an empty side means the webhook dropped or invented it).",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-changed-uid", title: "a converted object changed its uid", class: ClassObject, failure: FailureInvalidConvertedObject,
		re:    pattern("must have the same UID: %v != %v", `(?P<want>\S*)`, `(?P<got>\S*)`),
		cause: "A converted object's metadata.uid changed from \"${want}\" to \"${got}\": the webhook rebuilt metadata instead of copying it, or reordered the objects.",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-invalid-metadata", title: "a converted object's labels or annotations are invalid", class: ClassObject, failure: FailureInvalidConvertedObject,
		// "returned invalid metadata in object at index %v: %v" (lists) and "returned invalid metadata: %v".
		re:    pattern("conversion webhook for %v returned invalid metadata%v: %v", gvk, `(?: in object at index (?P<index>\d+))?`, rest),
		cause: "The API server keeps only labels and annotations from a converted object's metadata, and these were invalid: ${reason}.",
		fixes: []string{"Return metadata as a JSON object, labels and annotations as maps of strings with valid keys; annotations (all together) under 256 KiB.",
			"If data is kept in an annotation to survive a round trip, keep it small or store it in a field of the hub version."},
		check: checkDirect, source: srcConverter,
	},

	// --- reaching the webhook: Service, port, endpoints ---
	{
		id: "service-not-found", title: "the webhook's Service does not exist", class: ClassCall, failure: FailureCall,
		re:    pattern("%v %q not found", `(?P<resource>services?)`, quoted("service")),
		cause: "The Service \"${service}\" named in spec.conversion.webhook.clientConfig.service does not exist in that namespace: a typo in the name or namespace, the Service was deployed to another namespace, or not deployed (yet).",
		fixes: []string{"Compare clientConfig.service (kubectl get crd CRD-NAME -o jsonpath='{.spec.conversion.webhook.clientConfig.service}') with kubectl get svc -A --field-selector metadata.name=${service}, and fix the side that is wrong.", fixDoctor},
		check: checkService, source: "k8s.io/client-go listers (NotFound), via " + srcProxy,
	},
	{
		id: "service-port-not-found", title: "the Service has no such port", class: ClassCall, failure: FailureCall,
		re:    pattern("no service port %d found for service %q", `(?P<port>\d+)`, quoted("service")),
		cause: "Service \"${service}\" has no port ${port}, the one clientConfig.service.port names (443 when unset).",
		fixes: []string{"Set clientConfig.service.port to one of the Service's ports, or add port ${port} to the Service (targetPort: the container's port)."},
		check: checkServicePort, source: srcProxy,
	},
	{
		id: "no-endpoints", title: "the Service has no ready endpoint", class: ClassCall, failure: FailureCall,
		re:    pattern("no endpoints available for service %q", quoted("service")),
		cause: "Service \"${service}\" has no ready endpoint for the port: no pod matches its selector, the pods are not ready (readiness probe failing, crash loop, pending), or the Service's port name does not match the EndpointSlice's.",
		fixes: []string{"kubectl get endpointslices -n NAMESPACE -l kubernetes.io/service-name=${service} -o wide; kubectl get pods -n NAMESPACE -l SELECTOR",
			"Fix the selector to match the webhook pods' labels, or fix why they are not ready (kubectl describe pod).", fixDoctor},
		check: checkEndpoints, source: srcProxy,
	},
	{
		id: "unsupported-service-type", title: "the Service's type cannot be routed to", class: ClassCall, failure: FailureCall,
		re:    pattern("unsupported service type %q", quoted("type")),
		cause: "The webhook's Service has type \"${type}\"; the API server routes conversions only to ClusterIP, NodePort and LoadBalancer Services.",
		fixes: []string{"Make the Service type ClusterIP (the default) with a selector for the webhook pods."},
		check: checkService, source: srcProxy,
	},
	{
		id: "headless-service", title: "the Service is headless", class: ClassCall, failure: FailureCall,
		re:    pattern(`cannot route to service with ClusterIP "None"`),
		cause: "The webhook's Service is headless (clusterIP: None); the API server needs a ClusterIP to route to.",
		fixes: []string{"Recreate the Service without clusterIP: None."},
		check: checkService, source: srcProxy,
	},
	{
		id: "webhook-no-service-or-url", title: "the webhook's clientConfig has neither service nor url", class: ClassCRD,
		re:    spaced(`webhook configuration must have either service or URL|exactly one of url or service is required|webhookClientConfig: Required value: required when strategy is set to Webhook|required when strategy is set to Webhook`),
		cause: "spec.conversion.webhook.clientConfig must give exactly one of service or url.",
		fixes: []string{"Set clientConfig.service {namespace, name, path, port} for a webhook in the cluster (or url for one outside it), not both."},
		check: checkClientConfig, source: srcWebhook + "/client.go, " + srcValidation,
	},

	// --- TLS: the handshake and crypto/x509's verification ---
	{
		id: "x509-unknown-authority", title: "the webhook's certificate is not signed by the CA the API server trusts", class: ClassTLS, failure: FailureCall,
		re:    pattern("x509: certificate signed by unknown authority"),
		cause: "The webhook's serving chain does not lead to a CA in the CRD's spec.conversion.webhook.clientConfig.caBundle (or, with no caBundle, to the API server's system roots): the caBundle holds another CA (a stale one after a rotation, or cert-manager's injection not done), the webhook serves a certificate from another issuer, or it serves its certificate without the intermediate CA that links it to the caBundle's root. The message does not say which; hubspoke doctor compares the served chain with the caBundle.",
		fixes: []string{fixCABundle,
			"With cert-manager, check the cert-manager.io/inject-ca-from annotation names the Certificate the webhook mounts, and that cainjector runs.",
			"If the certificate is issued by an intermediate CA, serve the chain (tls.crt: the certificate, then the intermediate).",
			"During a CA rotation keep the old and new CA both in caBundle until every pod serves the new certificate."},
		check: checkCertChain, source: srcX509,
	},
	{
		id: "x509-candidate-authority", title: "a CA of that name is trusted, but it did not sign the certificate", class: ClassTLS, failure: FailureCall,
		re:    pattern("%vpossibly because of %v while trying to verify candidate authority certificate %q%v", `(?:x509: certificate signed by unknown authority \()?`, `["`+"`"+`]?(?P<hint>[^"`+"`"+`]*)["`+"`"+`]?`, quoted("ca"), `\)?`),
		cause: "The API server trusts a CA named \"${ca}\", but the webhook's certificate does not verify with it (${hint}): a CA with that name was generated again with a new key, and one side still has the old one — the caBundle holds the old CA, or the webhook serves a certificate from the old (or from the new) CA.",
		fixes: []string{fixCABundle + "   # the CA's current certificate, from the Secret that holds its key", "Reissue the serving certificate from the CA the caBundle holds, and restart or reload the webhook.", fixDoctor},
		check: checkCertChain, source: srcX509,
		replaces: []string{"x509-unknown-authority"},
	},
	{
		id: "x509-wrong-name", title: "the webhook's certificate is for other names", class: ClassTLS, failure: FailureCall,
		re:    pattern("x509: certificate is valid for %v, not %v", `(?P<valid>.+?)`, `(?P<host>[^\s"]+)`),
		cause: "The webhook's certificate is valid for ${valid}, but the API server connects to ${host} (for a Service reference: SERVICE.NAMESPACE.svc) and verifies that name.",
		fixes: []string{"Reissue the serving certificate with the DNS SAN ${host} (and SERVICE.NAMESPACE.svc.cluster.local); a certificate for a pod IP or for localhost does not do.",
			"Or, if the Service name in clientConfig is wrong, fix it to the Service the certificate was made for."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-no-matching-san", title: "the webhook's certificate has no matching name", class: ClassTLS, failure: FailureCall,
		re:    spaced(`x509: certificate is (?:not valid for any names, but wanted to match|valid for \d+ (?:IP SANs|names), but none matched) (?P<host>[^\s"]+)`),
		cause: "The webhook's certificate has no subjectAltName for ${host}, the name the API server verifies (for a Service reference: SERVICE.NAMESPACE.svc).",
		fixes: []string{"Reissue the serving certificate with the DNS SAN ${host}."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-no-ip-sans", title: "the webhook's certificate has no IP SAN for the address", class: ClassTLS, failure: FailureCall,
		re:    pattern("x509: cannot validate certificate for %v because it doesn't contain any IP SANs", `(?P<host>\S+)`),
		cause: "The API server connects to the IP address ${host} (clientConfig.url with an IP), and the certificate has no IP SANs.",
		fixes: []string{"Use a Service reference (clientConfig.service) and a certificate for SERVICE.NAMESPACE.svc, or add the IP SAN ${host}."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-legacy-common-name", title: "the webhook's certificate has its name only in the Common Name", class: ClassTLS, failure: FailureCall,
		// Go 1.15-1.16: "..., use SANs or temporarily enable Common Name matching with GODEBUG=x509ignoreCN=0"; Go 1.17+: "..., use SANs instead".
		re:    spaced(`x509: certificate relies on legacy Common Name field(?:, use SANs(?: instead| or temporarily enable Common Name matching(?: with GODEBUG=x509ignoreCN=0)?)?)?`),
		cause: "The serving certificate names the host only in its subject Common Name, which Go ignores since Go 1.15 (Kubernetes 1.19): it has no subjectAltName extension. GODEBUG=x509ignoreCN=0 re-enabled the old behaviour in Go 1.15 and 1.16 only; no current API server accepts it.",
		fixes: []string{"Reissue the certificate with DNS SANs SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local (openssl: -addext subjectAltName=DNS:...; cert-manager: spec.dnsNames)."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-expired", title: "the webhook's certificate has expired or is not yet valid", class: ClassTLS, failure: FailureCall,
		re:    spaced(`x509: certificate has expired or is not yet valid(?:: (?P<detail>current time \S+ is (?:after|before) [^\s"*]+))?`),
		cause: "The webhook serves a certificate (or an intermediate of its chain) outside its validity period (${detail}): it expired without being renewed, or the clocks disagree.",
		fixes: []string{"Renew the serving certificate (cert-manager: cmctl renew -n NAMESPACE CERTIFICATE; otherwise reissue the Secret); hubspoke's server reloads it from the mounted Secret without a restart.",
			"If it is \"not yet valid\" (current time is before), check the clock of the nodes and of the issuer."},
		check: checkCertExpiry, source: srcX509,
	},
	{
		id: "x509-incompatible-usage", title: "the webhook's certificate is not for TLS servers", class: ClassTLS, failure: FailureCall,
		re:    pattern("x509: certificate specifies an incompatible key usage"),
		cause: "The certificate (or an intermediate CA of its chain) lists extended key usages that do not include serverAuth (TLS Web Server Authentication), so Go refuses it for a server: it was issued for clients only (clientAuth), or from a CSR signed for another purpose (e.g. the kubernetes.io/kube-apiserver-client signer).",
		fixes: []string{"Reissue the serving certificate with the usages digital signature and server auth (cert-manager: spec.usages: [digital signature, key encipherment, server auth]; openssl: -addext extendedKeyUsage=serverAuth)."},
		check: checkCertUsage, source: srcX509,
	},
	{
		id: "x509-not-a-ca", title: "a certificate in the chain may not sign others", class: ClassTLS, failure: FailureCall,
		re:    spaced(`x509: certificate is not authorized to sign other certificates|x509: invalid signature: parent certificate cannot sign this kind of certificate`),
		cause: "A certificate that signed another in the webhook's chain (an intermediate, or the CA in caBundle) is not a CA: no basicConstraints CA:true, or no keyCertSign key usage.",
		fixes: []string{"Issue the serving certificate from a real CA certificate (CA:true, keyCertSign), and put that CA in caBundle."},
		check: checkCertChain, source: srcX509,
	},
	{
		id: "tls-handshake-timeout", title: "the TLS handshake did not complete", class: ClassCall, failure: FailureCall,
		re:    pattern("net/http: TLS handshake timeout"),
		cause: "The connection was made but the TLS handshake did not complete in time (10 s in Kubernetes' clients): the process at the address accepts connections but does not answer TLS (hung, overloaded, a plain TCP proxy with nothing behind it), or packets are dropped after the connection.",
		fixes: []string{fixDoctor + " (its webhook.reachable check names the endpoint whose handshake hangs)", "kubectl logs and the CPU throttling of the webhook pods."},
		check: checkReachable, source: srcNet,
	},
	{
		id: "plain-http", title: "the webhook serves plain HTTP", class: ClassTLS, failure: FailureCall,
		re:    spaced(`http: server gave HTTP response to HTTPS client|tls: first record does not look like a TLS handshake`),
		cause: "The API server always calls a conversion webhook over HTTPS, and the webhook answers plain HTTP (or something else that is not TLS) on that port.",
		fixes: []string{"Serve TLS on the webhook's port (hubspoke serve --cert-dir DIR), with a certificate for SERVICE.NAMESPACE.svc.", "Or point the Service's targetPort at the webhook's HTTPS port, not its metrics or health port."},
		check: checkReachable, source: srcNet,
	},
	{
		id: "tls-client-cert-required", title: "the webhook asks for a client certificate", class: ClassTLS, failure: FailureCall,
		re:    spaced(`remote error: tls: (?P<alert>certificate required|bad certificate)`),
		cause: "The webhook ended the TLS handshake with the alert \"${alert}\": it requires a client certificate, and the API server presents none to a conversion webhook.",
		fixes: []string{"Do not require client certificates on the conversion port (tls.Config ClientAuth: VerifyClientCertIfGiven at most).", fixLogs},
		check: checkReachable, source: srcTLS, replaces: []string{"tls-alert"},
	},
	{
		id: "tls-alert", title: "the webhook aborted the TLS handshake", class: ClassTLS, failure: FailureCall,
		re:    spaced(`remote error: tls: (?P<alert>[a-z][a-z ]+[a-z])`),
		cause: "The webhook ended the TLS handshake with the alert \"${alert}\": the two sides share no TLS version or cipher suite (a webhook restricted to old or unusual ones), or the webhook refused something of the API server's hello.",
		fixes: []string{"Let the webhook accept TLS 1.2 and 1.3 with Go's default cipher suites.", fixLogs},
		check: checkReachable, source: srcTLS,
	},

	// --- the network ---
	{
		id: "connection-refused", title: "nothing listens at the webhook's address", class: ClassCall, failure: FailureCall,
		re:    pattern("dial tcp %v: connect: connection refused", `(?P<addr>\S+)`),
		cause: "Nothing accepts connections at ${addr}: the Service's targetPort is not the port the webhook listens on, or the webhook process is down (crashed, or starting).",
		fixes: []string{"Compare the Service's targetPort with the container's port and the webhook's --addr.", "kubectl get pods and logs of the webhook.", fixDoctor},
		check: checkReachable, source: srcNet,
	},
	{
		id: "egress-proxy-dial-failed", title: "the API server's egress proxy could not reach the webhook", class: ClassCall, failure: FailureCall,
		re:    pattern("proxy error from %s while dialing %s, code %d: %v", `(?P<proxy>\S+)`, `(?P<addr>\S+)`, `(?P<code>\d+)`, `(?P<status>.+)`),
		cause: "The API server reaches the cluster network through an egress proxy (konnectivity, or the sandbox's), and the proxy could not connect to ${addr} (HTTP ${code}): nothing listens there — the webhook process is down or the Service's targetPort is not its port — or the proxy's agents cannot reach the pod.",
		fixes: []string{"kubectl get pods -o wide for the webhook, and compare the Service's targetPort with the webhook's port.", "On konnectivity clusters, check the konnectivity-agent pods and their logs.", fixDoctor},
		check: checkReachable, source: "k8s.io/apiserver/pkg/server/egressselector/egress_selector.go",
	},
	{
		id: "dial-timeout", title: "the webhook's address does not answer", class: ClassCall, failure: FailureCall,
		re:    pattern("dial tcp %v: i/o timeout", `(?P<addr>\S+)`),
		cause: "Connecting to ${addr} timed out: a NetworkPolicy or firewall drops the API server's traffic to the webhook pods (on managed clusters the control plane reaches nodes only on some ports: GKE private clusters allow 443 and 10250), or the endpoint is stale.",
		fixes: []string{"Allow ingress to the webhook pods' port from the API server (NetworkPolicy, cloud firewall).", fixDoctor},
		check: checkReachable, source: srcNet,
	},
	{
		id: "no-route-to-host", title: "no route to the webhook's address", class: ClassCall, failure: FailureCall,
		re:    pattern("dial tcp %v: connect: %v", `(?P<addr>\S+)`, `(?P<reason>no route to host|network is unreachable|host is unreachable)`),
		cause: "The network has no way to ${addr} (${reason}): the pod behind that endpoint is gone while its endpoint is still listed (a stale EndpointSlice, a node down), or the control plane does not reach the pod network (the CNI, a konnectivity agent that is not running).",
		fixes: []string{"kubectl get endpointslices -A -o wide | grep ${addr}; kubectl get pods -o wide -A | grep the pod's IP", fixDoctor},
		check: checkReachable, source: srcNet,
	},
	{
		id: "io-timeout", title: "the webhook's connection went silent", class: ClassCall, failure: FailureCall,
		re:    pattern("%v tcp %v: i/o timeout", `(?P<op>read|write)`, `(?P<addr>\S+)`),
		cause: "The connection to the webhook was made, then a ${op} on it timed out: the webhook stopped answering in the middle of a request (hung, overloaded, throttled), or packets are dropped after the connection (an MTU problem, a NetworkPolicy that lets the handshake through).",
		fixes: []string{"Measure the webhook's latency at each endpoint: hubspoke doctor CRD-NAME (check conversion.latency); check its CPU throttling.", fixDoctor},
		check: checkLatency, source: srcNet, replaces: []string{"dial-timeout"},
	},
	{
		id: "response-header-timeout", title: "no answer to the request in time", class: ClassCall, failure: FailureCall,
		re:    pattern("net/http: timeout awaiting response headers"),
		cause: "The webhook accepted the request but sent no answer before the client's limit: it is slow or hung on the conversion.",
		fixes: []string{"Measure the webhook's latency at each endpoint: hubspoke doctor CRD-NAME (check conversion.latency).", fixLogs},
		check: checkLatency, source: srcNet, replaces: []string{"deadline-exceeded"},
	},
	{
		id: "timeout-connecting", title: "no connection to the webhook in time", class: ClassCall, failure: FailureCall,
		re:    pattern("net/http: request canceled while waiting for connection"),
		cause: "No connection to the webhook could be made before the request's timeout (the TCP connection or the TLS handshake did not complete): packets to the pods are dropped (NetworkPolicy, cloud firewall: GKE private clusters let the control plane reach nodes on 443 and 10250 only), or the process accepts but does not answer.",
		fixes: []string{"Allow ingress to the webhook pods' port from the API server.", fixDoctor},
		check: checkReachable, source: srcNet + " (Go before 1.23)", replaces: []string{"deadline-exceeded"},
	},
	{
		id: "deadline-exceeded", title: "the webhook did not answer in time", class: ClassCall, failure: FailureCall,
		re:    spaced(`context deadline exceeded(?: \(Client\.Timeout exceeded while awaiting headers\))?|Client\.Timeout exceeded while awaiting headers|net/http: request canceled`),
		cause: "The request to the webhook did not complete before its deadline (30 s for a conversion; an admission webhook's timeoutSeconds): the connection could not be made (packets dropped by a NetworkPolicy or firewall) or the webhook did not answer in time (overloaded, hung, too slow for the objects).",
		fixes: []string{"Measure the webhook's latency at each endpoint: hubspoke doctor CRD-NAME (check conversion.latency); scale it or give it more CPU if it is slow.", "If connections hang, check NetworkPolicies and firewalls between the API server and the pods."},
		check: checkLatency, source: "context, net/http (Go standard library)",
	},
	{
		id: "no-such-host", title: "the webhook's host name does not resolve", class: ClassCall, failure: FailureCall,
		re:    pattern("lookup %v%v: no such host", `(?P<host>[^\s:]+)`, `(?: on \S+)?`),
		cause: "The API server could not resolve ${host} in DNS: a clientConfig.url with a wrong host, or an API server that resolves Services by DNS and does not run in the cluster network.",
		fixes: []string{"Prefer clientConfig.service over url for a webhook in the cluster; fix the host name if it is mistyped."},
		check: checkClientConfig, source: srcNet,
	},
	{
		id: "connection-reset", title: "the connection was reset", class: ClassCall, failure: FailureCall,
		re:    pattern("connection reset by peer"),
		cause: "The webhook's side reset the connection: the process crashed or was killed (OOMKilled) during the request, it closes connections it finds idle while the API server reuses them, or a proxy or mesh sidecar in between dropped it.",
		fixes: []string{"kubectl get pods (restarts, OOMKilled) and logs of the webhook.", fixDoctor},
		check: checkReachable, source: srcNet,
	},
	{
		id: "closed-connection", title: "the connection closed while the request was sent", class: ClassCall, failure: FailureCall,
		re:    pattern("use of closed network connection"),
		cause: "The API server's connection to the webhook (or to the egress proxy that carries it) was closed while it was still writing the request: the other side closed it — a webhook that ends connections it refuses after the handshake (one that requires a client certificate does), one that crashed, or a proxy that dropped the tunnel.",
		fixes: []string{fixDoctor + " (webhook.reachable names what each endpoint does with a new connection)", fixLogs},
		check: checkReachable, source: srcNet,
	},
	{
		id: "eof", title: "the connection closed before an answer", class: ClassCall, failure: FailureCall,
		re:    regexp.MustCompile(`: EOF\b`),
		cause: "The connection to the webhook closed before any answer came back: the webhook process exited or restarted during the request (a rollout without graceful shutdown), it closed a kept-alive connection the API server was reusing, or a proxy or mesh sidecar (Istio, Linkerd) in front of it closed it.",
		fixes: []string{"kubectl get pods (restarts) and logs of the webhook around that time.", "If a service mesh injects a sidecar into the webhook pods, exclude the webhook's port from it.", "Drain on SIGTERM: stop accepting, finish the requests in flight (hubspoke serve does)."},
		check: checkReachable, source: srcNet,
	},
	{
		id: "unexpected-eof", title: "the answer was cut off", class: ClassCall, failure: FailureCall,
		re:    pattern("unexpected EOF"),
		cause: "The connection closed in the middle of the webhook's answer: the process died while writing it, a proxy cut it, or the answer is larger than something in between allows.",
		fixes: []string{"kubectl get pods (restarts, OOMKilled) and logs of the webhook.", fixDoctor},
		check: checkReachable, source: srcNet, replaces: []string{"eof"},
	},

	// --- the webhook's own log: the other side of the same failures ---
	{
		id: "webhook-log-bad-certificate", title: "(webhook log) the client refused the webhook's certificate", class: ClassWebhookLog,
		re:    pattern("TLS handshake error from %v: remote error: tls: %v", `(?P<client>\S+)`, `(?P<alert>bad certificate|unknown certificate authority|certificate unknown|unknown certificate)`),
		cause: "This is the webhook's log: the client at ${client} ended the handshake with \"${alert}\" because it did not accept the webhook's certificate. When that client is the API server (its address, or a konnectivity agent's), the API server does not trust this certificate: caBundle holds another CA, the chain lacks an intermediate, the names do not include SERVICE.NAMESPACE.svc, or it expired. The API server's own error says which.",
		fixes: []string{"Read the API server's side of it: kubectl get CRD-PLURAL.VERSION.GROUP shows the x509 error; hubspoke explain it.", fixDoctor},
		check: checkCertChain, source: srcServerLog, replaces: []string{"tls-client-cert-required", "tls-alert"},
	},
	{
		id: "webhook-log-not-tls", title: "(webhook log) a client spoke plain HTTP to the TLS port", class: ClassWebhookLog,
		re:    pattern("TLS handshake error from %v: %v", `(?P<client>\S+)`, `(?:tls: first record does not look like a TLS handshake|client sent an HTTP request to an HTTPS server)`),
		cause: "This is the webhook's log: the client at ${client} sent plain HTTP (or something else that is not TLS) to the webhook's HTTPS port. It is not the API server, which always uses TLS: a probe or a monitoring scrape configured with scheme HTTP, or a client using the wrong port.",
		fixes: []string{"Set scheme: HTTPS on the pod's readiness and liveness probes and on metric scrapes of this port."},
		check: checkReachable, source: srcServerLog, replaces: []string{"plain-http"},
	},
	{
		id: "webhook-log-no-client-cert", title: "(webhook log) the webhook requires a client certificate", class: ClassWebhookLog,
		re:    pattern("TLS handshake error from %v: tls: client didn't provide a certificate", `(?P<client>\S+)`),
		cause: "This is the webhook's log: it requires a client certificate, and the client at ${client} presented none. The API server presents none to a conversion webhook, so every conversion fails (the API server reports remote error: tls: certificate required).",
		fixes: []string{"Do not require client certificates on the conversion port (tls.Config ClientAuth: VerifyClientCertIfGiven at most)."},
		check: checkReachable, source: srcServerLog, replaces: []string{"tls-client-cert-required"},
	},
	{
		id: "webhook-log-eof", title: "(webhook log) a client left before the TLS handshake", class: ClassWebhookLog,
		re:    pattern("TLS handshake error from %v: %v", `(?P<client>\S+)`, `(?P<reason>EOF|unexpected EOF|read tcp \S+: read: connection reset by peer)`),
		cause: "This is the webhook's log: the client at ${client} opened a connection and closed it before the TLS handshake completed (${reason}): a TCP health check (a load balancer, a tcpSocket probe), a port scan, or a client that gave up on its timeout. Harmless, unless the address is the API server's at the time conversions fail.",
		fixes: []string{"If the address is the API server's, see its own error (kubectl get CRD-PLURAL.VERSION.GROUP) and hubspoke explain it."},
		check: checkReachable, source: srcServerLog, replaces: []string{"eof", "unexpected-eof", "connection-reset"},
	},

	// --- the CRD: versions, storedVersions, the conversion stanza ---
	{
		id: "stored-version-removed", title: "a version in status.storedVersions was removed from spec.versions", class: ClassCRD,
		// Kubernetes 1.14-1.27: "must appear in spec.versions"; since: "missing from spec.versions; ..."
		re:    pattern("%vInvalid value: %q: %v", `(?:status\.storedVersions\[(?P<index>\d+)\]: )?`, quoted("version"), `(?:missing from spec\.versions|must appear in spec\.versions)`),
		cause: "Objects may still be stored in etcd as ${version} (it is in status.storedVersions), so the API server refuses a CRD without that version: it could no longer read them.",
		fixes: []string{"Keep ${version} in spec.versions (served: false is enough) until the storage migration is done.",
			"Migrate: hubspoke migrate CRD-NAME (rewrites every object at the storage version, then prunes status.storedVersions); then remove ${version}."},
		check: checkStoredVersions, source: srcValidation,
	},
	{
		id: "stored-versions-lack-storage", title: "status.storedVersions lacks the storage version", class: ClassCRD,
		re:    pattern("must have the storage version %s", `(?P<version>\S+)`),
		cause: "status.storedVersions must list the current storage version ${version}; an edit of the status removed it.",
		fixes: []string{"Patch the status back with ${version} in it: kubectl patch crd CRD-NAME --subresource=status --type=json -p '[{\"op\":\"add\",\"path\":\"/status/storedVersions/-\",\"value\":\"${version}\"}]'"},
		check: checkStoredVersions, source: srcValidation,
	},
	{
		id: "no-stored-version", title: "status.storedVersions is empty", class: ClassCRD,
		re:    pattern("must have at least one stored version"),
		cause: "status.storedVersions is empty: the manifest carries a status block (often status: {storedVersions: []} from a generator) that replaces the API server's.",
		fixes: []string{"Remove the status block from the CRD manifest; the API server fills status.storedVersions itself."},
		check: checkStoredVersions, source: srcValidation,
	},
	{
		id: "storage-version-count", title: "not exactly one storage version", class: ClassCRD,
		re:    pattern("must have exactly one version marked as storage version"),
		cause: "spec.versions must have exactly one version with storage: true; the CRD has none or several.",
		fixes: []string{"Mark exactly one version storage: true; switching it rewrites nothing (only writes re-encode), so migrate afterwards: hubspoke migrate CRD-NAME."},
		check: checkVersions, source: srcValidation,
	},
	{
		id: "review-versions-unrecognized", title: "conversionReviewVersions has no version the API server speaks", class: ClassCRD,
		re:    pattern("must include at least one of %v", `(?P<accepted>v1(?:beta1)?(?:, v1(?:beta1)?)*)`),
		cause: "spec.conversion.webhook.conversionReviewVersions must include a version this API server sends (${accepted}); Kubernetes before 1.16 knows v1beta1 only.",
		fixes: []string{"Set conversionReviewVersions: [v1, v1beta1] (v1 first), as the webhook supports."},
		check: checkReviewVersions, source: srcValidation,
	},
	{
		id: "review-versions-required", title: "conversionReviewVersions is missing", class: ClassCRD,
		re:    spaced(`spec\.conversion(?:\.webhook)?\.conversionReviewVersions: Required value|missing required field "conversionReviewVersions"`),
		cause: "apiextensions.k8s.io/v1 CRDs with strategy Webhook must list conversionReviewVersions (kubectl's client-side validation says the same before the API server does).",
		fixes: []string{"Add conversionReviewVersions: [v1, v1beta1] under spec.conversion.webhook."},
		check: checkReviewVersions, source: srcValidation + ", kubectl's schema validation",
	},
	{
		id: "no-review-version", title: "no ConversionReview version the API server speaks", class: ClassCRD, failure: FailureCall,
		re:    pattern("no supported conversion review versions"),
		cause: "spec.conversion.webhook.conversionReviewVersions lists no version this API server sends (v1, v1beta1).",
		fixes: []string{"Set conversionReviewVersions to [v1, v1beta1] (or [v1] if the webhook speaks v1 only)."},
		check: checkReviewVersions, source: srcConverter,
	},
	{
		id: "invalid-cabundle", title: "the CRD's caBundle is not a PEM certificate", class: ClassCRD,
		re:    spaced(`The conversion webhook CABundle is invalid|unable to load root certificates: (?P<reason>unable to parse bytes as PEM block|[^\n"]+)`),
		cause: "spec.conversion.webhook.clientConfig.caBundle does not hold a PEM certificate the API server can load: it is not base64 of PEM (base64 applied twice, or raw DER), or holds something else. A CRD created so is not Established (condition Established=False, reason InvalidCABundle): its resources are not served at all.",
		fixes: []string{fixCABundle + "   # base64 of the PEM file, once"},
		check: checkConditions, source: "k8s.io/apiserver/pkg/util/webhook/validation.go, k8s.io/apiextensions-apiserver/pkg/controller/establish",
	},
	{
		id: "unknown-strategy", title: "an unknown conversion strategy", class: ClassCRD,
		re:    regexp.MustCompile(`unknown conversion strategy "(?P<strategy>[^"]*)"`),
		cause: "The CRD's spec.conversion.strategy \"${strategy}\" is neither None nor Webhook.",
		fixes: []string{"Set spec.conversion.strategy to Webhook (with a webhook) or None (only when every version has the same schema)."},
		check: checkStrategy, source: "k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/converter.go",
	},
	{
		id: "crd-not-webhook-conversion", title: "the CRD does not use webhook conversion", class: ClassCRD,
		re:    pattern("custom resource %q isn't configured for webhook conversion", quoted("crd")),
		cause: "The webhook's controller (knative.dev/pkg) found CRD \"${crd}\" with a conversion strategy other than Webhook: it is registered for conversion there but the CRD was installed without spec.conversion.",
		fixes: []string{"Install the CRD with spec.conversion.strategy: Webhook and the webhook's clientConfig, or remove the resource from the webhook's conversion list."},
		check: checkStrategy, source: "knative.dev/pkg/webhook/resourcesemantics/conversion",
	},

	// --- reading stored objects ---
	{
		id: "storage-corrupt-object", title: "the API server could not decode a stored object", class: ClassStorage,
		re:      pattern("StorageError: corrupt object, Code: %d, Key: %s, ResourceVersion: %d, AdditionalErrorMsg: %v", `(?P<code>\d+)`, `(?P<key>\S+)`, `(?P<rv>\d+)`, rest),
		cause:   "The object stored at ${key} could not be decrypted or decoded: its data in etcd is damaged, encrypted with a key the API server no longer has, or of a version the CRD no longer defines.",
		wrapped: "The API server calls the object at ${key} corrupt because it could not convert it for this read; the stored data is fine — the conversion failed, for the reason inside this error.",
		fixes: []string{"Check the API server's encryption configuration and the CRD's versions against status.storedVersions.",
			"As a last resort, delete the one object: kubectl delete --ignore-store-read-error-with-cluster-breaking-potential ..."},
		check: checkLive, source: "k8s.io/apiserver/pkg/storage/errors.go",
	},

	// --- discovery: what clients see when the API server serves no such resource ---
	{
		id: "resource-not-found", title: "the API server does not serve this resource", class: ClassDiscovery,
		re:    pattern("the server could not find the requested resource"),
		cause: "The API server has no such resource at this group and version: the version is not served (served: false) or not in spec.versions, the CRD is not Established (an invalid caBundle keeps it so), the CRD is not installed, or the group or plural is mistyped.",
		fixes: []string{"kubectl get crd CRD-NAME -o jsonpath='{.spec.versions[*].name} {.spec.versions[*].served} {.status.conditions}'", fixDoctor},
		check: checkConditions, source: "k8s.io/apimachinery/pkg/api/errors (NotFound)",
	},
	{
		id: "no-kind-match", title: "no resource for this kind and version", class: ClassDiscovery,
		re:    pattern("no matches for kind %v in version %v", quoted("kind"), `"(?P<version>[^"\s]*)"?`),
		cause: "The API server serves no kind \"${kind}\" in ${version}: the CRD is not installed (yet), the version is not served or was removed, the CRD is not Established (an invalid caBundle keeps it so), or the client's discovery cache is stale.",
		fixes: []string{"kubectl api-resources | grep -i ${kind}; install the CRD first, or use a served version.", fixDoctor},
		check: checkVersions, source: "k8s.io/apimachinery/pkg/api/meta (NoKindMatchError)",
	},
	{
		id: "resource-type-unknown", title: "kubectl knows no such resource type", class: ClassDiscovery,
		re:    pattern("the server doesn't have a resource type %q", quoted("resource")),
		cause: "Discovery lists no resource \"${resource}\": the CRD is not installed, not Established (an invalid caBundle keeps it so, and its resources are then not served), the name is not one of its plural, singular or short names, or kubectl's discovery cache is stale (kubectl api-resources refreshes it).",
		fixes: []string{"kubectl get crd | grep ${resource}; kubectl get crd CRD-NAME -o jsonpath='{.status.conditions}'", fixDoctor},
		check: checkConditions, source: "k8s.io/kubectl/pkg/cmd/util/helpers.go",
	},
	{
		id: "error-resolving-resource", title: "the API server knows the CRD but cannot serve it", class: ClassDiscovery,
		re:    pattern("error resolving resource"),
		cause: "The API server has the CRD but could not set up what serves its resources. With a conversion webhook the usual reason is a clientConfig it cannot use — a caBundle that is not PEM, which also keeps the CRD from being Established (condition Established=False, reason InvalidCABundle); the API server's own log names the error.",
		fixes: []string{"kubectl get crd CRD-NAME -o jsonpath='{.status.conditions}'", fixDoctor},
		check: checkConditions, source: "k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go",
	},
	{
		id: "discovery-unavailable", title: "part of the API could not be discovered", class: ClassDiscovery,
		re:    pattern("unable to retrieve the complete list of server APIs: %v", `(?P<groups>[^\n"]+)`),
		cause: "Discovery failed for some API groups (${groups}). \"the server is currently unable to handle the request\" there means an aggregated API (an APIService, such as metrics.k8s.io) whose backend is down; it is not a CRD or its conversion webhook.",
		fixes: []string{"kubectl get apiservices | grep False; fix or remove the unavailable APIService."},
		check: checkVersions, source: "k8s.io/client-go/discovery",
	},
}
