//go:build !hubspoke_nocel

package servecmd

import (
	"testing"

	"github.com/hubspoke/hubspoke/convert/rules"
)

// TestCELLinked: the webhook binaries (both link this package) load rule
// files with cel rules; without the CEL environment the load fails.
func TestCELLinked(t *testing.T) {
	c, err := rules.LoadFile("../../examples/kubebuilder-cronjob/conversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Convert(nil, []byte(`{"apiVersion":"batch.tutorial.kubebuilder.io/v2","kind":"CronJob","metadata":{"name":"a"},"spec":{"schedule":{"minute":"*/5"}}}`), "batch.tutorial.kubebuilder.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"batch.tutorial.kubebuilder.io/v1","kind":"CronJob","metadata":{"name":"a"},"spec":{"schedule":"*/5 * * * *"}}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}
