package sandbox

import (
	"context"
	"testing"
)

// Start starts a sandbox for a test or benchmark and stops it when the test
// and its subtests end (t.Cleanup). A failure to start or to stop fails t.
//
// Starting takes a few seconds: share one sandbox per test package where
// you can (see the package documentation). If the binaries are not built
// yet, Start builds them first, which can take longer than go test's
// default timeout: build them before the test run with
// `hubspoke sandbox assets`.
func Start(t testing.TB, opts Options) *Sandbox {
	t.Helper()
	s, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop sandbox: %v", err)
		}
	})
	return s
}
