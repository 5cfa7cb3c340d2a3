package server

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Paths the server serves itself, next to the conversion path.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
	MetricsPath = "/metrics"
)

// CheckConvertPath reports why path cannot be the conversion endpoint. It
// must be a path the API server accepts for a CRD's
// spec.conversion.webhook.clientConfig.service.path ("/", or segments
// that are each a DNS-1123 subdomain: lowercase letters, digits, '-' and
// '.', as k8s.io/apiserver's ValidateWebhookService checks them), and not
// one of the server's own endpoints (/healthz, /readyz, /metrics). It is
// the check of every command that serves conversions (serve, sandbox).
func CheckConvertPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("want an absolute path such as %s", DefaultConvertPath)
	}
	switch path {
	case "/":
		return nil
	case HealthzPath, ReadyzPath, MetricsPath:
		return fmt.Errorf("%s is the server's own endpoint; choose another path such as %s", path, DefaultConvertPath)
	}
	segs := strings.Split(strings.TrimSuffix(path[1:], "/"), "/")
	for i, seg := range segs {
		if seg == "" {
			return fmt.Errorf("segment %d is empty (the API server refuses such a path in a CRD)", i)
		}
		if errs := validation.IsDNS1123Subdomain(seg); len(errs) > 0 {
			return fmt.Errorf("segment %q: %s (the API server refuses such a path in a CRD)", seg, errs[0])
		}
	}
	return nil
}
