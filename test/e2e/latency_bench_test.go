package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
	"github.com/hubspoke/hubspoke/sandbox"
)

// The latency benchmarks measure what a client sees on the paths where
// Kubernetes 1.37's API server really calls the webhook: a create, an
// update and a GET through a spoke version (v1alpha1) of a CRD stored as
// v1, one object each, against the same request to an identical CRD with
// strategy None. (A LIST through a spoke version does not call the
// webhook in steady state: the watch cache converted each object once, as
// it came in; see docs/benchmarks.md.)
var (
	latOnce sync.Once
	latErr  error
	// latReg holds the metrics of the webhook the benchmarks measure, from
	// which they count the reviews they caused.
	latReg *prometheus.Registry

	latHook = crdVersions{group: "latency.example.com", resource: "widgets"}
	latNone = crdVersions{group: "latency-none.example.com", resource: "widgets"}
	// latHand is converted by the hand webhook (encoding/json into
	// Kubernetes' own types, the conversion on a map): any webhook's cost
	// on this path, beside hubspoke's.
	latHand = crdVersions{group: "latency-hand.example.com", resource: "widgets"}
	// latHandHook serves latHand; TestMain closes it.
	latHandHook *handWebhook
)

// latencyProfile, when set, is where BenchmarkSpokeLatency writes a 10 s
// CPU profile of the sandbox's kube-apiserver taken from the start of each
// sub-benchmark: FILE.OP.pprof (give -benchtime enough requests to last).
var latencyProfile = flag.String("latency-apiserver-profile", "", "BenchmarkSpokeLatency: write kube-apiserver CPU profiles to `file`.OP.pprof")

func latencySetup(b *testing.B) {
	b.Helper()
	latOnce.Do(func() { latErr = startLatency() })
	if latErr != nil {
		b.Fatal(latErr)
	}
}

func startLatency() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, err := os.ReadFile("../../examples/widget/conversion.yaml")
	if err != nil {
		return err
	}
	conv, err := rules.Load("latency.yaml", []byte(strings.Replace(string(data), "group: example.com", "group: "+latHook.group, 1)))
	if err != nil {
		return err
	}
	latReg = prometheus.NewRegistry()
	h, err := review.NewHandler(review.Options{Converters: []review.Converter{conv}, Registerer: latReg})
	if err != nil {
		return err
	}
	if _, err := sb.ServeWebhook("hubspoke-system", "latency-webhook", h); err != nil {
		return err
	}
	if latHandHook, err = startHandWebhook(sb, "hubspoke-system", "latency-hand-webhook"); err != nil {
		return err
	}
	crd, err := sandbox.ReadCRDFile("../../examples/widget/crd.yaml")
	if err != nil {
		return err
	}
	hook := rename(crd, latHook.group)
	hook.Spec.Conversion.Webhook.ClientConfig.Service.Name = "latency-webhook"
	none := rename(crd, latNone.group)
	none.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	hand := rename(crd, latHand.group)
	hand.Spec.Conversion = hook.Spec.Conversion.DeepCopy()
	hand.Spec.Conversion.Webhook.ClientConfig.Service.Name = "latency-hand-webhook"
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{hook, none, hand} {
		for i := range c.Spec.Versions {
			c.Spec.Versions[i].Storage = c.Spec.Versions[i].Name == "v1"
		}
		if _, err := sb.InstallCRD(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// latencyReviews returns hubspoke_conversion_reviews_total of the
// benchmarks' webhook for the converted CRD, every other label summed.
func latencyReviews(b *testing.B) float64 {
	b.Helper()
	return webhookReviews(b, latReg, "Widget."+latHook.group)
}

// BenchmarkSpokeLatency measures one-object requests through v1alpha1 (a
// spoke; storage v1): create, update (a label) and GET, each taking turns
// on the CRD converted by the hubspoke webhook, on the identical CRD with
// strategy None, and on one converted by the hand webhook (what the path
// costs with a plain Go webhook). It reports medians and 99th percentiles
// and their ratios to None, and the webhook reviews each request caused,
// counted from the webhook's hubspoke_conversion_reviews_total; it fails
// when the webhook answered fewer reviews than requests went through
// v1alpha1 (it is not on the measured path).
//
//	go test -run '^$' -bench BenchmarkSpokeLatency -benchtime 300x ./test/e2e/
//
// Targets: create and update at most 15% over None at p50 and 25% at p99;
// GET at most 15% at p50.
func BenchmarkSpokeLatency(b *testing.B) {
	latencySetup(b)
	ctx := context.Background()
	for _, op := range []string{"create", "update", "get"} {
		b.Run("op="+op, func(b *testing.B) {
			type side struct {
				c     crdVersions
				objs  []*unstructured.Unstructured
				times []time.Duration
			}
			sides := []*side{{c: latNone}, {c: latHook}, {c: latHand}}
			prefix := fmt.Sprintf("%s-%d-", op, time.Now().UnixNano())
			newObj := func(c crdVersions, i int) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{"apiVersion": c.group + "/v1alpha1", "kind": "Widget",
					"metadata": map[string]any{"name": prefix + strconv.Itoa(i), "namespace": ns},
					"spec":     map[string]any{"replicas": int64(i % 7)}}}
			}
			// update and get work on objects created first, untimed.
			if op != "create" {
				for _, s := range sides {
					for i := range 20 {
						o, err := dyn.Resource(s.c.gvr("v1alpha1")).Namespace(ns).Create(ctx, newObj(s.c, i), metav1.CreateOptions{})
						if err != nil {
							b.Fatal(err)
						}
						s.objs = append(s.objs, o)
					}
				}
			}
			do := func(s *side, i int) {
				client := dyn.Resource(s.c.gvr("v1alpha1")).Namespace(ns)
				var err error
				start := time.Now()
				switch op {
				case "create":
					_, err = client.Create(ctx, newObj(s.c, i), metav1.CreateOptions{})
				case "update":
					o := s.objs[i%len(s.objs)]
					o.SetLabels(map[string]string{"i": strconv.Itoa(i)})
					s.objs[i%len(s.objs)], err = client.Update(ctx, o, metav1.UpdateOptions{})
				case "get":
					_, err = client.Get(ctx, s.objs[i%len(s.objs)].GetName(), metav1.GetOptions{})
				}
				s.times = append(s.times, time.Since(start))
				if err != nil {
					b.Fatalf("%s %s: %v", op, s.c.group, err)
				}
			}
			// Let the watch cache convert what the set-up created.
			time.Sleep(time.Second)
			reviews0 := latencyReviews(b)
			var profiled func()
			if *latencyProfile != "" {
				profiled = profileAPIServer(b, sb, 10, *latencyProfile+"."+op+".pprof")
			}
			b.ResetTimer()
			for i := range b.N {
				// Taking turns, each first in its turn: the machine's load
				// falls on all alike.
				for j := range sides {
					do(sides[(i+j)%len(sides)], i)
				}
			}
			b.StopTimer()
			if profiled != nil {
				profiled()
			}
			none, hook, hand := sides[0], sides[1], sides[2]
			// The webhook serves the converted CRD alone: every review is
			// one of its requests' (or of the watch cache converting what
			// they wrote).
			reviews := latencyReviews(b) - reviews0
			if reviews < float64(b.N) {
				b.Fatalf("%v webhook reviews for %d requests through v1alpha1: the webhook is not on the measured path", reviews, b.N)
			}
			p := func(t []time.Duration, q float64) time.Duration {
				t = slices.Clone(t)
				slices.Sort(t)
				return t[min(len(t)-1, int(q*float64(len(t))))]
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(p(none.times, 0.5)), "none-p50-ms")
			b.ReportMetric(ms(p(hook.times, 0.5)), "hook-p50-ms")
			b.ReportMetric(ms(p(none.times, 0.99)), "none-p99-ms")
			b.ReportMetric(ms(p(hook.times, 0.99)), "hook-p99-ms")
			b.ReportMetric(ms(p(hand.times, 0.5)), "hand-p50-ms")
			b.ReportMetric(ms(p(hand.times, 0.99)), "hand-p99-ms")
			b.ReportMetric(float64(p(hook.times, 0.5))/float64(p(none.times, 0.5)), "p50-ratio")
			b.ReportMetric(float64(p(hook.times, 0.99))/float64(p(none.times, 0.99)), "p99-ratio")
			b.ReportMetric(float64(p(hand.times, 0.5))/float64(p(none.times, 0.5)), "hand-p50-ratio")
			b.ReportMetric(float64(p(hand.times, 0.99))/float64(p(none.times, 0.99)), "hand-p99-ratio")
			b.ReportMetric(reviews/float64(b.N), "reviews/op")
			b.ReportMetric(0, "ns/op")
		})
	}
}
