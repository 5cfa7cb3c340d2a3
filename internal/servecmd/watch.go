package servecmd

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/internal/convwatch"
	"github.com/hubspoke/hubspoke/review"
)

// watchFlags are serve's flags for --watch-conversions.
type watchFlags struct {
	enabled    bool
	selector   string
	kubeconfig string
	context    string
}

// watchMode is a running --watch-conversions: the watcher and what the
// server needs from it.
type watchMode struct {
	w        *convwatch.Watcher
	handlers map[string]http.Handler
}

// check validates the flags before anything starts.
func (f watchFlags) check(rules []string) error {
	if !f.enabled {
		if f.selector != "" || f.kubeconfig != "" || f.context != "" {
			return usagef("serve: --selector, --kubeconfig and --context need --watch-conversions")
		}
		return nil
	}
	if len(rules) > 0 {
		return usagef("serve: --rules and --watch-conversions exclude each other: serve rule files, or the cluster's Conversion objects")
	}
	if _, err := labels.Parse(f.selector); err != nil {
		return usagef("serve: --selector %q: %w", f.selector, err)
	}
	return nil
}

// start builds the watcher over h and starts it; it stops with ctx.
func (f watchFlags) start(ctx context.Context, h *review.Handler, log *slog.Logger, reg prometheus.Registerer) (*watchMode, error) {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{CurrentContext: f.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("serve: --watch-conversions: no cluster to watch (in a pod: the service account; else --kubeconfig): %w", err)
	}
	cfg.UserAgent = "hubspoke-webhook"
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	w, err := convwatch.New(convwatch.Options{Client: client, Selector: f.selector, Handler: h, Logger: log, Registerer: reg})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	go func() {
		if err := w.Run(ctx); err != nil {
			log.Error("watching conversions stopped", "error", err)
		}
	}()
	return &watchMode{w: w, handlers: map[string]http.Handler{
		v1alpha1.ServedPath:       w,
		v1alpha1.ServedPath + "/": w,
	}}, nil
}
