package embedmod

import (
	"slices"
	"strings"
	"testing"
)

func TestEnv(t *testing.T) {
	for _, tc := range []struct{ goflags, want string }{
		{"", "GOFLAGS=-mod=readonly"},
		{"-mod=vendor -tags=foo", "GOFLAGS=-mod=readonly"},
		{"-buildvcs=false -trimpath", "GOFLAGS=-mod=readonly -trimpath"},
	} {
		t.Setenv("GOFLAGS", tc.goflags)
		env := Env()
		// The last setting of a variable is the one exec uses.
		var got string
		for _, kv := range env {
			if strings.HasPrefix(kv, "GOFLAGS=") {
				got = kv
			}
		}
		if got != tc.want {
			t.Errorf("GOFLAGS=%q: the go command gets %q, want %q", tc.goflags, got, tc.want)
		}
		if !slices.Contains(env, "GOWORK=off") {
			t.Errorf("GOFLAGS=%q: no GOWORK=off in %v", tc.goflags, env)
		}
	}
}
