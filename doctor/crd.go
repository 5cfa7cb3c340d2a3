package doctor

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hubspoke/hubspoke/check"
	hschema "github.com/hubspoke/hubspoke/schema"
)

// diagnosis is one run: what each stage learnt, for the next.
type diagnosis struct {
	ctx context.Context
	c   Clients
	o   Options
	r   *Report

	crd     *apiextensionsv1.CustomResourceDefinition
	name    string
	storage string
	served  []string
	review  string // the ConversionReview version the API server sends

	// service reference (nil for a URL)
	svcNS, svcName, path string
	port                 int32
	url                  string
	host                 string // the name the API server verifies

	caPool  *x509.CertPool
	caCerts []*x509.Certificate
	sc      *hschema.CRD // the CRD's schemas, for samples and comparisons

	endpoints []Endpoint
	results   []*endpointResult // one per endpoint probed
	liveOK    bool              // the live check passed
}

func (d *diagnosis) run(name string) error {
	d.name = name
	ctx, cancel := d.step("the API server: get CustomResourceDefinition "+name, d.o.Timeout)
	crd, err := d.c.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		d.add(Finding{Check: CheckCRD, Severity: SeverityError, Message: fmt.Sprintf("CustomResourceDefinition %s not found", name),
			Cause: "no CRD of that name (plural.group) on this cluster (or context)",
			Fix:   "kubectl get crd | grep " + strings.SplitN(name, ".", 2)[0] + "   # find the exact name, or check --context"})
		d.skipFrom(CheckStrategy, "no CRD")
		return nil
	}
	if err != nil {
		if t := d.timedOut(ctx, "the API server to return the CRD"); t != "" {
			return fmt.Errorf("get crd %s: %s: %w", name, t, err)
		}
		return fmt.Errorf("get crd %s: %w", name, err)
	}
	d.crd = crd
	d.loadSchemas()
	d.ok(CheckCRD, "CustomResourceDefinition %s (group %s, kind %s)", name, crd.Spec.Group, crd.Spec.Names.Kind)
	if !d.checkCRD() {
		return nil
	}
	// The live check runs beside the endpoints' checks: each is bounded,
	// and a webhook that hangs must not delay the others. When the API
	// server cannot reach an endpoint, the certificate cannot be read
	// either; the live check still runs: its error, the API server's
	// own, confirms the cause.
	live := make(chan []Finding, 1)
	go func() { live <- d.checkLive() }()
	if d.svcName == "" || d.checkService() {
		d.checkEndpointsDirectly()
	}
	for _, f := range <-live {
		d.add(f)
	}
	return nil
}

// loadSchemas reads the CRD's schemas (for sample objects and for
// comparing versions); nil when they do not load.
func (d *diagnosis) loadSchemas() {
	crd := d.crd.DeepCopy()
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	data, err := json.Marshal(crd)
	if err != nil {
		return
	}
	if sc, err := hschema.Load(d.name, data); err == nil {
		d.sc = sc
	}
}

// checkCRD runs the CRD stage; false when there is no webhook to diagnose.
func (d *diagnosis) checkCRD() bool {
	crd := d.crd
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter {
		d.checkStrategyNone()
		d.skip(CheckClientConfig, "no conversion webhook")
		d.skip(CheckReviewVersions, "no conversion webhook")
		d.checkVersionsAndStatus()
		d.skipFrom(CheckCABundle, "no conversion webhook")
		return false
	}
	if len(crd.Spec.Versions) == 1 {
		d.add(Finding{Check: CheckStrategy, Severity: SeverityWarning,
			Message: fmt.Sprintf("strategy Webhook with a single version (%s): the API server never converts, yet reads and writes depend on the webhook's configuration", crd.Spec.Versions[0].Name),
			Cause:   "a needless outage risk: with one version the API server never sends a review, so the webhook can only do harm — a caBundle that stops parsing (a failed injection) keeps the CRD from being Established, and its Deployment, Service and certificates must be kept alive for nothing",
			Fix:     d.patch("/spec/conversion", `{"strategy":"None"}`) + "   # until a second version exists"})
	} else {
		d.ok(CheckStrategy, "strategy Webhook, %d versions", len(crd.Spec.Versions))
	}
	wh := conv.Webhook
	if wh == nil || wh.ClientConfig == nil || (wh.ClientConfig.Service == nil) == (wh.ClientConfig.URL == nil) {
		d.add(Finding{Check: CheckClientConfig, Severity: SeverityError, Message: "spec.conversion.webhook.clientConfig has neither service nor url",
			Cause: "the API server has nowhere to send ConversionReviews",
			Fix:   d.patch("/spec/conversion/webhook/clientConfig", `{"service":{"namespace":"NAMESPACE","name":"SERVICE","path":"/convert","port":443}}`)})
		d.skip(CheckReviewVersions, "no clientConfig")
		d.checkVersionsAndStatus()
		d.skipFrom(CheckCABundle, "no clientConfig")
		return false
	}
	cc := wh.ClientConfig
	if s := cc.Service; s != nil {
		d.svcNS, d.svcName, d.port, d.path = s.Namespace, s.Name, 443, "/"
		if s.Port != nil {
			d.port = *s.Port
		}
		if s.Path != nil {
			d.path = *s.Path
		}
		d.host = d.svcName + "." + d.svcNS + ".svc"
		d.ok(CheckClientConfig, "service %s/%s port %d path %s (the API server verifies the name %s)", d.svcNS, d.svcName, d.port, d.path, d.host)
	} else {
		d.url = *cc.URL
		d.host = hostOf(d.url)
		d.ok(CheckClientConfig, "url %s (no Service: the service and endpoints checks do not apply)", d.url)
	}
	d.checkReviewVersions(wh.ConversionReviewVersions)
	d.checkVersionsAndStatus()
	d.checkCABundle(cc.CABundle)
	return true
}

func (d *diagnosis) checkVersionsAndStatus() {
	crd := d.crd
	var storage []string
	defined := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		defined[v.Name] = true
		if v.Served {
			d.served = append(d.served, v.Name)
		}
		if v.Storage {
			storage = append(storage, v.Name)
		}
	}
	switch {
	case len(storage) != 1:
		d.add(Finding{Check: CheckVersions, Severity: SeverityError, Message: fmt.Sprintf("%d storage versions %v", len(storage), storage),
			Cause: "exactly one version must be storage: true", Fix: "mark exactly one version storage: true and re-apply the CRD"})
	case len(d.served) == 0:
		d.storage = storage[0]
		d.add(Finding{Check: CheckVersions, Severity: SeverityError, Message: "no version is served",
			Cause: "nothing can be read or written", Fix: d.patch("/spec/versions/0/served", "true")})
	default:
		d.storage = storage[0]
		d.ok(CheckVersions, "served %s, storage %s", strings.Join(d.served, ", "), d.storage)
	}

	d.checkConditions()

	// storedVersions against the versions defined now and, with a planned
	// CRD, the versions about to be defined.
	stored := crd.Status.StoredVersions
	var missing []string
	for _, v := range stored {
		if !defined[v] {
			missing = append(missing, v)
		}
	}
	planned, err := d.planned()
	var plannedMissing []string
	if planned != nil {
		plannedMissing = missingVersions(planned, stored)
	}
	switch {
	case err != nil:
		d.add(Finding{Check: CheckStoredVersions, Severity: SeverityError, Message: "the planned CRD does not parse: " + err.Error(), Fix: "fix the file given with -f"})
	case len(missing) > 0:
		d.add(Finding{Check: CheckStoredVersions, Severity: SeverityError,
			Message: fmt.Sprintf("status.storedVersions %v holds %v, which spec.versions no longer defines", stored, missing),
			Cause:   "objects may still be stored in etcd at " + strings.Join(missing, ", ") + " and can no longer be decoded",
			Fix:     fmt.Sprintf("add %s back to spec.versions (served: false), then: hubspoke migrate %s", strings.Join(missing, ", "), d.name)})
	case len(plannedMissing) > 0:
		d.add(Finding{Check: CheckStoredVersions, Severity: SeverityError,
			Message: fmt.Sprintf("the planned CRD removes %v, which status.storedVersions %v still holds", plannedMissing, stored),
			Cause:   fmt.Sprintf("objects may still be stored at %s; the API server will refuse the CRD (status.storedVersions[..]: Invalid value: %q: missing from spec.versions)", strings.Join(plannedMissing, ", "), plannedMissing[0]),
			Fix:     fmt.Sprintf("hubspoke migrate %s   # rewrites every object at %s and prunes storedVersions; then apply the planned CRD", d.name, d.storage)})
	case len(stored) > 1:
		d.add(Finding{Check: CheckStoredVersions, Severity: SeverityWarning,
			Message: fmt.Sprintf("status.storedVersions %v: objects may be stored at versions other than %s", stored, d.storage),
			Cause:   "those versions cannot be removed from spec.versions until a storage migration",
			Fix:     "hubspoke migrate " + d.name})
	default:
		d.ok(CheckStoredVersions, "status.storedVersions %v", stored)
	}
	d.checkMigration()
	if planned != nil && d.o.ValidateUpdate != nil {
		d.checkPlanned(planned, crd)
	}
}

// svmResource is Kubernetes' StorageVersionMigration (GA in 1.37).
var svmResource = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"}

// checkMigration reports the CRD's StorageMigrating condition, which the
// cluster's storage version migrator sets: a migration running (and
// whether it still exists: one deleted while it ran leaves the condition
// True for good), or the last one's failure.
func (d *diagnosis) checkMigration() {
	var c *apiextensionsv1.CustomResourceDefinitionCondition
	for i := range d.crd.Status.Conditions {
		if d.crd.Status.Conditions[i].Type == apiextensionsv1.StorageMigrating {
			c = &d.crd.Status.Conditions[i]
		}
	}
	if c == nil {
		d.ok(CheckMigration, "no storage migration recorded (no StorageMigrating condition)")
		return
	}
	seen := fmt.Sprintf("StorageMigrating=%s since %s (%s: %s)", c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason, c.Message)
	switch {
	case c.Status == apiextensionsv1.ConditionTrue:
		name, _ := strings.CutSuffix(strings.TrimPrefix(c.Message, "Migration "), " is running")
		if d.c.Dynamic != nil && name != "" && name != c.Message {
			ctx, cancel := d.step("the API server: get StorageVersionMigration "+name, d.o.Timeout)
			_, err := d.c.Dynamic.Resource(svmResource).Get(ctx, name, metav1.GetOptions{})
			cancel()
			if apierrors.IsNotFound(err) {
				d.add(Finding{Check: CheckMigration, Severity: SeverityWarning, Message: seen + "; migration " + name + " no longer exists",
					Cause: "the migration was deleted while it ran: the cluster's migrator never sets the condition back, so it stays True (hubspoke migrate and plan take it for stale, and go on)",
					Fix:   "hubspoke migrate " + d.name + " --engine cluster   # a new migration sets the condition again, and to False when it ends"})
				return
			}
		}
		d.add(Finding{Check: CheckMigration, Severity: SeverityWarning, Message: seen,
			Cause: fmt.Sprintf("the cluster's storage version migrator is rewriting every object at %s: hubspoke migrate and plan wait until it ends; while a conversion fails (the webhook down) it retries for ever and stays Running, with the error in its Running condition", d.storage),
			Fix:   "kubectl get storageversionmigration " + name + " -o jsonpath='{.status.conditions}'   # how far it got, and the error it retries"})
	case c.Reason == "MigrationFailed":
		d.add(Finding{Check: CheckMigration, Severity: SeverityWarning, Message: seen,
			Cause: fmt.Sprintf("the last storage migration failed: objects may still be stored at versions of status.storedVersions %v", d.crd.Status.StoredVersions),
			Fix:   "hubspoke migrate " + d.name + "   # names the object that fails, and why"})
	case strings.Contains(c.Message, "not been updated"):
		d.add(Finding{Check: CheckMigration, Severity: SeverityWarning, Message: seen,
			Cause: "the migration succeeded but the CRD's spec changed while it ran, so the migrator left status.storedVersions as it was",
			Fix:   "hubspoke migrate " + d.name + "   # rewrites what is left and prunes"})
	default:
		d.ok(CheckMigration, "no storage migration running (last: %s)", c.Reason)
	}
}

// planned decodes the CRD about to be applied; nil without one.
func (d *diagnosis) planned() (*apiextensionsv1.CustomResourceDefinition, error) {
	if len(d.o.Planned) == 0 {
		return nil, nil
	}
	name := d.o.PlannedFile
	if name == "" {
		name = "the planned CRD"
	}
	c, err := hschema.Load(name, d.o.Planned)
	if err != nil {
		return nil, err
	}
	planned := c.Object
	if planned.Name != "" && planned.Name != d.name {
		return nil, fmt.Errorf("it is CRD %s, not %s", planned.Name, d.name)
	}
	return planned, nil
}

// missingVersions returns the stored versions the planned CRD drops.
func missingVersions(planned *apiextensionsv1.CustomResourceDefinition, stored []string) []string {
	var out []string
	for _, v := range stored {
		if !slices.ContainsFunc(planned.Spec.Versions, func(pv apiextensionsv1.CustomResourceDefinitionVersion) bool { return pv.Name == v }) {
			out = append(out, v)
		}
	}
	return out
}

// checkPlanned validates the planned CRD as the API server will when it
// replaces the live one. A stored version it drops is crd.storedVersions'
// finding, with the migration that fixes it; every other reason is one
// finding here.
func (d *diagnosis) checkPlanned(planned, live *apiextensionsv1.CustomResourceDefinition) {
	var refused []string
	for _, r := range d.o.ValidateUpdate(planned, live) {
		if !strings.HasPrefix(r, "status.") {
			refused = append(refused, r)
		}
	}
	if len(refused) == 0 {
		d.ok(CheckPlanned, "the API server would accept the planned CRD in place of the live one")
		return
	}
	d.add(Finding{Check: CheckPlanned, Severity: SeverityError,
		Message: "the API server would refuse the planned CRD: " + strings.Join(refused, "; "),
		Cause:   fmt.Sprintf("kubectl apply of it fails with: CustomResourceDefinition.apiextensions.k8s.io %q is invalid", d.name),
		Fix:     "fix those fields in the file given with -f; a field the API server calls immutable must keep its live value"})
}

// checkConditions reports each condition that keeps the CRD from being
// served, with its own reason and message and the fix that matches that
// reason.
func (d *diagnosis) checkConditions() {
	crd := d.crd
	found := false
	for _, c := range crd.Status.Conditions {
		seen := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Reason != "" || c.Message != "" {
			seen += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
		}
		switch {
		case c.Type == apiextensionsv1.Established && c.Status != apiextensionsv1.ConditionTrue && c.Reason == "InvalidCABundle":
			found = true
			d.add(Finding{Check: CheckConditions, Severity: SeverityError, Message: seen,
				Cause: "the caBundle does not parse as PEM certificates, so the API server keeps the CRD from being Established: none of its resources is served (kubectl: the server doesn't have a resource type; controllers: no matches for kind)",
				Fix:   d.caBundleFix()})
		case c.Type == apiextensionsv1.NamesAccepted && c.Status != apiextensionsv1.ConditionTrue:
			found = true
			f := Finding{Check: CheckConditions, Severity: SeverityError, Message: seen,
				Cause: fmt.Sprintf("the API server did not accept the CRD's names (%s), so it does not serve the resource: another CRD (or a built-in resource) already uses that name", c.Reason),
				Fix:   "kubectl get crd -o custom-columns=NAME:.metadata.name,PLURAL:.spec.names.plural,SINGULAR:.spec.names.singular,KIND:.spec.names.kind,SHORT:.spec.names.shortNames   # then rename one of the two, in spec.names"}
			if c.Reason == "" {
				f.Cause = "the API server did not accept the CRD's names, so it does not serve the resource"
			}
			d.add(f)
		case c.Type == apiextensionsv1.Established && c.Status != apiextensionsv1.ConditionTrue && (c.Reason == "Installing" || c.Reason == "NotAccepted"):
			if isTrue(crd, apiextensionsv1.NamesAccepted) || c.Reason == "Installing" {
				found = true
				d.add(Finding{Check: CheckConditions, Severity: SeverityWarning, Message: seen,
					Cause: "the CRD is being installed: its resources are served within seconds",
					Fix:   "kubectl wait --for=condition=Established crd/" + d.name + "   # and run doctor again"})
			}
			// NotAccepted: the NamesAccepted condition says why.
		case c.Type == apiextensionsv1.Established && c.Status != apiextensionsv1.ConditionTrue:
			found = true
			d.add(Finding{Check: CheckConditions, Severity: SeverityError, Message: seen,
				Cause: "the CRD is not Established, so the API server does not serve its resources; its reason is above",
				Fix:   "kubectl describe crd " + d.name + "   # the condition's message says what to fix"})
		case c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue:
			found = true
			d.add(Finding{Check: CheckConditions, Severity: SeverityError, Message: seen,
				Cause: "the CRD is being deleted: its objects are deleted first, which needs them to be read (and so converted); it stays until they are gone",
				Fix:   "kubectl get " + d.name + " -A   # objects still there hold the deletion (their finalizers, or a conversion that fails)"})
		case c.Type == apiextensionsv1.NonStructuralSchema && c.Status == apiextensionsv1.ConditionTrue:
			found = true
			d.add(Finding{Check: CheckConditions, Severity: SeverityWarning, Message: seen,
				Cause: "a non-structural schema is not pruned or defaulted", Fix: "make every version's schema structural (hubspoke check --crd crd.yaml names the fields)"})
		case c.Type == apiextensionsv1.KubernetesAPIApprovalPolicyConformant && c.Status == apiextensionsv1.ConditionFalse:
			found = true
			d.add(Finding{Check: CheckConditions, Severity: SeverityWarning, Message: seen,
				Cause: "a CRD in a *.k8s.io or *.kubernetes.io group needs the api-approved.kubernetes.io annotation",
				Fix:   "annotate the CRD with api-approved.kubernetes.io: the URL of its approval, or use a group of your own"})
		}
	}
	if !found && !isTrue(crd, apiextensionsv1.Established) {
		found = true
		d.add(Finding{Check: CheckConditions, Severity: SeverityError, Message: "the CRD has no Established condition yet",
			Cause: "the API server does not serve a CRD's resources until it is Established",
			Fix:   "kubectl wait --for=condition=Established crd/" + d.name})
	}
	if !found {
		d.ok(CheckConditions, "Established, NamesAccepted")
	}
}

// checkStrategyNone checks a CRD without conversion webhook: with several
// versions, the API server only rewrites apiVersion between them, which
// is correct only if their schemas agree. check's static comparison names
// the fields that differ.
func (d *diagnosis) checkStrategyNone() {
	crd := d.crd
	strategy := "None"
	if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != "" {
		strategy = string(crd.Spec.Conversion.Strategy)
	}
	if len(crd.Spec.Versions) < 2 {
		d.ok(CheckStrategy, "strategy %s, one version: no conversion", strategy)
		return
	}
	if d.sc == nil {
		d.add(Finding{Check: CheckStrategy, Severity: SeverityWarning,
			Message: fmt.Sprintf("strategy %s with %d versions; their schemas could not be compared", strategy, len(crd.Spec.Versions)),
			Cause:   "the API server only rewrites apiVersion between versions: correct only if every version has the same schema"})
		return
	}
	var diff string
	for _, f := range check.Static(d.sc, nil).Findings {
		if f.Check == check.CheckStrategy && f.Severity != check.SeverityWarning {
			diff = f.Message
		}
	}
	if diff == "" {
		d.ok(CheckStrategy, "strategy %s, %d versions with the same schema: rewriting apiVersion is a correct conversion", strategy, len(crd.Spec.Versions))
		return
	}
	// What the difference costs depends on whether objects exist.
	objects := ""
	sev := SeverityWarning
	ctx, cancel := d.step("the API server: list "+d.crd.Spec.Names.Plural+" (are there objects?)", d.o.DialTimeout+10*time.Second)
	list, err := d.c.Dynamic.Resource(d.gvr(d.storageVersion())).List(ctx, metav1.ListOptions{Limit: 1})
	cancel()
	switch {
	case err != nil:
		objects = "whether objects exist could not be read: " + err.Error()
	case len(list.Items) > 0:
		sev = SeverityError
		objects = "objects exist: each one read or written through a version whose schema lacks its fields loses them (the API server prunes what the schema does not name) or misreads them"
	default:
		objects = "no objects exist yet: the first write through one version and read through another loses data"
	}
	d.add(Finding{Check: CheckStrategy, Severity: sev,
		Message: fmt.Sprintf("strategy %s with %d versions whose schemas differ: %s", strategy, len(crd.Spec.Versions), diff),
		Cause:   objects,
		Fix:     "give the CRD a conversion webhook: hubspoke deploy -f crd.yaml --rules conversion.yaml (rules that map the fields above), or make the versions' schemas the same"})
}

// storageVersion is the version marked storage, or the first one.
func (d *diagnosis) storageVersion() string {
	for _, v := range d.crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	if len(d.crd.Spec.Versions) > 0 {
		return d.crd.Spec.Versions[0].Name
	}
	return ""
}

func (d *diagnosis) gvr(v string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: d.crd.Spec.Group, Version: v, Resource: d.crd.Spec.Names.Plural}
}

func (d *diagnosis) checkReviewVersions(vs []string) {
	for _, v := range vs {
		if v == "v1" || v == "v1beta1" {
			d.review = v
			break
		}
	}
	switch {
	case d.review == "":
		d.add(Finding{Check: CheckReviewVersions, Severity: SeverityError, Message: fmt.Sprintf("conversionReviewVersions %v has neither v1 nor v1beta1", vs),
			Cause: "the API server fails every conversion: no supported conversion review versions",
			Fix:   d.patch("/spec/conversion/webhook/conversionReviewVersions", `["v1","v1beta1"]`)})
	case !slices.Contains(vs, "v1"):
		d.add(Finding{Check: CheckReviewVersions, Severity: SeverityWarning, Message: fmt.Sprintf("conversionReviewVersions %v lacks v1: the API server sends apiextensions.k8s.io/v1beta1 reviews", vs),
			Cause: "webhooks built on current libraries (controller-runtime, or any decoding v1 only) reject or misanswer v1beta1 reviews",
			Fix:   d.patch("/spec/conversion/webhook/conversionReviewVersions", `["v1","v1beta1"]`)})
	case d.review != "v1":
		d.add(Finding{Check: CheckReviewVersions, Severity: SeverityWarning, Message: fmt.Sprintf("conversionReviewVersions %v: v1beta1 comes first, so the API server sends v1beta1", vs),
			Fix: d.patch("/spec/conversion/webhook/conversionReviewVersions", `["v1","v1beta1"]`)})
	default:
		d.ok(CheckReviewVersions, "%v: the API server sends %s reviews", vs, d.review)
	}
}

func (d *diagnosis) checkCABundle(bundle []byte) {
	if len(bytes.TrimSpace(bundle)) == 0 {
		sev := SeverityWarning
		cause := "the API server verifies the webhook with its system roots: fine for a public CA at a URL, never for a cluster-internal certificate"
		if d.svcName != "" {
			sev = SeverityError
			cause = "the API server verifies the webhook with its system roots, which hold no cluster-internal CA: every conversion fails with x509: certificate signed by unknown authority"
		}
		d.add(Finding{Check: CheckCABundle, Severity: sev, Message: "clientConfig.caBundle is empty", Cause: cause,
			Fix: d.caBundleFix()})
		return
	}
	pool := x509.NewCertPool()
	rest := bundle
	var subjects []string
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			d.add(Finding{Check: CheckCABundle, Severity: SeverityError, Message: "caBundle holds a certificate that does not parse: " + err.Error(), Fix: d.caBundleFix()})
			return
		}
		pool.AddCert(c)
		d.caCerts = append(d.caCerts, c)
		subjects = append(subjects, c.Subject.String())
	}
	if len(d.caCerts) == 0 {
		d.add(Finding{Check: CheckCABundle, Severity: SeverityError, Message: "caBundle holds no PEM certificate", Cause: "the API server trusts nothing for this webhook", Fix: d.caBundleFix()})
		return
	}
	d.caPool = pool
	now := d.o.Now()
	for _, c := range d.caCerts {
		if now.After(c.NotAfter) {
			d.add(Finding{Check: CheckCABundle, Severity: SeverityWarning, Message: fmt.Sprintf("caBundle CA %q expired at %s", c.Subject, c.NotAfter.UTC().Format("2006-01-02 15:04")),
				Cause: "a certificate chained to an expired CA fails verification", Fix: "rotate the CA (new CA added next to the old, then the serving certificate, then the old CA removed): docs/production.md"})
			return
		}
	}
	d.ok(CheckCABundle, "caBundle: %d CA(s): %s", len(d.caCerts), strings.Join(subjects, "; "))
}

func (d *diagnosis) caBundleFix() string {
	return fmt.Sprintf(`kubectl patch crd %s --type=merge -p "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"$(base64 -w0 ca.crt)\"}}}}}"   # ca.crt: the CA that signed the webhook's serving certificate`, d.name)
}

// patch is a kubectl JSON patch replacing one path of the CRD.
func (d *diagnosis) patch(path, value string) string {
	return fmt.Sprintf(`kubectl patch crd %s --type=json -p '[{"op":"replace","path":"%s","value":%s}]'`, d.name, path, value)
}

func isTrue(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
