package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/hubspoke/hubspoke/check"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/schema"
)

// RolloutCheck compares the conversion a new revision will serve (next)
// with the one the running pods serve (prev) for a CRD, on generated
// objects, as check's rolling-update safety does: during a rollout the API
// server's requests land on old and new pods at random, so both must give
// the same answers. It is check.Rollout's signature.
type RolloutCheck func(ctx context.Context, crd *schema.CRD, next, prev check.Converter, opts check.Options) *check.Report

// CheckRollout runs chk for every CRD of inputs that previous (the rule
// files deployed today) also converts, and returns the merged report. A
// CRD new in this revision has nothing to compare. The caller refuses the
// revision when the report has errors.
func CheckRollout(ctx context.Context, inputs []Input, previous []*rules.File, chk RolloutCheck, opts check.Options) (*check.Report, error) {
	if chk == nil {
		return nil, errors.New("deploy: no rolling-update check to run")
	}
	report := &check.Report{}
	for _, in := range inputs {
		var prev *rules.File
		for _, p := range previous {
			if p.Group == in.Rules.Group && p.Kind == in.Rules.Kind {
				prev = p
			}
		}
		if prev == nil {
			continue
		}
		next, err := in.Rules.Converter()
		if err != nil {
			return nil, fmt.Errorf("deploy: %w", err)
		}
		old, err := prev.Converter()
		if err != nil {
			return nil, fmt.Errorf("deploy: previous rules: %w", err)
		}
		report.Merge(chk(ctx, in.CRD, next, old, opts))
	}
	return report, nil
}
