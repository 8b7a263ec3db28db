package configmapwatcher

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/example/switchboard/controllers/internal/collectors"
)

// The results of a roll, in rollsTotal.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// The reasons a roll was skipped or put off, in skippedRolls.
const (
	// skippedInvalidAnnotation: an entry of an annotation that says what the workload rolls on
	// cannot be read; the others still count.
	skippedInvalidAnnotation = "invalid-annotation"
	// skippedSourceMissing: a source the workload uses does not exist (deleted without
	// --reload-on-delete, or not created yet).
	skippedSourceMissing = "source-missing"
	// skippedRateLimited: --max-rollouts-per-minute put the roll off; it comes later.
	skippedRateLimited = "rate-limited"
	// skippedWebhookOnly: --webhook-url posted the change instead of rolling (the label keeps the
	// name of the flag that once asked for it, which dashboards and alerts select).
	skippedWebhookOnly = "webhook-only"
	// skippedPauseInvalid: pause-period cannot be read, or is on a kind other than a
	// Deployment; the workload rolled without a pause.
	skippedPauseInvalid = "invalid-pause-period"
)

// The configmapwatcher's metrics. The reloader_ ones carry Stakater Reloader's names, labels
// and meaning, so that a dashboard or an alert made for Reloader keeps working.
var (
	// rollsTotal is switchboard_configmapwatcher_rolls_total{kind,namespace,result}.
	rollsTotal = collectors.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_configmapwatcher_rolls_total",
		Help: "Rolls of workloads because the ConfigMaps or Secrets they use changed (a Job re-created, a CronJob's Job run at once count too), by workload kind, namespace and result (success, error).",
	}, []string{"kind", "namespace", "result"}))
	// skippedRolls is switchboard_configmapwatcher_skipped_rolls_total{kind,reason}.
	skippedRolls = collectors.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_configmapwatcher_skipped_rolls_total",
		Help: "Reconciles that did not roll a workload, or not yet, for a reason worth an alert, by workload kind and reason: invalid-annotation, source-missing, rate-limited, webhook-only, invalid-pause-period. Counted at each reconcile that finds the reason, so it grows for as long as the reason lasts.",
	}, []string{"kind", "reason"}))
	// webhookTotal is switchboard_configmapwatcher_webhook_posts_total{result}.
	webhookTotal = collectors.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_configmapwatcher_webhook_posts_total",
		Help: "Notifications to --webhook-url by result: sent; dropped after the last retry failed, or because the queue of notifications was full.",
	}, []string{"result"}))
	// reloaderUnsupported is switchboard_configmapwatcher_reloader_unsupported{form,name,kind}.
	reloaderUnsupported = collectors.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchboard_configmapwatcher_reloader_unsupported",
		Help: "Stakater Reloader's environment variables and annotations seen at start that the configmapwatcher does not read, by form (env, annotation), name and, for an annotation, workload kind: 1 for a variable, the number of workloads of the kind that carry it for an annotation. (A Reloader flag it cannot honour stops the manager instead.)",
	}, []string{"form", "name", "kind"}))

	// reloaderReloads is Reloader's reloader_reload_executed_total{success}.
	reloaderReloads = collectors.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_reload_executed_total",
		Help: "Counter of reloads executed (Stakater Reloader's metric): the configmapwatcher's rolls, success true or false.",
	}, []string{"success"}))
	// reloaderReloadsByNamespace is Reloader's
	// reloader_reload_executed_total_by_namespace{success,namespace}, which Reloader exposes
	// with METRICS_COUNT_BY_NAMESPACE=enabled only.
	reloaderReloadsByNamespace = collectors.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_reload_executed_total_by_namespace",
		Help: "Counter of reloads executed by namespace (Stakater Reloader's metric): the configmapwatcher's rolls, success true or false.",
	}, []string{"success", "namespace"}))
	// reloaderActions is Reloader's reloader_action_total{workload_kind,result}.
	reloaderActions = collectors.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "reloader_action_total",
		Help: "Total number of reload actions by workload kind and result (Stakater Reloader's metric): the configmapwatcher's rolls, result success or error.",
	}, []string{"workload_kind", "result"}))
)

func init() {
	// Served at 0 from the start, so that rate() and increase() see the first one: Reloader's
	// dashboards read both values of success, and an alert on dropped notifications needs its
	// series before the first drop.
	reloaderReloads.WithLabelValues("true").Add(0)
	reloaderReloads.WithLabelValues("false").Add(0)
	webhookTotal.WithLabelValues("sent").Add(0)
	webhookTotal.WithLabelValues("dropped").Add(0)
}

// skippedReasons are the reasons of skippedRolls.
var skippedReasons = []string{skippedInvalidAnnotation, skippedSourceMissing, skippedRateLimited, skippedWebhookOnly, skippedPauseInvalid}

// initKind serves skippedRolls at 0 for kind and every reason, so that an alert on its
// increase sees the first skip.
func initKind(kind string) {
	for _, reason := range skippedReasons {
		skippedRolls.WithLabelValues(kind, reason).Add(0)
	}
}

// countRoll counts a roll of a workload of kind in namespace under our names and Reloader's.
func countRoll(kind, namespace string, err error) {
	result := resultSuccess
	if err != nil {
		result = resultError
	}
	success := strconv.FormatBool(err == nil)
	rollsTotal.WithLabelValues(kind, namespace, result).Inc()
	reloaderReloads.WithLabelValues(success).Inc()
	reloaderReloadsByNamespace.WithLabelValues(success, namespace).Inc()
	reloaderActions.WithLabelValues(kind, result).Inc()
}
