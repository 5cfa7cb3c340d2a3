package check_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

// hubspoke's own examples pass check in rules mode: no error, static or
// law, on several seeds. (cert-manager-certificate and
// cluster-api-ipaddressclaim carry their projects' known schema gaps,
// listed in their READMEs; gofuncs registers Go funcs and is checked by
// its own package's tests.)
func TestExamplesPassCheck(t *testing.T) {
	for _, ex := range []string{"widget", "evolving-widget", "fleet", "kubebuilder-cronjob", "knative-pingsource", "cluster-api-machinehealthcheck", "kueue-cohort"} {
		t.Run(ex, func(t *testing.T) {
			dir := filepath.Join("..", "examples", ex)
			crd, err := schema.LoadFile(filepath.Join(dir, "crd.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			rs, err := rules.ParseFile(filepath.Join(dir, "conversion.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			conv, err := rs.Converter()
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= 3; seed++ {
				report := check.Static(crd, rs)
				report.Merge(check.Laws(context.Background(), crd, conv, check.Options{Objects: 200, Seed: seed}))
				if report.Errors() > 0 {
					var b bytes.Buffer
					_ = report.WriteText(&b)
					t.Errorf("seed %d: %d errors:\n%s", seed, report.Errors(), b.String())
				}
			}
		})
	}
}
