package verticalscaler

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
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

	// MinReplicas is the default of spec.updatePolicy.minReplicas.
	MinReplicas int
	// MaxUnavailablePerWorkload is how many of one target's Pods may be unavailable for another
	// to be evicted.
	MaxUnavailablePerWorkload int
	// MinApplyInterval is the least time between two template writes of one target and between
	// two resizes of one Pod.
	MinApplyInterval time.Duration
	// PodUpdateRateLimit and PodUpdateRateBurst limit the resizes and evictions of the whole
	// manager: a token bucket; a limit of 0 or less is none.
	PodUpdateRateLimit float64
	PodUpdateRateBurst int
	// DeferredResizeTimeout and ResizeTimeout are how long a resize may stay Deferred, or in
	// progress, before InPlaceOrRecreate evicts the Pod.
	DeferredResizeTimeout, ResizeTimeout time.Duration

	// RecommenderName is the manager's own recommender, as the Vertical Pod Autoscaler
	// recommender's --recommender-name: VerticalPodAutoscalers and VerticalScalers that name only
	// others get the recommendation those write applied.
	RecommenderName string
	// DetectVPAComponents says whether the manager looks at start for the Vertical Pod
	// Autoscaler's own components, and leaves the verticalpodautoscaler controller idle if they
	// run.
	DetectVPAComponents bool

	// vpaReader reads what tells whether the VPA's own components run (vpaComponentsRunning),
	// without the cache. Set by Prepare; nil with --vpa-detect-components=false.
	vpaReader client.Reader
	// vpaNamespaces are the manager's namespaces (none for all), where checkpoints are listed.
	vpaNamespaces []string
}

// The defaults of the guards of changes to running Pods. Those of the rate limit and of the
// unavailable Pods per workload were chosen from BenchmarkSwitchToInPlace (docs/performance.md).
const (
	// DefaultMinReplicas is the Vertical Pod Autoscaler's --min-replicas.
	DefaultMinReplicas = 2
	// DefaultMaxUnavailablePerWorkload evicts one Pod of a workload at a time.
	DefaultMaxUnavailablePerWorkload = 1
	// DefaultPodUpdateRateLimit and DefaultPodUpdateRateBurst: changes to running Pods per
	// second, manager-wide, and how many may come at once.
	DefaultPodUpdateRateLimit = 10
	DefaultPodUpdateRateBurst = 10
	// DefaultDeferredResizeTimeout and DefaultResizeTimeout are the Vertical Pod Autoscaler's
	// (AEP-4016).
	DefaultDeferredResizeTimeout = 5 * time.Minute
	DefaultResizeTimeout         = time.Hour
)

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		UsageSource:   recommender.UsageFromMetricsAPI,
		UsageInterval: recommender.DefaultUsageInterval,
		// A crash loses at most this much usage history (docs/controllers/verticalscaler.md).
		CheckpointInterval:        recommender.DefaultCheckpointInterval,
		CheckpointWritesPerSecond: recommender.DefaultCheckpointWritesPerSecond,
		CheckpointFlushTimeout:    recommender.DefaultCheckpointFlushTimeout,
		MinReplicas:               DefaultMinReplicas,
		MaxUnavailablePerWorkload: DefaultMaxUnavailablePerWorkload,
		MinApplyInterval:          DefaultMinApplyInterval,
		PodUpdateRateLimit:        DefaultPodUpdateRateLimit,
		PodUpdateRateBurst:        DefaultPodUpdateRateBurst,
		DeferredResizeTimeout:     DefaultDeferredResizeTimeout,
		ResizeTimeout:             DefaultResizeTimeout,
		RecommenderName:           vpav1.DefaultRecommenderName,
		DetectVPAComponents:       true,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.UsageSource, "usage-source", o.UsageSource, "Where the verticalscaler's metrics source reads Pod usage: "+strings.Join(recommender.UsageSources, ", ")+" ('pod-annotations' reads "+v1alpha1.UsageAnnotationPrefix+"<container> annotations such as 'cpu=250m,memory=128Mi', for clusters without metrics-server).")
	fs.DurationVar(&o.UsageInterval, "usage-interval", o.UsageInterval, "How often the metrics source reads Pod usage.")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", o.CheckpointInterval, "Least time between two writes of a VerticalScaler's usage history to its VerticalScalerCheckpoint, which a restarted or newly elected manager reads back; 0 neither writes nor reads checkpoints.")
	fs.Float64Var(&o.CheckpointWritesPerSecond, "checkpoint-writes-per-second", o.CheckpointWritesPerSecond, "Average checkpoint writes per second at most, so that many VerticalScalers cost the API server a bounded load; past it each checkpoint is written less often than --checkpoint-interval. 0: no bound.")
	fs.IntVar(&o.MinReplicas, "min-replicas", o.MinReplicas, "Least number of a target's live Pods for the verticalscaler to evict one, unless its VerticalScaler's spec.updatePolicy.minReplicas says otherwise.")
	fs.IntVar(&o.MaxUnavailablePerWorkload, "max-unavailable-per-workload", o.MaxUnavailablePerWorkload, "How many of one target's Pods may be unavailable (not ready, or terminating) for the verticalscaler to evict another.")
	fs.DurationVar(&o.MinApplyInterval, "min-apply-interval", o.MinApplyInterval, "Least time between two writes of a recommendation to one target's Pod template, and between two resizes of one Pod.")
	fs.Float64Var(&o.PodUpdateRateLimit, "pod-update-rate-limit", o.PodUpdateRateLimit, "Resizes and evictions of running Pods per second, for the whole manager; 0 or less: no limit.")
	fs.IntVar(&o.PodUpdateRateBurst, "pod-update-rate-burst", o.PodUpdateRateBurst, "How many resizes and evictions may come at once under --pod-update-rate-limit.")
	fs.DurationVar(&o.DeferredResizeTimeout, "in-place-deferred-resize-timeout", o.DeferredResizeTimeout, "How long a resize may stay Deferred before InPlaceOrRecreate evicts the Pod instead.")
	fs.DurationVar(&o.ResizeTimeout, "in-place-resize-timeout", o.ResizeTimeout, "How long a resize may stay in progress before InPlaceOrRecreate evicts the Pod instead.")
	fs.StringVar(&o.RecommenderName, "recommender-name", o.RecommenderName, "The manager's own recommender, as the Vertical Pod Autoscaler's flag: it recommends for the VerticalPodAutoscalers whose spec.recommenders name it, and, when it is '"+vpav1.DefaultRecommenderName+"', for those that name none; for the others, and for VerticalScalers whose spec.recommenders name only others, it applies the recommendation those recommenders write into status, as the VPA's updater and admission controller do.")
	fs.BoolVar(&o.DetectVPAComponents, "vpa-detect-components", o.DetectVPAComponents, "Whether the manager looks, at start and every minute, for the Vertical Pod Autoscaler's own admission controller (MutatingWebhookConfiguration "+vpaWebhookConfiguration+") and recommender (a VerticalPodAutoscalerCheckpoint written in the last "+vpaRecommenderActiveWithin.String()+"), and leaves the verticalpodautoscaler controller idle while they run, so that the two never size the same Pods; false skips the look, for a cluster where the manager may not read them.")
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
	case o.MinReplicas < 1:
		return fmt.Errorf("--min-replicas must be at least 1, got %d", o.MinReplicas)
	case o.MaxUnavailablePerWorkload < 1:
		return fmt.Errorf("--max-unavailable-per-workload must be at least 1, got %d", o.MaxUnavailablePerWorkload)
	case o.MinApplyInterval < 0:
		return fmt.Errorf("--min-apply-interval must not be negative, got %s", o.MinApplyInterval)
	case o.PodUpdateRateLimit > 0 && o.PodUpdateRateBurst < 1:
		return fmt.Errorf("--pod-update-rate-burst must be at least 1 with a rate limit, got %d", o.PodUpdateRateBurst)
	case o.RecommenderName == "":
		return fmt.Errorf("--recommender-name must not be empty")
	case o.DeferredResizeTimeout <= 0 || o.ResizeTimeout <= 0:
		return fmt.Errorf("--in-place-deferred-resize-timeout and --in-place-resize-timeout must be positive, got %s and %s", o.DeferredResizeTimeout, o.ResizeTimeout)
	}
	return nil
}

// ReadsUsage says whether the usage poller runs.
func (o *Options) ReadsUsage() bool {
	return o.UsageSource != recommender.UsageOff
}

// UpdateLimits returns the guards of changes to running Pods the flags set, with a new rate
// limiter: each term of leading the controller starts with a full bucket.
func (o *Options) UpdateLimits() UpdateLimits {
	limits := UpdateLimits{MinReplicas: int32(o.MinReplicas), MaxUnavailablePerWorkload: o.MaxUnavailablePerWorkload,
		MinApplyInterval: o.MinApplyInterval, DeferredResizeTimeout: o.DeferredResizeTimeout, ResizeTimeout: o.ResizeTimeout}
	if o.PodUpdateRateLimit > 0 {
		limits.PodUpdates = rate.NewLimiter(rate.Limit(o.PodUpdateRateLimit), o.PodUpdateRateBurst)
	}
	return limits
}

// Prepare readies the look for the Vertical Pod Autoscaler's own components
// (vpaComponentsRunning), unless --vpa-detect-components=false. The look itself is the
// verticalpodautoscaler's Idle check, which the manager makes right after, in the same start
// and only when that controller is selected (a manager that runs the verticalscaler alone reads
// nothing of the VPA's), and again every minute while it runs.
func (o *Options) Prepare(_ context.Context, cfg *rest.Config, namespaces []string) (manager.Runnable, error) {
	if !o.DetectVPAComponents {
		return nil, nil
	}
	reader, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("creating the client that looks for the VPA's components: %w", err)
	}
	o.vpaReader, o.vpaNamespaces = reader, namespaces
	return nil, nil
}

// VPAComponentsRunning is the verticalpodautoscaler's Idle check: why it stays idle because
// the Vertical Pod Autoscaler's own components run; "" when it may act, or when
// --vpa-detect-components=false.
func (o *Options) VPAComponentsRunning(ctx context.Context, _ []string) (string, error) {
	if o.vpaReader == nil {
		return "", nil
	}
	running, err := vpaComponentsRunning(ctx, o.vpaReader, o.vpaNamespaces, time.Now())
	if err != nil {
		return "", fmt.Errorf("whether the VPA's own components run cannot be told (%w); --vpa-detect-components=false skips the look", err)
	}
	return running, nil
}
