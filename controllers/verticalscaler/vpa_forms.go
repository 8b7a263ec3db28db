package verticalscaler

import (
	"regexp"
	"slices"
)

// VPAField is a field of the Vertical Pod Autoscaler's VerticalPodAutoscaler (VPA v1.8.1) with
// what the verticalscaler makes of it: a row of the fields table of
// docs/migrating/from-vpa.md, which `make docs` writes from VPAFields. test/vpacompare holds the
// table to the VPA's own Go types.
type VPAField struct {
	// Path is the field's JSON path from the object, with [] after a list.
	Path string
	// VerticalScaler is the VerticalScaler field that says the same, empty when none does.
	VerticalScaler string
	// Unsupported says that a VerticalPodAutoscaler that sets the field is ConfigUnsupported,
	// with Note as the reason, and is not acted on.
	Unsupported bool
	// Note says where it differs here from the VPA, or why it is not there.
	Note string
}

// VPAFields are the fields of the VPA's spec and status, in the order of its types.go.
var VPAFields = []VPAField{
	{Path: "spec.targetRef", VerticalScaler: "spec.targetRef",
		Note: "Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, CronJob, Job, or a custom workload with a scale subresource (its apiVersion set); a VerticalScaler may say `spec.deploymentName` instead, for a Deployment"},
	{Path: "spec.updatePolicy.updateMode", VerticalScaler: "spec.updateMode",
		Note: "one level up in a VerticalScaler, whose default is `Off` (a kept VPA's is `Recreate`, as the VPA's); `Auto` is `Recreate` in both; `InPlace` (resize, never evict) makes a kept VPA ConfigUnsupported"},
	{Path: "spec.updatePolicy.minReplicas", VerticalScaler: "spec.updatePolicy.minReplicas"},
	{Path: "spec.updatePolicy.evictionRequirements[]", VerticalScaler: "spec.updatePolicy.evictionRequirements",
		Note: "they guard resizes in place too"},
	{Path: "spec.updatePolicy.evictAfterOOMSeconds", Unsupported: true,
		Note: "Switchboard does not evict early after an OOM kill: a container killed for lack of memory raises its recommendation, and its Pod is changed as the update mode says"},
	{Path: "spec.resourcePolicy.containerPolicies[].containerName", VerticalScaler: "spec.containerPolicies[].containerName",
		Note: "the policies are one level up in a VerticalScaler, at most 7"},
	{Path: "spec.resourcePolicy.containerPolicies[].mode", VerticalScaler: "spec.containerPolicies[].mode"},
	{Path: "spec.resourcePolicy.containerPolicies[].minAllowed", VerticalScaler: "spec.containerPolicies[].minAllowed",
		Note: "`cpu` and `memory` only"},
	{Path: "spec.resourcePolicy.containerPolicies[].maxAllowed", VerticalScaler: "spec.containerPolicies[].maxAllowed",
		Note: "`cpu` and `memory` only"},
	{Path: "spec.resourcePolicy.containerPolicies[].controlledResources", VerticalScaler: "spec.containerPolicies[].controlledResources",
		Note: "an empty list means cpu and memory in a VerticalScaler; a kept VPA's empty list leaves the container without a recommendation, as `mode: Off` (the VPA lists it with an empty target)"},
	{Path: "spec.resourcePolicy.containerPolicies[].controlledValues", VerticalScaler: "spec.containerPolicies[].controlledValues"},
	{Path: "spec.resourcePolicy.containerPolicies[].oomBumpUpRatio", VerticalScaler: "spec.containerPolicies[].oomBumpUpRatio"},
	{Path: "spec.resourcePolicy.containerPolicies[].oomMinBumpUp", VerticalScaler: "spec.containerPolicies[].oomMinBumpUp"},
	{Path: "spec.resourcePolicy.containerPolicies[].memoryAggregationIntervalSeconds", VerticalScaler: "spec.containerPolicies[].memoryAggregationInterval",
		Note: "a duration (`24h`) in a VerticalScaler, at least `1m`"},
	{Path: "spec.resourcePolicy.containerPolicies[].memoryAggregationIntervalCount", VerticalScaler: "spec.containerPolicies[].memoryAggregationIntervalCount"},
	{Path: "spec.resourcePolicy.containerPolicies[].startupBoost", Unsupported: true,
		Note: "Switchboard does not boost CPU at startup"},
	{Path: "spec.recommenders[]", VerticalScaler: "spec.recommenders",
		Note: "the manager recommends for the objects that name `--recommender-name` (and for a kept VPA that names none while that is `default`); for the others it applies the recommendation their recommender writes into status"},
	{Path: "spec.startupBoost", Unsupported: true,
		Note: "Switchboard does not boost CPU at startup"},
	{Path: "status.recommendation.containerRecommendations[]", VerticalScaler: "status.recommendation.containerRecommendations",
		Note: "a VerticalScaler's add `samples`, `firstSampleTime`, `lastSampleTime`, `lastOOMKillTime`"},
	{Path: "status.conditions[]", VerticalScaler: "status.conditions",
		Note: "a kept VPA gets the VPA's `RecommendationProvided`, `NoPodsMatched`, `ConfigUnsupported`; a VerticalScaler's are `metav1.Condition`s `Ready`, `TargetFound`, `RecommendationProvided`, `Applied`"},
	{Path: "status.observedGeneration", VerticalScaler: "status.observedGeneration",
		Note: "a kept VPA's is the generation its status was written for; a VerticalScaler's the generation last carried out without error"},
}

// listIndex matches a list index in a field's path.
var listIndex = regexp.MustCompile(`\[\d+\]`)

// unsupportedField is a ConfigUnsupported problem for the field at path (with list indices),
// worded by its row of VPAFields.
func unsupportedField(path string) string {
	generic := listIndex.ReplaceAllString(path, "[]")
	i := slices.IndexFunc(VPAFields, func(f VPAField) bool { return f.Unsupported && f.Path == generic })
	if i < 0 {
		return path + ": not supported"
	}
	return path + ": " + VPAFields[i].Note
}

// The components of the VPA whose flags VPAFlags lists.
const (
	VPARecommender         = "recommender"
	VPAUpdater             = "updater"
	VPAAdmissionController = "admission-controller"
)

// vpaComponents are all three, for the flags each of them takes.
var vpaComponents = []string{VPARecommender, VPAUpdater, VPAAdmissionController}

// VPAFlag is a flag of the VPA's components (VPA v1.8.1, the flags their own code binds) with
// what stands for it here: a row of the flags table of docs/migrating/from-vpa.md. test/vpacompare
// holds the names to the VPA's code, and the controllers package the manager's flags to the
// manager's.
type VPAFlag struct {
	// Name is the flag, without dashes.
	Name string
	// Components are the VPA's components that take it.
	Components []string
	// Manager is the manager's flag that does the same, without dashes; empty when none does.
	Manager string
	// VerticalScaler is the VerticalScaler field that says it per object, when one does.
	VerticalScaler string
	// Note says where it differs, or why it is not there.
	Note string
}

// Notes shared by several flags.
const (
	noPrometheus       = "not there: usage history comes from checkpoints (a kept VPA's are read once), not from Prometheus"
	noExternalMetrics  = "not there: usage comes from the metrics API (`--usage-source=metrics-api`)"
	noAdmissionStatus  = "not there: no admission webhook runs; the `ReplacementsUnsized` guard stops evictions when new Pods come back unsized"
	noWebhook          = "not there: Pods are sized at creation by a MutatingAdmissionPolicy of the API server, and no webhook runs"
	metricsAddress     = "serves HTTPS with the API server's authentication by default (`--metrics-secure`)"
	perVerticalScaler  = "for the whole cluster in the VPA; per object here"
	percentileHere     = "per VerticalScaler, one for CPU and memory; a kept VPA gets the VPA's defaults"
	startupBoostAbsent = "not there: Switchboard does not boost CPU at startup"
	fixedAtVPADefault  = "not there: fixed at the VPA's default"
)

// VPAFlags are the flags of the VPA's recommender, updater and admission controller, the ones
// they share first, then each component's in the order its config.go binds them.
var VPAFlags = []VPAFlag{
	{Name: "kubeconfig", Components: vpaComponents, Manager: "kubeconfig"},
	{Name: "kube-api-qps", Components: vpaComponents, Manager: "kube-api-qps", Note: "a limit per kind of object; by default (0) none, where the VPA's is 50, and the API server's Priority and Fairness applies"},
	{Name: "kube-api-burst", Components: vpaComponents, Manager: "kube-api-burst"},
	{Name: "profiling", Components: vpaComponents, Note: "not there: the manager serves no pprof"},
	{Name: "vpa-object-namespace", Components: vpaComponents, Manager: "watch-namespaces", Note: "a list, and it narrows every controller of the manager"},
	{Name: "ignored-vpa-object-namespaces", Components: vpaComponents, Note: "not there: list the namespaces to watch with `--watch-namespaces`"},

	{Name: "recommender-name", Components: []string{VPARecommender}, Manager: "recommender-name"},
	{Name: "recommender-interval", Components: []string{VPARecommender}, Manager: "usage-interval", Note: "how often usage is read; a recommendation changes with each read"},
	{Name: "checkpoints-gc-interval", Components: []string{VPARecommender}, Note: "not there: a VerticalScalerCheckpoint is owned by its VerticalScaler and deleted with it"},
	{Name: "checkpoints-timeout", Components: []string{VPARecommender}, Manager: "checkpoint-writes-per-second", Note: "bounds the load of checkpoint writes as a rate; `--checkpoint-flush-timeout` bounds the writes at a planned stop"},
	{Name: "address", Components: vpaComponents, Manager: "metrics-bind-address", Note: metricsAddress},
	{Name: "storage", Components: []string{VPARecommender}, Note: "not there: history is kept in checkpoints, the VPA's `checkpoint` storage; Prometheus is not read"},
	{Name: "memory-saver", Components: []string{VPARecommender}, Note: "not there: only the Pods of a target are tracked, as with `--memory-saver`"},
	{Name: "update-worker-count", Components: []string{VPARecommender}, Manager: "concurrency", Note: "`--concurrency=verticalscaler=N`: concurrent reconciles, each writing its recommendation and checkpoint"},
	{Name: "min-checkpoints", Components: []string{VPARecommender}, Note: "not there: without effect in the VPA too (deprecated)"},
	{Name: "recommendation-margin-fraction", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.safetyMarginPercent", Note: "in percent, " + perVerticalScaler},
	{Name: "pod-recommendation-min-cpu-millicores", Components: []string{VPARecommender}, Note: fixedAtVPADefault + ", 25m a Pod"},
	{Name: "pod-recommendation-min-memory-mb", Components: []string{VPARecommender}, Note: fixedAtVPADefault + ", 250Mi a Pod"},
	{Name: "target-cpu-percentile", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.targetPercentile", Note: percentileHere},
	{Name: "recommendation-lower-bound-cpu-percentile", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.lowerBoundPercentile", Note: percentileHere},
	{Name: "recommendation-upper-bound-cpu-percentile", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.upperBoundPercentile", Note: percentileHere},
	{Name: "confidence-interval-cpu", Components: []string{VPARecommender}, Note: fixedAtVPADefault + " (a day)"},
	{Name: "target-memory-percentile", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.targetPercentile", Note: percentileHere},
	{Name: "recommendation-lower-bound-memory-percentile", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.lowerBoundPercentile", Note: percentileHere},
	{Name: "recommendation-upper-bound-memory-percentile", Components: []string{VPARecommender}, VerticalScaler: "spec.recommenderPolicy.upperBoundPercentile", Note: percentileHere},
	{Name: "confidence-interval-memory", Components: []string{VPARecommender}, Note: fixedAtVPADefault + " (a day)"},
	{Name: "humanize-memory", Components: []string{VPARecommender}, Note: "not there: memory is written in whole MiB (`250Mi`)"},
	{Name: "round-cpu-millicores", Components: []string{VPARecommender}, Note: "not there: CPU is rounded up to a whole millicore, the VPA's default"},
	{Name: "round-memory-bytes", Components: []string{VPARecommender}, Note: "not there: memory is rounded up to a whole MiB, where the VPA's default does not round it"},
	{Name: "prometheus-address", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "prometheus-insecure", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "prometheus-cadvisor-job-name", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "history-length", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "history-resolution", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "history-cpu-metric", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "history-memory-metric", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "prometheus-query-timeout", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "pod-label-prefix", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "metric-for-pod-labels", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "pod-namespace-label", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "pod-name-label", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "container-namespace-label", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "container-pod-name-label", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "container-name-label", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "username", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "password", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "prometheus-bearer-token", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "prometheus-bearer-token-file", Components: []string{VPARecommender}, Note: noPrometheus},
	{Name: "use-external-metrics", Components: []string{VPARecommender}, Note: noExternalMetrics},
	{Name: "external-metrics-cpu-metric", Components: []string{VPARecommender}, Note: noExternalMetrics},
	{Name: "external-metrics-memory-metric", Components: []string{VPARecommender}, Note: noExternalMetrics},
	{Name: "memory-aggregation-interval", Components: []string{VPARecommender}, VerticalScaler: "spec.containerPolicies[].memoryAggregationInterval", Note: perVerticalScaler + "; the same default, 24h"},
	{Name: "memory-aggregation-interval-count", Components: []string{VPARecommender}, VerticalScaler: "spec.containerPolicies[].memoryAggregationIntervalCount", Note: perVerticalScaler + "; the same default, 8"},
	{Name: "memory-histogram-decay-half-life", Components: []string{VPARecommender}, Note: fixedAtVPADefault + " (24h)"},
	{Name: "cpu-histogram-decay-half-life", Components: []string{VPARecommender}, Note: fixedAtVPADefault + " (24h)"},
	{Name: "oom-bump-up-ratio", Components: []string{VPARecommender}, VerticalScaler: "spec.containerPolicies[].oomBumpUpRatio", Note: perVerticalScaler + "; the same default, 1.2"},
	{Name: "oom-min-bump-up-bytes", Components: []string{VPARecommender}, VerticalScaler: "spec.containerPolicies[].oomMinBumpUp", Note: perVerticalScaler + "; the same default, 100Mi"},
	{Name: "cpu-integer-post-processor-enabled", Components: []string{VPARecommender}, Note: "not there: CPU is not rounded up to whole cores"},
	{Name: "container-recommendation-max-allowed-cpu", Components: []string{VPARecommender}, VerticalScaler: "spec.containerPolicies[].maxAllowed", Note: perVerticalScaler},
	{Name: "container-recommendation-max-allowed-memory", Components: []string{VPARecommender}, VerticalScaler: "spec.containerPolicies[].maxAllowed", Note: perVerticalScaler},

	{Name: "updater-interval", Components: []string{VPAUpdater}, Note: "not there: a change of recommendation or of the Pods is acted on when it happens; `--min-apply-interval` spaces the changes of one target"},
	{Name: "min-replicas", Components: []string{VPAUpdater}, Manager: "min-replicas"},
	{Name: "eviction-tolerance", Components: []string{VPAUpdater}, Manager: "max-unavailable-per-workload", Note: "a number of Pods (default 1), not a fraction of the replicas"},
	{Name: "eviction-rate-limit", Components: []string{VPAUpdater}, Manager: "pod-update-rate-limit", Note: "resizes and evictions share it"},
	{Name: "eviction-rate-burst", Components: []string{VPAUpdater}, Manager: "pod-update-rate-burst", Note: "resizes and evictions share it"},
	{Name: "use-admission-controller-status", Components: []string{VPAUpdater}, Note: noAdmissionStatus},
	{Name: "in-place-skip-disruption-budget", Components: []string{VPAUpdater}, Note: "not there: a resize in place never goes through a PodDisruptionBudget here (the Eviction API alone honours them)"},
	{Name: "admission-controller-status-lease-name", Components: []string{VPAUpdater}, Note: noAdmissionStatus},
	{Name: "admission-controller-status-lease-namespace", Components: []string{VPAUpdater}, Note: noAdmissionStatus},
	{Name: "admission-controller-status-lease-timeout", Components: []string{VPAUpdater}, Note: noAdmissionStatus},
	{Name: "pod-update-threshold", Components: []string{VPAUpdater}, Note: fixedAtVPADefault + " (0.1), once the history spans a day; before, only a request outside the bounds is changed"},
	{Name: "in-recommendation-bounds-eviction-lifetime-threshold", Components: []string{VPAUpdater}, Note: "not there: a request within the bounds is changed once the recommendation's history spans a day, whatever the Pod's age"},
	{Name: "evict-after-oom-threshold", Components: []string{VPAUpdater}, Note: "not there: as `evictAfterOOMSeconds`, a container killed for lack of memory raises its recommendation, and its Pod is changed as the update mode says"},
	{Name: "concurrent-cpu-startup-boost-syncs", Components: []string{VPAUpdater}, Note: startupBoostAbsent},

	{Name: "client-ca-file", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "tls-cert-file", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "tls-private-key", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "reload-cert", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "tls-ciphers", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "min-tls-version", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "port", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "webhook-service", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "webhook-address", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "webhook-port", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "webhook-timeout-seconds", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "webhook-failure-policy-fail", Components: []string{VPAAdmissionController}, Note: noWebhook + "; the policy's binding fails open (`failurePolicy: Ignore`)"},
	{Name: "register-webhook", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "webhook-labels", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "register-by-url", Components: []string{VPAAdmissionController}, Note: noWebhook},
	{Name: "status-lease-name", Components: []string{VPAAdmissionController}, Note: noAdmissionStatus},
	{Name: "status-lease-namespace", Components: []string{VPAAdmissionController}, Note: noAdmissionStatus},
	{Name: "status-lease-update-interval", Components: []string{VPAAdmissionController}, Note: noAdmissionStatus},
	{Name: "max-allowed-cpu-boost", Components: []string{VPAAdmissionController}, Note: startupBoostAbsent},
}
