package recommender

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/example/switchboard/controllers/internal/collectors"
)

// The poller's metrics.
var (
	// oomKillsTotal counts the OOM kills of targeted containers recorded into a history, each
	// once, by how the poller saw it: "watch" (the Pod watch, as it happened) or "read" (a
	// cycle's read of the Pods' last state: after a restart, or one the watch missed).
	oomKillsTotal = collectors.Counters(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_oom_kills_total",
		Help: "OOM kills of the containers of VerticalScalers' targets recorded into their usage history, each once, by how they were seen (watch: the Pod watch, read: a usage cycle's read of the Pods).",
	}, []string{"seen"}, []string{"watch"}, []string{"read"})
	// checkpointWritesTotal counts checkpoint writes by when ("cycle" or "stop") and result.
	checkpointWritesTotal = collectors.Counters(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_checkpoint_writes_total",
		Help: "Writes of VerticalScalerCheckpoints, by when (cycle: the usage cycles; stop: a planned stop) and result (written, failed).",
	}, []string{"when", "result"}, []string{"cycle", "written"}, []string{"cycle", "failed"}, []string{"stop", "written"}, []string{"stop", "failed"})
	// metricsAPIReads counts the reads of metrics.k8s.io: what tells an operator that the
	// verticalscaler cannot see usage. The condition RecommendationProvided of each
	// VerticalScaler says so too, but a condition cannot be alerted on without a
	// kube-state-metrics configuration of its own, and rest_client_requests_total does not say
	// which API a failed request was for. Both results are served from the start, so that a
	// rate of errors against successes has both series before the first failure.
	metricsAPIReads = collectors.Counters(prometheus.CounterOpts{
		Name: "switchboard_verticalscaler_metrics_api_reads_total",
		Help: "Reads of Pod usage from metrics.k8s.io (--usage-source=metrics-api), one per target and poll, by result: success, or error (the API is not served, metrics-server failed, or the read timed out).",
	}, []string{"result"}, []string{readSuccess}, []string{readError})
)

// The results of a read of metrics.k8s.io, in metricsAPIReads.
const (
	readSuccess = "success"
	readError   = "error"
)

// countMetricsAPIRead counts one read of metrics.k8s.io that ended with err.
func countMetricsAPIRead(err error) {
	result := readSuccess
	if err != nil {
		result = readError
	}
	metricsAPIReads.WithLabelValues(result).Inc()
}
