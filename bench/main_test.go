package bench_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
)

// TestMain silences controller-runtime's logger and, when the test binary
// is re-executed as a benchmark server (see startServer), serves instead of
// running tests.
func TestMain(m *testing.M) {
	crlog.SetLogger(logr.Discard())
	if role := os.Getenv(serverRoleEnv); role != "" {
		os.Exit(serveMain(role))
	}
	os.Exit(m.Run())
}
