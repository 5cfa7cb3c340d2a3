package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/internal/crwidget"
)

// TestControllerRuntimeWebhook runs the black-box checks against
// controller-runtime's conversion webhook serving the Widget example with
// typed Go structs (internal/crwidget): check is not tied to hubspoke's
// server.
func TestControllerRuntimeWebhook(t *testing.T) {
	s, err := crwidget.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, crd := setup(t, crconversion.NewWebhookHandler(s, crconversion.NewRegistry()))
	r := Conformance(context.Background(), c, crd)
	if r.Errors() > 0 || r.Checks == 0 {
		t.Errorf("controller-runtime's webhook breaks the protocol:\n%s", reportText(r))
	}
	// controller-runtime refuses objects already at the desired version,
	// which the API server never sends: a warning.
	sameVersion := false
	for _, f := range r.Findings {
		sameVersion = sameVersion || (f.Check == CheckSameVersion && f.Severity == check.SeverityWarning)
	}
	if !sameVersion {
		t.Errorf("no same-version warning:\n%s", reportText(r))
	}
	// The laws run through it too. Typed structs with omitempty drop a
	// status integer at zero (real data loss, both directions) and emit
	// fields the spoke schema prunes or empty objects (warnings).
	laws := check.Laws(context.Background(), crd, c, check.Options{Objects: 30, Seed: 1})
	want := []string{
		"error hub-spoke-hub v1->v1alpha1 /status/availableReplicas",
		"error spoke-hub-spoke v1alpha1->v1 /status/availableReplicas",
		"warning api-server-coerced v1->v1alpha1 /spec/template",
		"warning api-server-coerced v1alpha1->v1 /spec/template",
		"warning hub-spoke-hub v1->v1alpha1 /spec",
		"warning hub-spoke-hub v1->v1alpha1 /status",
		"warning spoke-hub-spoke v1alpha1->v1 /spec",
		"warning spoke-hub-spoke v1alpha1->v1 /status",
	}
	if diff := cmp.Diff(want, findingKeys(laws)); diff != "" {
		t.Errorf("laws through controller-runtime (-want +got):\n%s\n%s", diff, reportText(laws))
	}
}
