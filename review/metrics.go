package review

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reviews           *prometheus.CounterVec
	objects           *prometheus.CounterVec
	duration          *prometheus.HistogramVec
	requestBytes      prometheus.Histogram
	selfCheckFailures *prometheus.CounterVec
	panics            prometheus.Counter
	badRequests       *prometheus.CounterVec
}

// Metric names, all registered on Options.Registerer.
const (
	MetricReviews           = "hubspoke_conversion_reviews_total"
	MetricObjects           = "hubspoke_conversion_objects_total"
	MetricDuration          = "hubspoke_conversion_review_duration_seconds"
	MetricRequestBytes      = "hubspoke_conversion_request_size_bytes"
	MetricSelfCheckFailures = "hubspoke_conversion_self_check_failures_total"
	MetricPanics            = "hubspoke_conversion_panics_recovered_total"
	MetricBadRequests       = "hubspoke_conversion_bad_requests_total"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"crd", "from_version", "to_version", "result"}
	m := &metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReviews,
			Help: "ConversionReviews answered, by CRD (Kind.group), source version, desired version and result (success, failure, self_check_failure).",
		}, labels),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricObjects,
			Help: "Objects in the ConversionReviews answered, by CRD, source version, desired version and the review's result.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricDuration,
			Help:    "Time from receiving a ConversionReview to its response being ready, by CRD.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"crd"}),
		requestBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricRequestBytes,
			Help:    "Size of ConversionReview request bodies.",
			Buckets: prometheus.ExponentialBuckets(512, 4, 12), // 512 B .. 2 GiB
		}),
		selfCheckFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSelfCheckFailures,
			Help: "Converted objects the self-check caught before the API server would have rejected them, by CRD.",
		}, []string{"crd"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricPanics,
			Help: "Panics recovered in the conversion handler and converters.",
		}),
		badRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricBadRequests,
			Help: "Requests rejected before conversion, by HTTP status code (400, 405, 413, 415, 500).",
		}, []string{"code"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.reviews, m.objects, m.duration, m.requestBytes, m.selfCheckFailures, m.panics, m.badRequests} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("review: registering metrics: %w (one Handler per Registerer)", err)
			}
			return nil, fmt.Errorf("review: registering metrics: %w", err)
		}
	}
	return m, nil
}
