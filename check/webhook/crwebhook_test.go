package webhook

import (
	"context"
	"testing"

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
	// The laws run through it too; what they find about typed conversion
	// (zero-valued structs the schema prunes) is logged, not asserted.
	laws := check.Laws(context.Background(), crd, c, check.Options{Objects: 30, Seed: 1})
	if laws.Laws == 0 {
		t.Fatal("no law ran")
	}
	t.Log("\n" + reportText(laws))
}
