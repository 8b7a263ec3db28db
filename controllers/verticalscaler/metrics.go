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

// The counters of what the controller did to targets, and held back, each served at 0 for
// every label value from the start.
var (
	// skippedApplies counts the changes a reconcile wanted to make and did not, by the reason
	// of the Applied condition that says why.
	skippedApplies = collectors.Counters(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_skipped_applies_total",
		Help: "Changes of a Pod template or a running Pod that a reconcile wanted and held back, by reason (the Applied condition's: WaitingForMinApplyInterval, EvictionRequirements, MinReplicas, DisruptionLimit, ReplacementsUnsized, RateLimited, PodDisruptionBudget).",
	}, []string{"reason"}, []string{v1alpha1.ReasonWaitingForMinApplyInterval}, []string{v1alpha1.ReasonEvictionRequirements},
		[]string{v1alpha1.ReasonMinReplicas}, []string{v1alpha1.ReasonDisruptionLimit}, []string{v1alpha1.ReasonReplacementsUnsized},
		[]string{v1alpha1.ReasonRateLimited}, []string{v1alpha1.ReasonPodDisruptionBudget})
	// templateWritesTotal counts the writes of a recommendation to a Pod template.
	templateWritesTotal = collectors.Register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_template_writes_total",
		Help: "Writes of a recommendation to a target's Pod template (Recreate and Auto modes), each of which replaces its Pods.",
	}))
	// podResizesTotal counts the resizes of running Pods by result.
	podResizesTotal = collectors.Counters(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_pod_resizes_total",
		Help: "Resizes of running Pods in place through the resize subresource, by result: requested (the API server took it), refused (it refused the change: the Pod is evicted instead), failed (an error to retry).",
	}, []string{"result"}, []string{"requested"}, []string{"refused"}, []string{"failed"})
	// evictionsTotal counts the Pods evicted, by reason.
	evictionsTotal = collectors.Counters(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_evictions_total",
		Help: "Pods evicted through the Eviction API to be replaced at the recommended size, by reason: Recreate (the mode replaces Pods), ResizeFailed (InPlaceOrRecreate could not resize it).",
	}, []string{"reason"}, []string{"Recreate"}, []string{"ResizeFailed"})
)

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
