package rotate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hubspoke/hubspoke/deploy"
)

// metricCertExpiry is the webhook server's gauge of the serving
// certificate's NotAfter (server.MetricCertExpiry; server is not imported
// here so that rotate stays free of the webhook's server code).
const metricCertExpiry = "hubspoke_webhook_certificate_expiry_timestamp_seconds"

// PodsServingWait returns a ServingWait that asks every ready pod of the
// deployment, through the API server's pod proxy, for its /metrics, until
// each reports the new certificate's NotAfter as its serving certificate's
// expiry -- the kubelet has updated the Secret volume and the webhook has
// reloaded it. It gives up after timeout. When the pods cannot be listed or
// reached through the proxy (RBAC, an API server without a route to pods),
// it logs why and waits the whole timeout instead.
func PodsServingWait(c Clients, namespace, name string, timeout time.Duration, log *slog.Logger) func(context.Context, *x509.Certificate) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	selector := labels.SelectorFromSet(deploy.Selector(name)).String()
	return func(ctx context.Context, cert *x509.Certificate) error {
		want := cert.NotAfter.Unix()
		deadline := time.Now().Add(timeout)
		for {
			pending, err := podsNotServing(ctx, c, namespace, selector, want)
			if err != nil {
				log.Warn("cannot ask the pods which certificate they serve; waiting instead", "err", err, "wait", time.Until(deadline).Round(time.Second))
				return sleep(ctx, time.Until(deadline))
			}
			if len(pending) == 0 {
				log.Info("every ready pod serves the new certificate")
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("after %s, pods %v do not serve the new certificate (is the kubelet updating the Secret volume?)", timeout, pending)
			}
			if err := sleep(ctx, time.Second); err != nil {
				return err
			}
		}
	}
}

// podsNotServing returns the ready pods whose metrics show another
// certificate expiry than want.
func podsNotServing(ctx context.Context, c Clients, namespace, selector string, want int64) ([]string, error) {
	pods, err := c.Core.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods %s: %w", selector, err)
	}
	var pending []string
	ready := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !podReady(&p) {
			continue
		}
		ready++
		body, err := c.Core.CoreV1().Pods(namespace).ProxyGet("https", p.Name, strconv.Itoa(deploy.ContainerPort), "/metrics", nil).DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("pod %s /metrics through the API server: %w", p.Name, err)
		}
		got, ok := gauge(body, metricCertExpiry)
		if !ok {
			return nil, fmt.Errorf("pod %s: no %s in /metrics", p.Name, metricCertExpiry)
		}
		if int64(got) != want {
			pending = append(pending, p.Name)
		}
	}
	if ready == 0 {
		return nil, fmt.Errorf("no ready pod matches %s", selector)
	}
	return pending, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// gauge returns the value of an unlabelled metric in Prometheus text format.
func gauge(body []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ') {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}
