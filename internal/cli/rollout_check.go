package cli

import "github.com/hubspoke/hubspoke/check"

func init() { rolloutCheck = check.Rollout }
