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
)
