package recommender

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/sources"
)

// Source names the verticalscaler's usage poller in the channel-source registry.
const Source sources.Name = "metrics"

// DefaultUsageInterval is how often the metrics producer reads usage: metrics-server scrapes
// every 15 to 60 seconds, so reading more often would only read the same sample again.
const DefaultUsageInterval = time.Minute

// DefaultReadTimeout bounds each read of one target's Pods and usage: a slow metrics-server
// must not hold up the whole cycle, nor the next one.
const DefaultReadTimeout = 10 * time.Second

// UsageProducer is the verticalscaler's usage poller, the producer of Source. Every Interval it
// reads, for each workload some VerticalScaler names, its Pods (their OOM kills and requests)
// and their usage, adds them to that workload's per-container histories (ContainerHistory), and
// has news for a VerticalScaler only when the target or the bounds its policy draws differ from
// what its status holds (moved), when an OOM kill came, or when usage cannot be read and its
// status does not say so yet: at most once per cycle. It stores the news in Reports and sends
// the VerticalScaler's key.
//
// The producer compares with the status the controller wrote, not with what it sent, so news
// whose event was dropped is sent again on the next cycle: level-triggered, like the periodic
// source. A failed read is reported once and retried on the next cycle, never sooner; a read
// that times out or finds no metrics API stops the cycle's other reads, which would fail alike.
//
// Which workload a VerticalScaler names, and which Pods are its, the controller finds and
// records in the VerticalScaler's status (target and targetSelector): the producer reads the
// Pods that selector selects, and skips a VerticalScaler whose status does not name the target
// its spec names yet.
//
// The histories survive a restart or a leader change through checkpoints: at the end of each
// cycle the producer writes each VerticalScaler's VerticalScalerCheckpoint when its target's
// history changed and CheckpointInterval has passed since the last write, the oldest first and
// a bounded number per cycle (checkpointWriteBudget); a target without a history in memory
// gets it back from the checkpoint before its first samples are added.
type UsageProducer struct {
	// Cache lists VerticalScalers; the manager's cache.
	Cache client.Reader
	// RecommenderName is the manager's own recommender (--recommender-name): the usage of the
	// targets of VerticalScalers whose spec.recommenders name only others is not read.
	RecommenderName string
	// Pods lists the Pods of a target: the manager's cache, which holds them trimmed.
	Pods client.Reader
	// Usage reads the Pods' usage.
	Usage UsageReader
	// Informers gives the Pod informer, whose updates bring OOM kills as they happen, and the
	// VerticalScaler informer, whose updates say when the controller found a target, to read it
	// at once; without it, the cycles' reads find both.
	Informers Informers
	// Interval is the time between two reads.
	Interval time.Duration
	// ReadTimeout bounds the reads of one target, and each read or write of a checkpoint;
	// DefaultReadTimeout when zero.
	ReadTimeout time.Duration
	// Reports receives the news; the controller reads it from there.
	Reports *Reports
	// Now is the clock histories expire and checkpoints are written by; time.Now when nil.
	Now func() time.Time

	// CheckpointInterval is the least time between two checkpoints of one VerticalScaler; zero
	// turns checkpoints off (neither read nor written).
	CheckpointInterval time.Duration
	// CheckpointWritesPerSecond bounds the checkpoint writes of the cycles on average
	// (checkpointWriteBudget); zero, no bound.
	CheckpointWritesPerSecond float64
	// CheckpointFlushTimeout bounds the writes of a planned stop (flushCheckpoints);
	// DefaultCheckpointFlushTimeout when zero.
	CheckpointFlushTimeout time.Duration
	// CheckpointReader reads a VerticalScaler's checkpoint back when the poller first needs the
	// history of its target: an uncached reader, as each is read once, and caching every
	// checkpoint would cost far more memory than the reads.
	CheckpointReader client.Reader
	// CheckpointWriter writes checkpoints, by server-side apply under FieldManager.
	CheckpointWriter client.Writer
	// FieldManager owns the checkpoints.
	FieldManager string
	// Recorder records a Warning Event on a VerticalScaler whose checkpoint cannot be read back;
	// none when nil.
	Recorder events.EventRecorder

	// histories are per target; only Run's goroutine touches them.
	histories map[historyKey]*targetHistory
	// written records each VerticalScaler's last checkpoint; only Run's goroutine touches it.
	written map[types.NamespacedName]checkpointMark
}

// historyKey names a history: the target's namespace and key (Kind.group/name), and the history
// configuration of its VerticalScalers (historyConfigKey): VerticalScalers of one target that
// aggregate memory or answer OOM kills differently keep histories of their own.
type historyKey struct {
	Namespace, Target, Config string
}

// historyConfigKey is the part of spec that shapes a history, in a canonical form: each
// container policy's OOM bump and memory aggregation, for the policies that set any; empty when
// none does, the default.
func historyConfigKey(spec *v1alpha1.VerticalScalerSpec) string {
	var parts []string
	for _, p := range spec.ContainerPolicies {
		if p.OOMBumpUpRatio == nil && p.OOMMinBumpUp == nil && p.MemoryAggregationInterval == nil && p.MemoryAggregationIntervalCount == nil {
			continue
		}
		c := HistoryConfigFor(p)
		parts = append(parts, fmt.Sprintf("%s:%g/%g/%s/%d", p.ContainerName, c.OOMBumpUpRatio, c.OOMMinBumpUpBytes,
			c.MemoryAggregationInterval, c.MemoryAggregationIntervals))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// targetHistory is the usage history of the recommended containers of one workload's Pods, by
// container name.
type targetHistory struct {
	containers map[string]*ContainerHistory
	// selector selects the workload's Pods, and perPod is how many recommended containers a Pod
	// of it has, as of the last read: what an OOM kill the Pod watch brings between two reads
	// is matched and estimated with.
	selector labels.Selector
	perPod   int
	// spec holds the container policies of the history's VerticalScalers when they configure
	// it otherwise than by default (configs caches each container's, by name); nil for the
	// default.
	spec    *v1alpha1.VerticalScalerSpec
	configs map[string]*HistoryConfig
	// version counts the changes to the history, so that a checkpoint is written only when
	// there is something new to write.
	version uint64
}

// PodsUsageReader is a UsageReader that reads usage from the Pods themselves: the poller, which
// lists the Pods anyway, hands them over instead of letting it list them again.
type PodsUsageReader interface {
	UsageReader
	UsageOfPods(namespace string, pods []corev1.Pod) ([]PodUsage, error)
}

// Run reads usage every Interval until ctx ends. On a planned stop (sources.PlannedStop: the
// manager shuts down, or releases the Lease) it then writes the checkpoints of every history
// that changed since its last one, within CheckpointFlushTimeout, so that the next manager
// loses nothing.
func (p *UsageProducer) Run(ctx context.Context, producer *sources.Producer) error {
	kills, stopWatchingKills, err := p.watchOOMKills(ctx)
	if err != nil {
		return err
	}
	defer stopWatchingKills()
	found, stopWatchingTargets, err := p.watchFoundTargets(ctx)
	if err != nil {
		return err
	}
	defer stopWatchingTargets()
	// The first cycle at once, then one an interval (with jitter) after each; OOM kills in
	// between as they come.
	timer := time.NewTimer(0)
	defer timer.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case k := <-kills:
			p.recordKill(ctx, producer, k)
		case key := <-found:
			p.readTarget(ctx, producer, key)
		case <-timer.C:
			p.cycle(ctx, producer)
			timer.Reset(wait.Jitter(p.Interval, sources.PeriodicJitter))
		}
	}
	if !sources.PlannedStop(ctx) {
		return nil
	}
	start := time.Now()
	written, left := p.flushCheckpoints(ctx)
	if written+left > 0 {
		logf.FromContext(ctx).Info("Wrote checkpoints on stop", "source", string(producer.Source()), "written", written, "left", left,
			"durationMs", time.Since(start).Milliseconds())
	}
	return nil
}

// observation is what one cycle read of one target.
type observation struct {
	// histories are the histories of its recommended containers.
	histories map[string]*ContainerHistory
	// containers is how many containers its Pods have that get a recommendation.
	containers int
	// err is why its usage could not be read, with reason the RecommendationProvided reason.
	err    error
	reason string
	// skip says there is nothing to report this cycle, not even a failure: the history could
	// not be read back from its checkpoints.
	skip bool
}

// cycle reads usage once for every target and sends what changed. A failed list of
// VerticalScalers is logged and retried on the next cycle.
func (p *UsageProducer) cycle(ctx context.Context, producer *sources.Producer) {
	log := logf.FromContext(ctx).WithValues("source", string(producer.Source()))
	if p.histories == nil {
		p.histories = map[historyKey]*targetHistory{}
		p.written = map[types.NamespacedName]checkpointMark{}
	}
	var list v1alpha1.VerticalScalerList
	if err := p.Cache.List(ctx, &list); err != nil {
		log.Error(err, "Listing VerticalScalers failed")
		return
	}
	byTarget := map[historyKey][]*v1alpha1.VerticalScaler{}
	named := map[historyKey]bool{}
	for i := range list.Items {
		vs := &list.Items[i]
		if RecommendedElsewhere(&vs.Spec, p.RecommenderName) != "" {
			continue
		}
		named[historyKey{Namespace: vs.Namespace, Target: vs.Spec.Target().Key(), Config: historyConfigKey(&vs.Spec)}] = true
		if key, ok := targetOf(vs); ok {
			byTarget[key] = append(byTarget[key], vs)
			continue
		}
		if !targetLookedFor(vs) {
			// Its status was written before this spec, or cleared: the controller looks for the
			// target again, and records its Pods' selector for the next cycle, which reports
			// afresh. What was reported before is older than that and is not written back.
			key := client.ObjectKeyFromObject(vs)
			p.Reports.Forget(key)
			send(ctx, producer, key)
		}
	}
	// stop is the failure that ends the cycle's reads: every other read would wait or fail
	// alike.
	var stop *observation
	var restores failures
	for key, scalers := range byTarget {
		obs := stop
		if obs == nil {
			obs = p.observe(ctx, key, scalers, &restores)
			if obs.reason == v1alpha1.ReasonMetricsTimeout || obs.reason == v1alpha1.ReasonMetricsAPIMissing {
				stop = &observation{err: obs.err, reason: obs.reason}
			}
		}
		if obs.skip {
			continue
		}
		for _, vs := range scalers {
			r := report(vs, *obs)
			if r == nil {
				continue
			}
			key := types.NamespacedName{Namespace: vs.Namespace, Name: vs.Name}
			p.Reports.Store(key, *r)
			send(ctx, producer, key)
		}
	}
	// Forget the targets nobody names any more. One that is named but not read this cycle (not
	// found, or its status cleared) keeps its history: the workload may come back.
	for key := range p.histories {
		if !named[key] {
			delete(p.histories, key)
		}
	}
	restores.log(ctx, "Reading checkpoints failed; their targets' usage waits for the next cycle")
	p.writeCheckpoints(ctx, list.Items)
}

// send asks the controllers that consume the source to reconcile the VerticalScaler key. Only
// the key travels: the news is in Reports. A full buffer drops the event and counts it; the next
// cycle sends it again because the status still differs.
func send(ctx context.Context, producer *sources.Producer, key types.NamespacedName) {
	news := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	for _, controller := range producer.Consumers() {
		if err := producer.Send(controller, news); err != nil && !errors.Is(err, sources.ErrBufferFull) {
			logf.FromContext(ctx).Error(err, "Sending usage report failed", "source", string(producer.Source()), "controller", controller)
		}
	}
}

// targetLookedFor says whether the controller looked for the target of vs's spec as it is: its
// TargetFound condition is of the current generation, found or not.
func targetLookedFor(vs *v1alpha1.VerticalScaler) bool {
	c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionTargetFound)
	return c != nil && c.ObservedGeneration == vs.Generation
}

// targetOf returns the history a VerticalScaler's samples go to: that of the target its spec
// names, once the controller found it and recorded its Pod selector in the status.
func targetOf(vs *v1alpha1.VerticalScaler) (historyKey, bool) {
	target := vs.Spec.Target().Key()
	if vs.Status.Target != target || vs.Status.TargetSelector == nil {
		return historyKey{}, false
	}
	return historyKey{Namespace: vs.Namespace, Target: target, Config: historyConfigKey(&vs.Spec)}, true
}

// observe reads the Pods of one target and their usage into its history. One whose usage cannot
// be read keeps its history. A target without a history in memory (after a restart or a leader
// change) first gets it back from the checkpoints of the VerticalScalers that name it; when they
// cannot be read, its usage waits for the next cycle (counted in restores), so that a history
// started over does not replace a longer one at the next checkpoint.
func (p *UsageProducer) observe(ctx context.Context, key historyKey, scalers []*v1alpha1.VerticalScaler, restores *failures) *observation {
	selector, err := metav1.LabelSelectorAsSelector(scalers[0].Status.TargetSelector)
	if err != nil {
		return failed(fmt.Errorf("the Pod selector of %s: %w", key.Target, err))
	}
	pods, usage, err := p.read(ctx, key.Namespace, selector)
	if err != nil {
		return failed(err)
	}
	h := p.histories[key]
	if h == nil {
		if h, err = p.restore(ctx, key, scalers); err != nil {
			restores.add(err)
			return &observation{skip: true}
		}
		h.configure(&scalers[0].Spec)
		p.histories[key] = h
	}
	h.selector = selector
	h.perPod = h.add(usage, pods, p.now())
	return &observation{histories: h.containers, containers: h.perPod}
}

// readTimeout bounds each read of one target, and each read or write of a checkpoint.
func (p *UsageProducer) readTimeout() time.Duration {
	if p.ReadTimeout <= 0 {
		return DefaultReadTimeout
	}
	return p.ReadTimeout
}

func (p *UsageProducer) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// read lists the Pods that match selector and reads their usage, within ReadTimeout.
func (p *UsageProducer) read(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, []PodUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, p.readTimeout())
	defer cancel()
	var pods corev1.PodList
	if err := p.Pods.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, nil, fmt.Errorf("listing Pods: %w", err)
	}
	if r, ok := p.Usage.(PodsUsageReader); ok {
		usage, err := r.UsageOfPods(namespace, pods.Items)
		return pods.Items, usage, err
	}
	usage, err := p.Usage.PodUsage(ctx, namespace, selector)
	return pods.Items, usage, err
}

// failed is the observation of a failed read, with the reason that names the failure.
func failed(err error) *observation {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err):
		return &observation{reason: v1alpha1.ReasonMetricsTimeout, err: fmt.Errorf("reading usage took too long: %w", err)}
	case meta.IsNoMatchError(err):
		return &observation{reason: v1alpha1.ReasonMetricsAPIMissing,
			err: fmt.Errorf("the cluster does not serve metrics.k8s.io (is metrics-server installed?): %w", err)}
	}
	return &observation{reason: v1alpha1.ReasonMetricsUnavailable, err: err}
}

// requestsOf returns the requests a container runs with: its requests, and for a resource
// with a limit but no request, the limit, as Kubernetes defaults a Pod's request.
func requestsOf(r corev1.ResourceRequirements) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range r.Limits {
		out[name] = q
	}
	for name, q := range r.Requests {
		out[name] = q
	}
	return out
}

// runningRequests returns, per recommended container of pod (RecommendedContainers), the
// requests it runs with: those the kubelet reports in the container's status (which an in-place
// resize changes), else those of the Pod's spec.
func runningRequests(pod *corev1.Pod) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	for _, c := range RecommendedContainers(&pod.Spec) {
		out[c.Name] = requestsOf(c.Resources)
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range statuses {
			if _, ok := out[s.Name]; ok && s.Resources != nil && len(s.Resources.Requests) > 0 {
				out[s.Name] = requestsOf(*s.Resources)
			}
		}
	}
	return out
}

// add adds the new samples and OOM kills of the Pods' recommended containers, each CPU sample
// weighed by the requests its container runs with, forgets the Pods that are gone, and the
// containers no Pod has any more or without a sample for the whole window. Any change bumps the
// history's version. It returns how many containers of a Pod get a recommendation: the most any
// listed Pod has, else as many as the history holds (no Pod runs: a CronJob between its Jobs, a
// workload scaled to zero keep their history).
func (h *targetHistory) add(usage []PodUsage, pods []corev1.Pod, now time.Time) int {
	requests := make(map[string]map[string]corev1.ResourceList, len(pods))
	recommended := map[string]bool{}
	perPod := 0
	for i := range pods {
		r := runningRequests(&pods[i])
		requests[pods[i].Name] = r
		perPod = max(perPod, len(r))
		for name := range r {
			recommended[name] = true
		}
	}
	changed := false
	for _, pod := range usage {
		for name, u := range pod.Containers {
			if r, ok := requests[pod.Pod][name]; ok && h.history(name).AddSample(pod.Pod, u, r, pod.Timestamp) {
				changed = true
			}
		}
	}
	// OOM kills come after the samples of the same read, as in the VPA's feeder.
	for i := range pods {
		pod := &pods[i]
		for _, kill := range oomKills(pod) {
			if recommended[kill.container] && h.history(kill.container).RecordOOM(pod.Name, kill.finishedAt, kill.requestBytes) {
				oomKillsTotal.WithLabelValues("read").Inc()
				changed = true
			}
		}
	}
	for name, c := range h.containers {
		if (len(pods) > 0 && !recommended[name]) || c.Expired(now) {
			delete(h.containers, name)
			changed = true
			continue
		}
		if c.RetainPods(func(pod string) bool { _, ok := requests[pod]; return ok }) {
			changed = true
		}
	}
	if changed {
		h.version++
	}
	if perPod == 0 {
		perPod = len(h.containers)
	}
	return perPod
}

// history returns the history of container name, new when there is none yet.
func (h *targetHistory) history(name string) *ContainerHistory {
	c := h.containers[name]
	if c == nil {
		c = NewContainerHistoryWith(h.configOf(name))
		h.containers[name] = c
	}
	return c
}

// configOf returns the history configuration of container name: the default without a spec.
func (h *targetHistory) configOf(name string) *HistoryConfig {
	if h.spec == nil {
		return &DefaultHistoryConfig
	}
	if c, ok := h.configs[name]; ok {
		return c
	}
	c := HistoryConfigFor(ContainerPolicyFor(h.spec, name))
	if h.configs == nil {
		h.configs = map[string]*HistoryConfig{}
	}
	h.configs[name] = &c
	return &c
}

// configure makes h's containers keep their history as spec's container policies say. A spec
// that asks for the defaults is not kept: most histories cost no memory for it.
func (h *targetHistory) configure(spec *v1alpha1.VerticalScalerSpec) {
	h.spec, h.configs = nil, nil
	if historyConfigKey(spec) != "" {
		h.spec = &v1alpha1.VerticalScalerSpec{ContainerPolicies: spec.DeepCopy().ContainerPolicies}
	}
	for name, c := range h.containers {
		c.Configure(h.configOf(name))
	}
}

// oomKill is one container termination for lack of memory.
type oomKill struct {
	container    string
	finishedAt   time.Time
	requestBytes float64
}

// oomKills returns the OOM kills a Pod's container statuses show, oldest first (a kill is
// recorded only if newer than the last one of its container): the current state of a container
// that has not restarted yet, and the last state of one that has. The request is the
// one the container ran with, as the VPA takes it: from its status when the kubelet reports it
// (in-place resize), else from the Pod's spec.
func oomKills(pod *corev1.Pod) []oomKill {
	specs := map[string]corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		specs[c.Name] = c.Resources.Requests
	}
	for _, c := range pod.Spec.Containers {
		specs[c.Name] = c.Resources.Requests
	}
	var out []oomKill
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range statuses {
			requests := specs[s.Name]
			if s.Resources != nil && s.Resources.Requests != nil {
				requests = s.Resources.Requests
			}
			request := requests[corev1.ResourceMemory]
			for _, t := range []*corev1.ContainerStateTerminated{s.LastTerminationState.Terminated, s.State.Terminated} {
				if t != nil && t.Reason == "OOMKilled" && !t.FinishedAt.IsZero() {
					out = append(out, oomKill{container: s.Name, finishedAt: t.FinishedAt.Time, requestBytes: request.AsApproximateFloat64()})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b oomKill) int { return a.finishedAt.Compare(b.finishedAt) })
	return out
}

// RecommendedContainers returns the containers of a Pod template that get a recommendation: its
// containers, then its native sidecars (init containers with restartPolicy Always), which run
// as long as the Pod like the containers do. The VPA recommender v1.8.1 skips every init
// container; native sidecar support is its AEP 8905. Plain init containers get none: they run
// to completion before the others start, so their requests decide the Pod's only when they
// exceed the containers' sum, and their usage is too short-lived to sample.
func RecommendedContainers(spec *corev1.PodSpec) []corev1.Container {
	out := make([]corev1.Container, 0, len(spec.Containers))
	out = append(out, spec.Containers...)
	for _, c := range spec.InitContainers {
		if IsNativeSidecar(c) {
			out = append(out, c)
		}
	}
	return out
}

// IsNativeSidecar says whether an init container is a native sidecar: restartPolicy Always.
func IsNativeSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// recommendedMessage is the message of RecommendationProvided=True; it does not change from one
// report to the next, so that a report changes the status only through the recommendation.
const recommendedMessage = "Recommended from the usage of the target's Pods"

// MetricsFailure says whether reason is one of the reasons of RecommendationProvided=False that
// mean usage could not be read: then the last recommendation is kept.
func MetricsFailure(reason string) bool {
	switch reason {
	case v1alpha1.ReasonMetricsUnavailable, v1alpha1.ReasonMetricsAPIMissing, v1alpha1.ReasonMetricsTimeout:
		return true
	}
	return false
}

// report returns the news for vs, or nil when its status already says it: the estimates its
// policy draws have not moved from status.recommendation, and no new OOM kill came, or usage
// cannot be read and the status already gives that reason. With no estimate yet (no
// samples) there is nothing to say.
func report(vs *v1alpha1.VerticalScaler, obs observation) *Report {
	provided := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided)
	if obs.err != nil {
		if provided != nil && provided.Status == metav1.ConditionFalse && provided.Reason == obs.reason {
			return nil
		}
		return &Report{Target: vs.Spec.Target().Key(), Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided,
			Status: metav1.ConditionFalse, Reason: obs.reason, Message: obs.err.Error()}}
	}
	policy := PolicyFor(vs.Spec.RecommenderPolicy)
	estimates := map[string]Estimate{}
	for name, h := range obs.histories {
		if !Recommends(&vs.Spec, name) {
			continue
		}
		if e, ok := h.Estimate(policy, obs.containers); ok {
			estimates[name] = e
		}
	}
	if len(estimates) == 0 {
		return nil
	}
	rec := recommendation(&vs.Spec, policy, estimates)
	if provided != nil && provided.Reason == v1alpha1.ReasonRecommended && !moved(vs, rec) {
		return nil
	}
	return &Report{Target: rec.Target, Recommendation: rec, Provided: metav1.Condition{
		Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRecommended,
		Message: recommendedMessage}}
}

// recommendation is the uncapped recommendation of the estimates of spec's target, by container
// name, with what they rest on. Times are whole seconds, as the API server keeps them, so that
// status compares equal once written.
func recommendation(spec *v1alpha1.VerticalScalerSpec, policy Policy, estimates map[string]Estimate) *v1alpha1.Recommendation {
	names := make([]string, 0, len(estimates))
	for name := range estimates {
		names = append(names, name)
	}
	sort.Strings(names)
	rec := &v1alpha1.Recommendation{Target: spec.Target().Key(), Policy: policy.Status()}
	if spec.TargetRef == nil {
		// Read by a release before targets, should the manager be rolled back.
		rec.DeploymentName = spec.DeploymentName
	}
	for _, name := range names {
		e := estimates[name]
		rec.ContainerRecommendations = append(rec.ContainerRecommendations, v1alpha1.ContainerRecommendation{
			ContainerName: name, Target: e.Target, LowerBound: e.LowerBound, UpperBound: e.UpperBound,
			UncappedTarget: e.Target, Samples: int64(e.Samples), FirstSampleTime: apiTime(e.FirstSample),
			LastSampleTime: apiTime(e.LastSample), LastOOMKillTime: apiTime(e.LastOOMKill),
		})
	}
	return rec
}

// apiTime is t in whole seconds; nil for the zero time.
func apiTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	at := metav1.NewTime(t).Rfc3339Copy()
	return &at
}

// moved says whether rec is news for vs's status: the status has no recommendation for this
// target, or one drawn with another policy; or a container has none there yet, or its target or
// either bound differs from the status's at all (the bounds compared as the controller bounds
// them, by the container's policy), or it had an OOM kill the status does not show. Targets are
// rounded to a millicore and a mebibyte, so a steady history stops being news once its
// percentiles settle, while a changing one is news on every read, as the Vertical Pod
// Autoscaler's recommender refreshes its status on every loop.
func moved(vs *v1alpha1.VerticalScaler, rec *v1alpha1.Recommendation) bool {
	status := vs.Status.Recommendation
	if status == nil || v1alpha1.RecommendationTarget(status) != rec.Target || !equalPolicy(status.Policy, rec.Policy) {
		return true
	}
	last := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range status.ContainerRecommendations {
		last[c.ContainerName] = c
	}
	for _, next := range rec.ContainerRecommendations {
		c, ok := last[next.ContainerName]
		if !ok || Moved(c.UncappedTarget, next.Target, 0) {
			return true
		}
		if next.LastOOMKillTime != nil && (c.LastOOMKillTime == nil || !c.LastOOMKillTime.Equal(next.LastOOMKillTime)) {
			return true
		}
		bounds := ContainerPolicyFor(&vs.Spec, next.ContainerName)
		if Moved(c.LowerBound, Clamp(next.LowerBound, bounds.MinAllowed, bounds.MaxAllowed), 0) ||
			Moved(c.UpperBound, Clamp(next.UpperBound, bounds.MinAllowed, bounds.MaxAllowed), 0) {
			return true
		}
	}
	return false
}

func equalPolicy(a, b *v1alpha1.RecommenderPolicy) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y *int32) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return eq(a.TargetPercentile, b.TargetPercentile) && eq(a.LowerBoundPercentile, b.LowerBoundPercentile) &&
		eq(a.UpperBoundPercentile, b.UpperBoundPercentile) && eq(a.SafetyMarginPercent, b.SafetyMarginPercent)
}
