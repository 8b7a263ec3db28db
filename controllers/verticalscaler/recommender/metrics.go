package recommender

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The results of a read of metrics.k8s.io, in metricsAPIReads.
const (
	readSuccess = "success"
	readError   = "error"
)

// metricsAPIReads is switchboard_verticalscaler_metrics_api_reads_total{result}: what tells an
// operator that the verticalscaler cannot see usage. The condition RecommendationProvided of
// each VerticalScaler says so too, but a condition cannot be alerted on without a
// kube-state-metrics configuration of its own, and rest_client_requests_total does not say
// which API a failed request was for.
var metricsAPIReads = newMetricsAPIReads()

func newMetricsAPIReads() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_metrics_api_reads_total",
		Help: "Reads of Pod usage from metrics.k8s.io (--usage-source=metrics-api), one per target and poll, by result: success, or error (the API is not served, metrics-server failed, or the read timed out).",
	}, []string{"result"})
	if err := metrics.Registry.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			return already.ExistingCollector.(*prometheus.CounterVec)
		}
		panic(err)
	}
	// Both results from the start, so that a rate of errors against successes has both series
	// before the first failure.
	c.WithLabelValues(readSuccess)
	c.WithLabelValues(readError)
	return c
}

// countMetricsAPIRead counts one read of metrics.k8s.io that ended with err.
func countMetricsAPIRead(err error) {
	result := readSuccess
	if err != nil {
		result = readError
	}
	metricsAPIReads.WithLabelValues(result).Inc()
}
