package rotate_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hubspoke/hubspoke/deploy"
	"github.com/hubspoke/hubspoke/rotate"
)

type body struct {
	b   []byte
	err error
}

func (b body) DoRaw(context.Context) ([]byte, error)         { return b.b, b.err }
func (b body) Stream(context.Context) (io.ReadCloser, error) { return nil, errors.New("not used") }

func pod(name string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: deploy.Selector(name[:len(name)-2])},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// TestPodsServingWait: the wait ends when every ready pod's metrics show
// the new certificate's expiry; it fails naming the pods that never do;
// without access to the pods it waits the whole timeout.
func TestPodsServingWait(t *testing.T) {
	newCert := &x509.Certificate{NotAfter: time.Unix(1900000000, 0)}
	metrics := func(notAfter int64) []byte {
		return []byte(fmt.Sprintf("# HELP x\nhubspoke_webhook_certificate_expiry_timestamp_seconds_other 1\nhubspoke_webhook_certificate_expiry_timestamp_seconds %g\n", float64(notAfter)))
	}
	for _, tc := range []struct {
		name    string
		serve   func(pod string, call int) body // the pod's /metrics on its call-th scrape
		want    string                          // error; "" for none
		waited  bool                            // fell back to waiting blind
		scraped []string
	}{
		{"all serve it", func(string, int) body { return body{b: metrics(1900000000)} }, "", false, []string{"hubspoke-webhook-a", "hubspoke-webhook-b"}},
		{"one late", func(p string, call int) body {
			if p == "hubspoke-webhook-b" && call < 2 {
				return body{b: metrics(1800000000)}
			}
			return body{b: metrics(1900000000)}
		}, "", false, nil},
		{"one never", func(p string, _ int) body {
			if p == "hubspoke-webhook-b" {
				return body{b: metrics(1800000000)}
			}
			return body{b: metrics(1900000000)}
		}, "pods [hubspoke-webhook-b] do not serve the new certificate", false, nil},
		{"proxy refused", func(string, int) body { return body{err: errors.New("forbidden")} }, "", true, nil},
		{"no metric", func(string, int) body { return body{b: []byte("go_goroutines 3\n")} }, "", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := fake.NewClientset(pod("hubspoke-webhook-a", true), pod("hubspoke-webhook-b", true), pod("hubspoke-webhook-c", false))
			var mu sync.Mutex
			calls := map[string]int{}
			var scraped []string
			core.PrependProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
				p := a.(k8stesting.ProxyGetAction)
				if p.GetScheme() != "https" || p.GetPort() != "8443" || p.GetPath() != "/metrics" {
					t.Errorf("proxy to %s://%s:%s%s", p.GetScheme(), p.GetName(), p.GetPort(), p.GetPath())
				}
				mu.Lock()
				defer mu.Unlock()
				calls[p.GetName()]++
				if calls[p.GetName()] == 1 {
					scraped = append(scraped, p.GetName())
				}
				return true, tc.serve(p.GetName(), calls[p.GetName()]), nil
			})
			warned := &countWarnings{}
			wait := rotate.PodsServingWait(rotate.Clients{Core: core}, ns, "hubspoke-webhook", 1500*time.Millisecond, slog.New(warned))
			err := wait(context.Background(), newCert)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if fellBack := warned.n.Load() > 0; fellBack != tc.waited {
				t.Errorf("fell back to waiting blind: %v, want %v", fellBack, tc.waited)
			}
			if calls["hubspoke-webhook-c"] > 0 {
				t.Error("scraped a pod that is not ready")
			}
			if tc.scraped != nil && fmt.Sprint(scraped) != fmt.Sprint(tc.scraped) {
				t.Errorf("scraped %v, want %v", scraped, tc.scraped)
			}
		})
	}
}

// countWarnings is a slog handler counting warnings.
type countWarnings struct{ n atomic.Int64 }

func (w *countWarnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *countWarnings) Handle(context.Context, slog.Record) error    { w.n.Add(1); return nil }
func (w *countWarnings) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *countWarnings) WithGroup(string) slog.Handler                { return w }
