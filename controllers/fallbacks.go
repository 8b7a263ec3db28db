package controllers

import (
	"context"
	"slices"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"

	"github.com/example/switchboard/controllers/internal/apifeatures"
	"github.com/example/switchboard/controllers/internal/collectors"
	"github.com/example/switchboard/controllers/internal/transient"
)

// fallbackGauge is switchboard_api_fallback{controller,feature}: for each optional API a
// selected controller can do without, 1 when the API server does not serve it, else 0.
var fallbackGauge = collectors.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "switchboard_api_fallback",
	Help: "For each optional API (feature: MutatingAdmissionPolicy, PodResize) the controller can do without: 1 when the API server does not serve it and the controller does without (the start's log says what it does instead), 0 when it is served.",
}, []string{"controller", "feature"}))

// FallbackLogMessage is the manager's line at start for each optional API the API server does
// not serve and a controller does without, with its controller, feature and what it does
// instead.
const FallbackLogMessage = "The API server does not serve an API the controller uses"

// findFallbacks asks the API server, when a controller has Fallbacks, which optional APIs it
// does not serve, keeps them for New (MissingAPIs), and says each controller's fallbacks once
// in log and in switchboard_api_fallback.
func (o *Options) findFallbacks(ctx context.Context, discoveryClient func() (*discovery.DiscoveryClient, error), controllers []Controller, log logr.Logger) error {
	if !slices.ContainsFunc(controllers, func(c Controller) bool { return c.Fallbacks != nil }) {
		return nil
	}
	d, err := discoveryClient()
	if err != nil {
		return err
	}
	err = transient.Retry(ctx, transient.StartBackoff, log, "asking which optional APIs the API server serves", func(context.Context) (err error) {
		o.missingAPIs, err = apifeatures.Discover(d)
		return err
	})
	if err != nil {
		return err
	}
	for _, c := range controllers {
		if c.Fallbacks == nil {
			continue
		}
		for _, f := range c.Fallbacks(apifeatures.AllMissing) {
			fallbackGauge.WithLabelValues(c.Name, f.Feature).Set(0)
		}
		for _, f := range c.Fallbacks(o.missingAPIs) {
			log.Info(FallbackLogMessage, "controller", c.Name, "feature", f.Feature, "instead", f.Instead)
			fallbackGauge.WithLabelValues(c.Name, f.Feature).Set(1)
		}
	}
	return nil
}
