package verticalscaler

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// Options are the verticalscaler's own flags. Its table row binds them with the manager's
// and validates them before anything starts, as kube-controller-manager keeps one options
// struct per controller.
type Options struct {
	// UsageSource says where Pod usage comes from: one of recommender.UsageSources.
	UsageSource string
	// UsageInterval is how often usage is read.
	UsageInterval time.Duration
	// CheckpointInterval is the least time between two checkpoints of one VerticalScaler's
	// usage history; zero neither writes nor reads checkpoints.
	CheckpointInterval time.Duration
	// CheckpointWritesPerSecond bounds the periodic checkpoint writes on average; zero, no bound.
	CheckpointWritesPerSecond float64
	// CheckpointFlushTimeout bounds the checkpoint writes of a planned stop.
	CheckpointFlushTimeout time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		UsageSource:   recommender.UsageFromMetricsAPI,
		UsageInterval: recommender.DefaultUsageInterval,
		// A crash loses at most this much usage history (docs/controllers/verticalscaler.md).
		CheckpointInterval:        recommender.DefaultCheckpointInterval,
		CheckpointWritesPerSecond: recommender.DefaultCheckpointWritesPerSecond,
		CheckpointFlushTimeout:    recommender.DefaultCheckpointFlushTimeout,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.UsageSource, "usage-source", o.UsageSource, "Where the verticalscaler's metrics source reads Pod usage: "+strings.Join(recommender.UsageSources, ", ")+" ('pod-annotations' reads "+recommender.UsageAnnotationPrefix+"<container> annotations such as 'cpu=250m,memory=128Mi', for clusters without metrics-server).")
	fs.DurationVar(&o.UsageInterval, "usage-interval", o.UsageInterval, "How often the metrics source reads Pod usage.")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", o.CheckpointInterval, "Least time between two writes of a VerticalScaler's usage history to its VerticalScalerCheckpoint, which a restarted or newly elected manager reads back; 0 neither writes nor reads checkpoints.")
	fs.Float64Var(&o.CheckpointWritesPerSecond, "checkpoint-writes-per-second", o.CheckpointWritesPerSecond, "Average checkpoint writes per second at most, so that many VerticalScalers cost the API server a bounded load; past it each checkpoint is written less often than --checkpoint-interval. 0: no bound.")
	fs.DurationVar(&o.CheckpointFlushTimeout, "checkpoint-flush-timeout", o.CheckpointFlushTimeout, "How long a manager that stops, or gives its Lease up, may take to write the checkpoints of every usage history that changed since its last one; keep it under the Pod's termination grace period.")
}

// Validate says what is wrong with the options, naming the flag.
func (o *Options) Validate() error {
	switch {
	case !slices.Contains(recommender.UsageSources, o.UsageSource):
		return fmt.Errorf("--usage-source must be one of %s, got %q", strings.Join(recommender.UsageSources, ", "), o.UsageSource)
	case o.UsageInterval <= 0:
		return fmt.Errorf("--usage-interval must be positive, got %s", o.UsageInterval)
	case o.CheckpointInterval < 0:
		return fmt.Errorf("--checkpoint-interval must not be negative, got %s", o.CheckpointInterval)
	case o.CheckpointWritesPerSecond < 0:
		return fmt.Errorf("--checkpoint-writes-per-second must not be negative, got %v", o.CheckpointWritesPerSecond)
	case o.CheckpointFlushTimeout <= 0:
		return fmt.Errorf("--checkpoint-flush-timeout must be positive, got %s", o.CheckpointFlushTimeout)
	}
	return nil
}

// ReadsUsage says whether the usage poller runs.
func (o *Options) ReadsUsage() bool {
	return o.UsageSource != recommender.UsageOff
}
