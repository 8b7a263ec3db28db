package verticalscaler

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/collectors"
)

// recommendationGauge is the recommendation in each VerticalScaler's status, per container,
// resource and bound, in the resource's base unit (cores, bytes): what dashboards draw and
// alerts compare the running requests with.
var recommendationGauge = collectors.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "switchboard_verticalscaler_recommendation",
	Help: "The recommendation in a VerticalScaler's status, per container and resource (cpu in cores, memory in bytes): bound is target, lower_bound, upper_bound (bounded by the container policy) or uncapped_target.",
}, []string{"namespace", "verticalscaler", "container", "resource", "bound"}))

// recordRecommendation sets the gauges of vs's recommendation to what its status says, and drops
// those of containers it no longer has; a nil vs (deleted) drops them all.
func recordRecommendation(key types.NamespacedName, vs *v1alpha1.VerticalScaler) {
	recommendationGauge.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "verticalscaler": key.Name})
	if vs == nil || vs.Status.Recommendation == nil {
		return
	}
	for _, c := range vs.Status.Recommendation.ContainerRecommendations {
		for bound, list := range map[string]corev1.ResourceList{"target": c.Target, "lower_bound": c.LowerBound,
			"upper_bound": c.UpperBound, "uncapped_target": c.UncappedTarget} {
			for name, q := range list {
				recommendationGauge.WithLabelValues(key.Namespace, key.Name, c.ContainerName, string(name), bound).Set(q.AsApproximateFloat64())
			}
		}
	}
}
