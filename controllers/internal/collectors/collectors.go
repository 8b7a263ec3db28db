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
