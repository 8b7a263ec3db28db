package verticalscaler

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/example/switchboard/apis/v1alpha1"
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
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		UsageSource:   recommender.UsageFromMetricsAPI,
		UsageInterval: recommender.DefaultUsageInterval,
		// A restart loses at most this much usage history (docs/controllers/verticalscaler.md).
		CheckpointInterval: recommender.DefaultCheckpointInterval,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.UsageSource, "usage-source", o.UsageSource, "Where the verticalscaler's metrics source reads Pod usage: "+strings.Join(recommender.UsageSources, ", ")+" ('pod-annotations' reads "+v1alpha1.UsageAnnotationPrefix+"<container> annotations such as 'cpu=250m,memory=128Mi', for clusters without metrics-server).")
	fs.DurationVar(&o.UsageInterval, "usage-interval", o.UsageInterval, "How often the metrics source reads Pod usage.")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", o.CheckpointInterval, "Least time between two writes of a VerticalScaler's usage history to its VerticalScalerCheckpoint, which a restarted or newly elected manager reads back; 0 neither writes nor reads checkpoints.")
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
	}
	return nil
}

// ReadsUsage says whether the usage poller runs.
func (o *Options) ReadsUsage() bool {
	return o.UsageSource != recommender.UsageOff
}
