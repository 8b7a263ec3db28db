// Package collectors registers the controllers' Prometheus collectors with controller-runtime's
// registry, which the manager's /metrics serves.
package collectors

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Register registers c with controller-runtime's registry, or returns the collector already
// registered under its description: tests start several managers in one process, which share
// it. Any other failure (a name registered with other labels) is a programming error.
func Register[C prometheus.Collector](c C) C {
	if err := metrics.Registry.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			return already.ExistingCollector.(C)
		}
		panic(err)
	}
	return c
}

// Counters registers the counter vector of opts and labels, and creates its series of each
// label value set of values at 0, so that they are served from the start: an alert on a rate
// sees the first increase, and a dashboard lists every reason before one happens.
func Counters(opts prometheus.CounterOpts, labels []string, values ...[]string) *prometheus.CounterVec {
	vec := Register(prometheus.NewCounterVec(opts, labels))
	for _, v := range values {
		vec.WithLabelValues(v...)
	}
	return vec
}
