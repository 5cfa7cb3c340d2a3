package explain

import "regexp"

// Doctor checks the explanations point to. Package doctor defines the same
// names; its tests hold that every one here exists there.
const (
	checkStrategy       = "crd.strategy"
	checkClientConfig   = "crd.clientConfig"
	checkReviewVersions = "crd.conversionReviewVersions"
	checkVersions       = "crd.versions"
	checkStoredVersions = "crd.storedVersions"
	checkService        = "service"
	checkServicePort    = "service.port"
	checkEndpoints      = "endpoints"
	checkEndpointsReady = "endpoints.ready"
	checkCertChain      = "certificate.chain"
	checkCertNames      = "certificate.names"
	checkCertExpiry     = "certificate.expiry"
	checkReachable      = "webhook.reachable"
	checkDirect         = "conversion.direct"
	checkLive           = "conversion.live"
)

// Groups of the patterns.
const (
	gvk  = `(?P<gvk>\S+, Kind=\S*)`
	rest = `(?P<reason>.+)`
)

func quoted(name string) string { return `"(?P<` + name + `>[^"]*)"` }

const (
	srcConverter  = "k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go"
	srcProxy      = "k8s.io/apiserver/pkg/util/proxy/proxy.go"
	srcWebhook    = "k8s.io/apiserver/pkg/util/webhook"
	srcValidation = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go"
	srcX509       = "crypto/x509 (Go standard library)"
	srcNet        = "net, net/http (Go standard library)"
)

const (
	fixDoctor   = "Run `hubspoke doctor CRD-NAME` (the CRD's name, plural.group): it walks CRD, Service, endpoints, certificate and a live conversion, and names the first thing broken."
	fixLogs     = "Read the webhook's logs for this request (kubectl logs -n NAMESPACE deploy/WEBHOOK): the message is its own."
	fixEchoMeta = "Copy apiVersion-independent identity from each request object to its converted object: kind, metadata.name, metadata.namespace and metadata.uid, and return the objects in the order of request.objects."
)

// table holds every message kind. Patterns are made from the format
// strings of the code that writes the messages (see each source).
var table = []entry{
	// --- the conversion webhook client of the API server ---
	{
		id: "conversion-webhook-failed", title: "a conversion through the webhook failed",
		re:      pattern("conversion webhook for %v failed: %v", gvk, rest),
		cause:   "The webhook answered the review for ${gvk} with result.status Failure and this message, which the API server shows as is: \"${reason}\". The webhook refused the conversion: a direction or version it does not convert, or an error in its conversion code.",
		wrapped: "The API server could not convert ${gvk} objects through the conversion webhook; the reason is the error inside this one.",
		fixes: []string{fixLogs,
			"If it converts only one direction, add the other: the API server converts both ways (to the requested version on reads, to the storage version on writes).",
			"`hubspoke check --crd crd.yaml --webhook URL` sends reviews in every direction and names the pair that fails."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "webhook-path-not-found", title: "the webhook answered 404: wrong path",
		re:    pattern("conversion webhook for %v failed: the server could not find the requested resource", gvk),
		cause: "The webhook's server answered HTTP 404 to the review for ${gvk}: spec.conversion.webhook.clientConfig names a path (service.path, or the URL's path) the webhook does not serve.",
		fixes: []string{"Set the path to the webhook's conversion handler, e.g. kubectl patch crd CRD-NAME --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig/service/path\",\"value\":\"/convert\"}]'",
			"hubspoke's webhook serves /convert (and /convert/GROUP/KIND); controller-runtime's serves /convert."},
		check: checkDirect, source: srcConverter, replaces: []string{"conversion-webhook-failed", "resource-not-found"},
	},
	{
		id: "webhook-bad-request", title: "the webhook answered HTTP 400",
		re:    pattern("conversion webhook for %v failed: the server rejected our request for an unknown reason", gvk),
		cause: "The webhook answered the review for ${gvk} with HTTP 400 and no ConversionReview: it could not read the request — most often a ConversionReview version it does not decode (the API server sends the first of spec.conversion.conversionReviewVersions it supports, v1beta1 when v1 is not listed).",
		fixes: []string{"List v1 first in conversionReviewVersions: kubectl patch crd CRD-NAME --type=json -p '[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/conversionReviewVersions\",\"value\":[\"v1\",\"v1beta1\"]}]'", fixLogs},
		check: checkReviewVersions, source: srcConverter + " (HTTP 400 through k8s.io/apimachinery/pkg/api/errors)",
		replaces: []string{"conversion-webhook-failed"},
	},
	{
		id: "webhook-server-error", title: "the webhook answered an HTTP error",
		re:    pattern("conversion webhook for %v failed: an error on the server (%q) has prevented the request from succeeding", gvk, quoted("body")),
		cause: "The webhook answered the review for ${gvk} with an HTTP 5xx error (\"${body}\") instead of a ConversionReview: it crashed or failed while converting (a conversion that fails should answer 200 with result.status Failure and a message).",
		fixes: []string{fixLogs, "Return conversion errors in the ConversionReview (result.status Failure, message) rather than as HTTP errors."},
		check: checkDirect, source: srcConverter + " (HTTP 5xx through k8s.io/apimachinery/pkg/api/errors)",
		replaces: []string{"conversion-webhook-failed"},
	},
	{
		id: "response-uid-mismatch", title: "the response's uid is not the request's",
		re:    pattern("expected response.uid=%q, got %q", quoted("want"), quoted("got")),
		cause: "The webhook answered with response.uid \"${got}\" instead of echoing request.uid \"${want}\"; the API server drops a response meant for another request.",
		fixes: []string{"Set response.uid to the uid of the request being answered (never a new or cached one).", fixDoctor},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "response-wrong-kind", title: "the response is not a ConversionReview of the request's version",
		re:    pattern("expected webhook response of %v, got %v", `(?P<want>\S+, Kind=\S*)`, `(?P<got>\S*, Kind=\S*)`),
		cause: "The webhook answered with ${got}; the API server sent ${want} and accepts only the same apiVersion and kind back.",
		fixes: []string{"Answer in the version of the request: apiVersion apiextensions.k8s.io/v1 and kind ConversionReview for a v1 request.",
			"If the webhook speaks only v1beta1, list only v1beta1 in spec.conversion.conversionReviewVersions until it is updated."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "response-other-version", title: "the response is a ConversionReview of another version",
		re:    pattern("converting (%s) to (%s): unknown conversion", `(?P<got>[^)]+)`, `(?P<want>[^)]+)`),
		cause: "The webhook answered with a ${got} to a request it received as ${want}: a webhook must answer in the ConversionReview version of the request (the first of conversionReviewVersions the API server supports).",
		fixes: []string{"Answer with the apiVersion of the request's ConversionReview.",
			"If the webhook speaks only one version, list only that one in spec.conversion.conversionReviewVersions."},
		check: checkReviewVersions, source: "k8s.io/apimachinery/pkg/conversion/converter.go (decoding the reply)",
	},
	{
		id: "response-missing", title: "the reply holds no response",
		re:    pattern("no response provided"),
		cause: "The webhook answered HTTP 200 with a body that has no \"response\" field: not a ConversionReview response (another handler answered, e.g. a health or index page at the configured path, or the request was echoed back).",
		fixes: []string{"Point clientConfig at the conversion handler's path.", "Return {\"apiVersion\":...,\"kind\":\"ConversionReview\",\"response\":{\"uid\":...,\"convertedObjects\":[...],\"result\":{\"status\":\"Success\"}}}."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "result-not-success", title: "result.status is not Success and there is no message",
		re:    pattern("response.result.status was '%s', not 'Success'", `(?P<status>[^']*)`),
		cause: "The webhook's response has result.status \"${status}\" (not \"Success\") and no message to say why.",
		fixes: []string{"Set result.status to \"Success\" when the conversion succeeded; on failure, set status \"Failure\" and a message users can act on.", fixLogs},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-count", title: "the webhook returned a different number of objects",
		re:    pattern("conversion webhook for %v returned %d objects, expected %d", gvk, `(?P<got>\d+)`, `(?P<want>\d+)`),
		cause: "The webhook returned ${got} converted objects for the ${want} in request.objects; it must return exactly one per object, in order (a list is converted in one review).",
		fixes: []string{"Convert every object of request.objects, not only the first, and drop none (also those already at the desired version).", fixDoctor},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-wrong-version", title: "a converted object has the wrong apiVersion",
		// Two formats: "returned invalid converted object at index %v: invalid groupVersion ..." (lists)
		// and "returned invalid object at index 0: invalid groupVersion ..." (one object).
		re:    pattern("conversion webhook for %v returned invalid %vobject at index %v: invalid groupVersion (expected %v, received %v)", gvk, `(?:converted )?`, `(?P<index>\d+)`, `(?P<want>[^,\s]+)`, `(?P<got>[^)]*)`),
		cause: "The converted object at index ${index} has apiVersion ${got}; the review asked for ${want} (request.desiredAPIVersion). The webhook did not convert it, or set apiVersion from something else.",
		fixes: []string{"Set each converted object's apiVersion to request.desiredAPIVersion.", "If the webhook lacks the desired version, add it (the API server converts to every served version and to the storage version)."},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-wrong-kind", title: "a converted object has another kind",
		re:    pattern("conversion webhook for %v returned invalid %vobject at index %v: invalid kind (expected %v, received %v)", gvk, `(?:converted )?`, `(?P<index>\d+)`, `(?P<want>[^,\s]*)`, `(?P<got>[^)]*)`),
		cause: "The converted object at index ${index} has kind \"${got}\" instead of \"${want}\": conversion must keep the kind.",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},

	{
		id: "object-changed-name", title: "a converted object changed its name (or the order changed)",
		re:    pattern("must have the same name: %v != %v", `(?P<want>\S*)`, `(?P<got>\S*)`),
		cause: "A converted object's metadata.name changed from \"${want}\" to \"${got}\": the webhook altered the name, or returned the objects in another order than request.objects.",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-changed-namespace", title: "a converted object changed its namespace",
		re:    pattern("must have the same namespace: %v != %v", `(?P<want>\S*)`, `(?P<got>\S*)`),
		cause: "A converted object's metadata.namespace changed from \"${want}\" to \"${got}\" (an empty side means the webhook dropped or invented it).",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-changed-uid", title: "a converted object changed its uid",
		re:    pattern("must have the same UID: %v != %v", `(?P<want>\S*)`, `(?P<got>\S*)`),
		cause: "A converted object's metadata.uid changed from \"${want}\" to \"${got}\": the webhook rebuilt metadata instead of copying it, or reordered the objects.",
		fixes: []string{fixEchoMeta},
		check: checkDirect, source: srcConverter,
	},
	{
		id: "object-invalid-metadata", title: "a converted object's labels or annotations are invalid",
		// "returned invalid metadata in object at index %v: %v" (lists) and "returned invalid metadata: %v".
		re:    pattern("conversion webhook for %v returned invalid metadata%v: %v", gvk, `(?: in object at index (?P<index>\d+))?`, rest),
		cause: "The API server keeps only labels and annotations from a converted object's metadata, and these were invalid: ${reason}.",
		fixes: []string{"Return metadata as a JSON object, labels and annotations as maps of strings with valid keys; annotations (all together) under 256 KiB.",
			"If data is kept in an annotation to survive a round trip, keep it small or store it in a field of the hub version."},
		check: checkDirect, source: srcConverter,
	},

	{
		id: "no-review-version", title: "no ConversionReview version the API server speaks",
		re:    pattern("no supported conversion review versions"),
		cause: "spec.conversion.conversionReviewVersions lists no version this API server sends (v1, v1beta1).",
		fixes: []string{"Set conversionReviewVersions to [v1, v1beta1] (or [v1] if the webhook speaks v1 only)."},
		check: checkReviewVersions, source: srcConverter,
	},

	// --- reaching the webhook: Service, port, endpoints ---
	{
		id: "service-not-found", title: "the webhook's Service does not exist",
		re:    pattern("%v %q not found", `(?P<resource>services?)`, quoted("service")),
		cause: "The Service \"${service}\" named in spec.conversion.webhook.clientConfig.service does not exist in that namespace: a typo in the name or namespace, or the Service was not deployed (yet).",
		fixes: []string{"Compare clientConfig.service (kubectl get crd CRD-NAME -o jsonpath='{.spec.conversion.webhook.clientConfig.service}') with kubectl get svc -A | grep ${service}, and fix the side that is wrong.", fixDoctor},
		check: checkService, source: "k8s.io/client-go listers (NotFound), via " + srcProxy,
	},
	{
		id: "service-port-not-found", title: "the Service has no such port",
		re:    pattern("no service port %d found for service %q", `(?P<port>\d+)`, quoted("service")),
		cause: "Service \"${service}\" has no port ${port}, the one clientConfig.service.port names (443 when unset).",
		fixes: []string{"Set clientConfig.service.port to one of the Service's ports, or add port ${port} to the Service (targetPort: the container's port)."},
		check: checkServicePort, source: srcProxy,
	},
	{
		id: "no-endpoints", title: "the Service has no ready endpoint",
		re:    pattern("no endpoints available for service %q", quoted("service")),
		cause: "Service \"${service}\" has no ready endpoint for the port: no pod matches its selector, the pods are not ready (readiness probe failing, crash loop, pending), or the Service's port name does not match the EndpointSlice's.",
		fixes: []string{"kubectl get endpointslices -n NAMESPACE -l kubernetes.io/service-name=${service} -o wide; kubectl get pods -n NAMESPACE -l SELECTOR",
			"Fix the selector to match the webhook pods' labels, or fix why they are not ready (kubectl describe pod).", fixDoctor},
		check: checkEndpoints, source: srcProxy,
	},
	{
		id: "unsupported-service-type", title: "the Service's type cannot be routed to",
		re:    pattern("unsupported service type %q", quoted("type")),
		cause: "The webhook's Service has type \"${type}\"; the API server routes conversions only to ClusterIP, NodePort and LoadBalancer Services.",
		fixes: []string{"Make the Service type ClusterIP (the default) with a selector for the webhook pods."},
		check: checkService, source: srcProxy,
	},
	{
		id: "headless-service", title: "the Service is headless",
		re:    pattern(`cannot route to service with ClusterIP "None"`),
		cause: "The webhook's Service is headless (clusterIP: None); the API server needs a ClusterIP to route to.",
		fixes: []string{"Recreate the Service without clusterIP: None."},
		check: checkService, source: srcProxy,
	},
	{
		id: "failed-calling-webhook", title: "the API server could not call a webhook",
		re:      pattern("failed calling webhook %q: %v", quoted("webhook"), rest),
		cause:   "The API server could not call webhook \"${webhook}\": ${reason}",
		wrapped: "The API server could not call webhook \"${webhook}\"; the reason is the error inside this one.",
		fixes:   []string{fixDoctor},
		check:   checkClientConfig, source: srcWebhook + "/error.go",
	},
	{
		id: "webhook-no-service-or-url", title: "the webhook's clientConfig has neither service nor url",
		re:    regexp.MustCompile(`webhook configuration must have either service or URL|exactly one of url or service is required|required when strategy is set to Webhook`),
		cause: "spec.conversion.webhook.clientConfig must give exactly one of service or url.",
		fixes: []string{"Set clientConfig.service {namespace, name, path, port} for a webhook in the cluster (or url for one outside it), not both."},
		check: checkClientConfig, source: srcWebhook + "/client.go, " + srcValidation,
	},

	// --- TLS ---
	{
		id: "x509-unknown-authority", title: "the webhook's certificate is not signed by the CA the API server trusts",
		re:    pattern("x509: certificate signed by unknown authority"),
		cause: "The webhook's serving certificate does not chain to the CA in the CRD's spec.conversion.webhook.clientConfig.caBundle (or, with no caBundle, to the API server's system roots): the caBundle holds another CA (a stale one after a rotation, or cert-manager's injection not done), or the webhook serves a certificate from another issuer.",
		fixes: []string{"Put the CA that signed the serving certificate in caBundle: kubectl patch crd CRD-NAME --type=merge -p '{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"'$(base64 -w0 ca.crt)'\"}}}}}'",
			"With cert-manager, check the cert-manager.io/inject-ca-from annotation names the Certificate the webhook mounts, and that cainjector runs.",
			"During a CA rotation keep the old and new CA both in caBundle until every pod serves the new certificate."},
		check: checkCertChain, source: srcX509,
	},
	{
		id: "x509-wrong-name", title: "the webhook's certificate is for other names",
		re:    pattern("x509: certificate is valid for %v, not %v", `(?P<valid>.+?)`, `(?P<host>[^\s"]+)`),
		cause: "The webhook's certificate is valid for ${valid}, but the API server connects to ${host} (for a Service reference: SERVICE.NAMESPACE.svc) and verifies that name.",
		fixes: []string{"Reissue the serving certificate with the DNS SAN ${host} (and SERVICE.NAMESPACE.svc.cluster.local); a certificate for a pod IP or for localhost does not do.",
			"Or, if the Service name in clientConfig is wrong, fix it to the Service the certificate was made for."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-no-matching-san", title: "the webhook's certificate has no matching name",
		re:    regexp.MustCompile(`x509: certificate is (?:not valid for any names, but wanted to match|valid for \d+ (?:IP SANs|names), but none matched) (?P<host>[^\s"]+)`),
		cause: "The webhook's certificate has no subjectAltName for ${host}, the name the API server verifies (for a Service reference: SERVICE.NAMESPACE.svc).",
		fixes: []string{"Reissue the serving certificate with the DNS SAN ${host}."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-no-ip-sans", title: "the webhook's certificate has no IP SAN for the address",
		re:    pattern("x509: cannot validate certificate for %v because it doesn't contain any IP SANs", `(?P<host>\S+)`),
		cause: "The API server connects to the IP address ${host} (clientConfig.url with an IP), and the certificate has no IP SANs.",
		fixes: []string{"Use a Service reference (clientConfig.service) and a certificate for SERVICE.NAMESPACE.svc, or add the IP SAN ${host}."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-legacy-common-name", title: "the webhook's certificate has its name only in the Common Name",
		re:    pattern("x509: certificate relies on legacy Common Name field, use SANs instead"),
		cause: "The serving certificate names the host only in its subject Common Name, which Go (and so the API server) ignores since Go 1.15: it has no subjectAltName extension.",
		fixes: []string{"Reissue the certificate with DNS SANs SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local (openssl: -addext subjectAltName=DNS:...)."},
		check: checkCertNames, source: srcX509,
	},
	{
		id: "x509-expired", title: "the webhook's certificate has expired or is not yet valid",
		re:    pattern("x509: certificate has expired or is not yet valid: %s", `(?P<detail>.+)`),
		cause: "The webhook serves a certificate outside its validity period (${detail}): it expired without being renewed, or the clocks disagree.",
		fixes: []string{"Renew the serving certificate (cert-manager: kubectl cert-manager renew -n NAMESPACE CERT; otherwise reissue the Secret); hubspoke's server reloads it from the mounted Secret without a restart.",
			"If it is \"not yet valid\", check the clock of the nodes and of the issuer."},
		check: checkCertExpiry, source: srcX509,
	},
	{
		id: "plain-http", title: "the webhook serves plain HTTP",
		re:    regexp.MustCompile(`http: server gave HTTP response to HTTPS client|tls: first record does not look like a TLS handshake`),
		cause: "The API server always calls a conversion webhook over HTTPS, and the webhook answers plain HTTP.",
		fixes: []string{"Serve TLS on the webhook's port (hubspoke serve --cert-dir DIR), with a certificate for SERVICE.NAMESPACE.svc."},
		check: checkReachable, source: srcNet,
	},

	// --- the network ---
	{
		id: "connection-refused", title: "nothing listens at the webhook's address",
		re:    pattern("dial tcp %v: connect: connection refused", `(?P<addr>\S+)`),
		cause: "Nothing accepts connections at ${addr}: the Service's targetPort is not the port the webhook listens on, or the webhook process is down (crashed, or starting).",
		fixes: []string{"Compare the Service's targetPort with the container's port and the webhook's --addr.", "kubectl get pods and logs of the webhook.", fixDoctor},
		check: checkReachable, source: srcNet,
	},
	{
		id: "egress-proxy-dial-failed", title: "the API server's egress proxy could not reach the webhook",
		re:    pattern("proxy error from %s while dialing %s, code %d: %v", `(?P<proxy>\S+)`, `(?P<addr>\S+)`, `(?P<code>\d+)`, `(?P<status>.+)`),
		cause: "The API server reaches the cluster network through an egress proxy (konnectivity, or the sandbox's), and the proxy could not connect to ${addr} (HTTP ${code}): nothing listens there — the webhook process is down or the Service's targetPort is not its port — or the proxy's agents cannot reach the pod.",
		fixes: []string{"kubectl get pods -o wide for the webhook, and compare the Service's targetPort with the webhook's port.", "On konnectivity clusters, check the konnectivity-agent pods and their logs.", fixDoctor},
		check: checkReachable, source: "k8s.io/apiserver/pkg/server/egressselector/egress_selector.go",
	},
	{
		id: "dial-timeout", title: "the webhook's address does not answer",
		re:    pattern("dial tcp %v: i/o timeout", `(?P<addr>\S+)`),
		cause: "Connecting to ${addr} timed out: a NetworkPolicy or firewall drops the API server's traffic to the webhook pods (on managed clusters the control plane reaches nodes only on some ports), or the endpoint is stale.",
		fixes: []string{"Allow ingress to the webhook pods' port from the API server (NetworkPolicy, cloud firewall: e.g. GKE private clusters allow 443 and 10250 only).", fixDoctor},
		check: checkReachable, source: srcNet,
	},
	{
		id: "deadline-exceeded", title: "the webhook did not answer in time",
		re:    regexp.MustCompile(`context deadline exceeded(?: \(Client\.Timeout exceeded while awaiting headers\))?|net/http: request canceled|Client\.Timeout exceeded`),
		cause: "The request to the webhook did not complete before its deadline (the API server waits up to 30 s per review): the webhook is overloaded or hangs, or packets are dropped on the way.",
		fixes: []string{"Check the webhook's latency metrics and logs; scale it (more replicas) or give it more CPU.", "If connections hang, check NetworkPolicies and firewalls between the API server and the pods.", fixDoctor},
		check: checkReachable, source: "context, net/http (Go standard library)",
	},
	{
		id: "no-such-host", title: "the webhook's host name does not resolve",
		re:    pattern("lookup %v%v: no such host", `(?P<host>[^\s:]+)`, `(?: on \S+)?`),
		cause: "The API server could not resolve ${host} in DNS: a clientConfig.url with a wrong host, or an API server that resolves Services by DNS and does not run in the cluster network.",
		fixes: []string{"Prefer clientConfig.service over url for a webhook in the cluster; fix the host name if it is mistyped."},
		check: checkClientConfig, source: srcNet,
	},
	{
		id: "connection-reset", title: "the webhook closed the connection",
		re:    regexp.MustCompile(`connection reset by peer|remote error: tls: [a-z ]+`),
		cause: "The webhook closed the connection during the TLS handshake or the request: it requires a client certificate (the API server presents none to conversion webhooks), refuses the TLS version, or crashed.",
		fixes: []string{"Do not require client certificates on the conversion port (or accept them optionally).", fixLogs},
		check: checkReachable, source: srcNet,
	},

	// --- the CRD: versions and storedVersions ---
	{
		id: "stored-version-removed", title: "a version in status.storedVersions was removed from spec.versions",
		re:    pattern("status.storedVersions[%d]: Invalid value: %q: missing from spec.versions", `(?P<index>\d+)`, quoted("version")),
		cause: "Objects may still be stored in etcd as ${version} (it is in status.storedVersions), so the API server refuses a CRD without that version: it could no longer read them.",
		fixes: []string{"Keep ${version} in spec.versions (served: false is enough) until the storage migration is done.",
			"Migrate: hubspoke migrate CRD-NAME (rewrites every object at the storage version, then prunes status.storedVersions); then remove ${version}."},
		check: checkStoredVersions, source: srcValidation,
	},
	{
		id: "stored-versions-lack-storage", title: "status.storedVersions lacks the storage version",
		re:    pattern("must have the storage version %s", `(?P<version>\S+)`),
		cause: "status.storedVersions must list the current storage version ${version}; an edit of the status removed it.",
		fixes: []string{"Patch the status back with ${version} in it: kubectl patch crd CRD-NAME --subresource=status --type=json -p '[{\"op\":\"add\",\"path\":\"/status/storedVersions/-\",\"value\":\"${version}\"}]'"},
		check: checkStoredVersions, source: srcValidation,
	},
	{
		id: "storage-version-count", title: "not exactly one storage version",
		re:    pattern("must have exactly one version marked as storage version"),
		cause: "spec.versions must have exactly one version with storage: true; the CRD has none or several.",
		fixes: []string{"Mark exactly one version storage: true; switching it rewrites nothing (only writes re-encode), so migrate afterwards: hubspoke migrate CRD-NAME."},
		check: checkVersions, source: srcValidation,
	},
	{
		id: "review-versions-unrecognized", title: "conversionReviewVersions has no version the API server speaks",
		re:    pattern("must include at least one of %v", `(?P<accepted>v1(?:beta1)?(?:, v1(?:beta1)?)*)`),
		cause: "spec.conversion.conversionReviewVersions must include a version the API server sends (${accepted}).",
		fixes: []string{"Set conversionReviewVersions: [v1, v1beta1] (v1 first), as the webhook supports."},
		check: checkReviewVersions, source: srcValidation,
	},
	{
		id: "review-versions-required", title: "conversionReviewVersions is missing",
		re:    pattern("spec.conversion.conversionReviewVersions: Required value"),
		cause: "apiextensions.k8s.io/v1 CRDs with strategy Webhook must list conversionReviewVersions.",
		fixes: []string{"Add conversionReviewVersions: [v1, v1beta1] under spec.conversion.webhook."},
		check: checkReviewVersions, source: srcValidation,
	},

	// --- reading stored objects ---
	{
		id: "storage-corrupt-object", title: "the API server could not decode a stored object",
		re:      pattern("StorageError: corrupt object, Code: %d, Key: %s, ResourceVersion: %d, AdditionalErrorMsg: %v", `(?P<code>\d+)`, `(?P<key>\S+)`, `(?P<rv>\d+)`, rest),
		cause:   "The object stored at ${key} could not be decrypted or decoded: its data in etcd is damaged, encrypted with a key the API server no longer has, or of a version the CRD no longer defines.",
		wrapped: "The API server calls the object at ${key} corrupt because it could not convert it for this read; the stored data is fine — the conversion failed, for the reason inside this error.",
		fixes: []string{"Check the API server's encryption configuration and the CRD's versions against status.storedVersions.",
			"As a last resort, delete the one object: kubectl delete --ignore-store-read-error-with-cluster-breaking-potential ..."},
		check: checkLive, source: "k8s.io/apiserver/pkg/storage/errors.go",
	},

	// --- requests for a version or kind the API server does not serve ---
	{
		id: "resource-not-found", title: "the API server does not serve this resource",
		re:    pattern("the server could not find the requested resource"),
		cause: "The API server has no such resource at this group and version: the version is not served (served: false) or not in spec.versions, the CRD is not Established (yet), or the group or plural is mistyped.",
		fixes: []string{"kubectl get crd CRD-NAME -o jsonpath='{.spec.versions[*].name} {.spec.versions[*].served} {.status.conditions}'", fixDoctor},
		check: checkVersions, source: "k8s.io/apimachinery/pkg/api/errors (NotFound)",
	},
	{
		id: "no-kind-match", title: "no resource for this kind and version",
		re:    pattern("no matches for kind %q in version %q", quoted("kind"), quoted("version")),
		cause: "The API server serves no kind \"${kind}\" in ${version}: the CRD is not installed, the version is not served, or discovery is stale.",
		fixes: []string{"kubectl api-resources | grep -i ${kind}; serve the version or use a served one.", fixDoctor},
		check: checkVersions, source: "k8s.io/apimachinery/pkg/api/meta (NoKindMatchError)",
	},
	{
		id: "unknown-strategy", title: "an unknown conversion strategy",
		re:    regexp.MustCompile(`unknown conversion strategy "(?P<strategy>[^"]*)"`),
		cause: "The CRD's spec.conversion.strategy \"${strategy}\" is neither None nor Webhook.",
		fixes: []string{"Set spec.conversion.strategy to Webhook (with a webhook) or None (only when every version has the same schema)."},
		check: checkStrategy, source: "k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/converter.go",
	},
}
