package recommender

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
)

// DefaultCheckpointInterval is the default least time between two checkpoints of one
// VerticalScaler: what the Vertical Pod Autoscaler's recommender loses on a crash, as it writes
// its checkpoints on every one-minute loop. A planned stop loses nothing (flushCheckpoints).
const DefaultCheckpointInterval = time.Minute

// DefaultCheckpointWritesPerSecond bounds the checkpoint writes of the cycles, on average: up
// to it every VerticalScaler is written once per interval, past it (more than 900
// VerticalScalers at one-minute cycles) each less often, so that the API server's cost stays
// bounded however many there are: about a tenth of a core (docs/performance.md has the figures
// it was chosen from).
const DefaultCheckpointWritesPerSecond = 15

// DefaultCheckpointFlushTimeout bounds the writes of a planned stop: within the shipped
// Deployment's termination grace period (10 s), with room for the rest of the shutdown.
const DefaultCheckpointFlushTimeout = 5 * time.Second

// minCheckpointWritesPerCycle is the least number of checkpoints a cycle may write, whatever
// the number of VerticalScalers (the VPA's --min-checkpoints default): a small cluster catches up
// within a cycle or two.
const minCheckpointWritesPerCycle = 10

// flushWorkers is how many checkpoints a planned stop writes at once: enough to use the round
// trips' idle time, few enough not to flood the API server's priority level.
const flushWorkers = 8

// checkpointWriteBudget is how many checkpoints one cycle may write: twice the share of the
// VerticalScalers that falls to one cycle when each is written once per checkpoint interval
// (scalers × usage interval / checkpoint interval), at least minCheckpointWritesPerCycle, and at
// most writesPerSecond × usage interval. The share alone keeps every VerticalScaler within its
// interval once the writes are spread out; twice as much drains a backlog (every VerticalScaler
// due at once, after a restart without checkpoints) in half an interval; the rate bounds what
// the writes cost the API server in a large cluster, where each VerticalScaler is then written
// every scalers / (writesPerSecond × 60) minutes at one-minute cycles.
func checkpointWriteBudget(scalers int, usageInterval, checkpointInterval time.Duration, writesPerSecond float64) int {
	share := float64(scalers) * usageInterval.Seconds() / checkpointInterval.Seconds()
	budget := max(minCheckpointWritesPerCycle, int(math.Ceil(2*share)))
	if writesPerSecond > 0 {
		budget = min(budget, max(minCheckpointWritesPerCycle, int(writesPerSecond*usageInterval.Seconds())))
	}
	return budget
}

// checkpointMark is what the poller remembers of a VerticalScaler's last checkpoint.
type checkpointMark struct {
	// at is when it was written.
	at time.Time
	// target is the key of the workload whose history it holds, and version that history's
	// version then.
	target  string
	version uint64
}

// due says whether a VerticalScaler whose last checkpoint is mark (ok false: none this manager
// knows of) is due for another, of the history of target at version: not within interval of the
// last one, and only when the history changed since.
func (m checkpointMark) due(ok bool, now time.Time, interval time.Duration, target string, version uint64) bool {
	if !ok {
		return true
	}
	if now.Sub(m.at) < interval {
		return false
	}
	return m.target != target || m.version != version
}

// failures counts the failures of one kind in a cycle, so that a cycle logs one line for them
// however many VerticalScalers failed alike (a missing permission fails them all).
type failures struct {
	n     int
	first error
}

func (f *failures) add(err error) {
	if f.n == 0 {
		f.first = err
	}
	f.n++
}

func (f *failures) log(ctx context.Context, msg string) {
	if f.n > 0 {
		logf.FromContext(ctx).Error(f.first, msg, "failures", f.n)
	}
}

// checkpointsOn says whether checkpoints are read and written.
func (p *UsageProducer) checkpointsOn() bool {
	return p.CheckpointInterval > 0 && p.CheckpointReader != nil && p.CheckpointWriter != nil
}

// restore returns the history of the target key as the newest checkpoint of the
// VerticalScalers that name it holds, or an empty one when none has a checkpoint of it. A
// checkpoint of another workload (the one a VerticalScaler named before) or of another
// VerticalScaler of the same name (deleted and created again before the garbage collector
// deleted its checkpoint) is not this history. One that cannot be decoded is reported in a
// Warning Event and left for the next write to replace. It also remembers when each
// VerticalScaler's checkpoint was written, so that the next write waits the interval after it.
// It fails only when a checkpoint cannot be read.
func (p *UsageProducer) restore(ctx context.Context, key historyKey, scalers []*v1alpha1.VerticalScaler) (*targetHistory, error) {
	if !p.checkpointsOn() {
		return &targetHistory{containers: map[string]*ContainerHistory{}}, nil
	}
	newest, newestAt, err := newestHistory(ctx, scalers, p.readCheckpoint)
	if err == nil && newest == nil {
		// A VerticalScaler made from a VerticalPodAutoscaler starts where the VPA's
		// recommender left that VerticalPodAutoscaler's history.
		newest, newestAt, err = newestHistory(ctx, scalers, p.readVPACheckpoints)
	}
	if err != nil {
		return nil, err
	}
	if newest == nil {
		return &targetHistory{containers: map[string]*ContainerHistory{}}, nil
	}
	logf.FromContext(ctx).V(1).Info("Read usage history back from checkpoint", "target", key.Target,
		"namespace", key.Namespace, "written", newestAt)
	return newest, nil
}

// newestHistory returns, of the histories read reads for each of scalers, the one written last
// and when; nil when none has one.
func newestHistory(ctx context.Context, scalers []*v1alpha1.VerticalScaler,
	read func(context.Context, *v1alpha1.VerticalScaler) (*targetHistory, time.Time, error)) (*targetHistory, time.Time, error) {
	var newest *targetHistory
	var newestAt time.Time
	for _, vs := range scalers {
		h, at, err := read(ctx, vs)
		if err != nil {
			return nil, time.Time{}, err
		}
		if h != nil && (newest == nil || at.After(newestAt)) {
			newest, newestAt = h, at
		}
	}
	return newest, newestAt, nil
}

// readCheckpoint reads vs's checkpoint and returns the history it holds of vs's target and
// when it was written; a nil history when there is none to read back.
func (p *UsageProducer) readCheckpoint(ctx context.Context, vs *v1alpha1.VerticalScaler) (*targetHistory, time.Time, error) {
	vsKey := client.ObjectKeyFromObject(vs)
	var cp v1alpha1.VerticalScalerCheckpoint
	readCtx, cancel := context.WithTimeout(ctx, p.readTimeout())
	defer cancel()
	if err := p.CheckpointReader.Get(readCtx, vsKey, &cp); err != nil {
		// Without the CRD there is nothing to read back; the writes say what is missing.
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, time.Time{}, nil
		}
		return nil, time.Time{}, fmt.Errorf("reading the checkpoint of VerticalScaler %s: %w", vsKey, err)
	}
	if owner := metav1.GetControllerOf(&cp); owner == nil || owner.UID != vs.UID {
		return nil, time.Time{}, nil
	}
	// Written by a manager before this one: the next write waits the interval after it.
	at := cp.Status.WriteTime.Time
	p.written[vsKey] = checkpointMark{at: at, target: v1alpha1.CheckpointTarget(&cp.Spec)}
	if v1alpha1.CheckpointTarget(&cp.Spec) != vs.Spec.Target().Key() {
		return nil, time.Time{}, nil
	}
	h, err := loadCheckpoint(&cp.Status)
	if err != nil {
		// Replace it at the first chance rather than wait for the interval.
		delete(p.written, vsKey)
		logf.FromContext(ctx).Error(err, "Reading checkpoint back failed; the usage history starts over", "VerticalScaler", vsKey)
		if p.Recorder != nil {
			p.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonCheckpointInvalid, "ReadCheckpoint",
				"The usage history in VerticalScalerCheckpoint %s cannot be read back, so it starts over, and the next checkpoint replaces it: %v", vs.Name, err)
		}
		return nil, time.Time{}, nil
	}
	return h, at, nil
}

// +kubebuilder:rbac:groups=autoscaling.k8s.io,resources=verticalpodautoscalercheckpoints,verbs=list

// readVPACheckpoints reads the VerticalPodAutoscalerCheckpoints of the VerticalPodAutoscaler vs
// was made from (its controller owner), one per container, and returns the history they hold
// and when the newest was written; a nil history when vs was not made from one, or it has none
// (or the VPA's CRDs are not installed). A checkpoint that cannot be read back is reported in a
// Warning Event, and that container's history starts over. It fails only when the checkpoints
// cannot be listed.
func (p *UsageProducer) readVPACheckpoints(ctx context.Context, vs *v1alpha1.VerticalScaler) (*targetHistory, time.Time, error) {
	owner := metav1.GetControllerOf(vs)
	if owner == nil || owner.Kind != vpav1.Kind || owner.APIVersion != vpav1.GroupVersion.String() {
		return nil, time.Time{}, nil
	}
	var checkpoints []unstructured.Unstructured
	readCtx, cancel := context.WithTimeout(ctx, p.readTimeout())
	defer cancel()
	if err := EachVPACheckpointPage(readCtx, p.CheckpointReader, vs.Namespace, func(page []unstructured.Unstructured) bool {
		checkpoints = append(checkpoints, page...)
		return false
	}); err != nil {
		return nil, time.Time{}, err
	}
	h := &targetHistory{containers: map[string]*ContainerHistory{}}
	var newest time.Time
	for i := range checkpoints {
		var cp struct {
			Spec   vpav1.CheckpointSpec   `json:"spec"`
			Status vpav1.CheckpointStatus `json:"status"`
		}
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(checkpoints[i].Object, &cp)
		if err == nil && cp.Spec.VPAObjectName != owner.Name {
			continue
		}
		if err == nil && cp.Spec.ContainerName == "" {
			err = errors.New("spec.containerName is empty")
		}
		var c *ContainerHistory
		if err == nil {
			var converted v1alpha1.ContainerCheckpoint
			if converted, err = FromVPACheckpoint(cp.Spec.ContainerName, &cp.Status); err == nil {
				c, err = LoadContainerCheckpoint(converted)
			}
		}
		if err != nil {
			logf.FromContext(ctx).Error(err, "Reading a VPA checkpoint failed; that container's usage history starts over",
				"VerticalPodAutoscalerCheckpoint", client.ObjectKeyFromObject(&checkpoints[i]))
			if p.Recorder != nil {
				p.Recorder.Eventf(vs, nil, corev1.EventTypeWarning, v1alpha1.ReasonCheckpointInvalid, "ReadCheckpoint",
					"The usage history in VerticalPodAutoscalerCheckpoint %s cannot be read, so that container's history starts over: %v", checkpoints[i].GetName(), err)
			}
			continue
		}
		h.containers[cp.Spec.ContainerName] = c
		if at := cp.Status.LastUpdateTime; at != nil && at.After(newest) {
			newest = at.Time
		}
	}
	if len(h.containers) == 0 {
		return nil, time.Time{}, nil
	}
	logf.FromContext(ctx).Info("Read usage history from the VerticalPodAutoscaler's checkpoints", "VerticalScaler", client.ObjectKeyFromObject(vs),
		"containers", len(h.containers), "written", newest)
	return h, newest, nil
}

// vpaCheckpointPage is how many VerticalPodAutoscalerCheckpoints one request lists.
const vpaCheckpointPage = 500

// EachVPACheckpointPage lists the VerticalPodAutoscalerCheckpoints of namespace ("" for every
// namespace) through reader, in pages, and calls page with each until it returns true. Where
// the API server serves no VPA CRDs there are none: page is not called, and the error is nil.
func EachVPACheckpointPage(ctx context.Context, reader client.Reader, namespace string, page func([]unstructured.Unstructured) (done bool)) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(vpav1.GroupVersion.WithKind(vpav1.CheckpointKind + "List"))
	for more := true; more; more = list.GetContinue() != "" {
		if err := reader.List(ctx, list, client.InNamespace(namespace), client.Limit(vpaCheckpointPage), client.Continue(list.GetContinue())); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("listing the VerticalPodAutoscalerCheckpoints of %s: %w", cmp.Or(namespace, "every namespace"), err)
		}
		if page(list.Items) {
			return nil
		}
	}
	return nil
}

// checkpointCandidate is a VerticalScaler whose checkpoint is due, its target's history, and
// when its last checkpoint was written (zero: never).
type checkpointCandidate struct {
	vs   *v1alpha1.VerticalScaler
	h    *targetHistory
	last time.Time
}

// dueCheckpoints returns the VerticalScalers of scalers whose checkpoint is due
// (checkpointMark.due) at now with interval between two, the oldest first (never written before
// anything else). It forgets the marks of the VerticalScalers that are gone: the garbage
// collector deletes their checkpoints.
func (p *UsageProducer) dueCheckpoints(scalers []v1alpha1.VerticalScaler, now time.Time, interval time.Duration) []checkpointCandidate {
	var due []checkpointCandidate
	listed := make(map[types.NamespacedName]bool, len(scalers))
	for i := range scalers {
		vs := &scalers[i]
		key := client.ObjectKeyFromObject(vs)
		listed[key] = true
		target, found := targetOf(vs)
		h := p.histories[target]
		if !found || h == nil || len(h.containers) == 0 {
			continue
		}
		mark, ok := p.written[key]
		if mark.due(ok, now, interval, target.Target, h.version) {
			due = append(due, checkpointCandidate{vs: vs, h: h, last: mark.at})
		}
	}
	for key := range p.written {
		if !listed[key] {
			delete(p.written, key)
		}
	}
	slices.SortFunc(due, func(a, b checkpointCandidate) int {
		return cmp.Or(a.last.Compare(b.last), cmp.Compare(a.vs.Namespace, b.vs.Namespace), cmp.Compare(a.vs.Name, b.vs.Name))
	})
	return due
}

// writeCheckpoints writes the checkpoints that are due of the VerticalScalers whose target has
// a history, the oldest first, at most checkpointWriteBudget of them. A write that fails is
// tried again on a later cycle; the cycle logs one line for its failures.
func (p *UsageProducer) writeCheckpoints(ctx context.Context, scalers []v1alpha1.VerticalScaler) {
	if !p.checkpointsOn() {
		return
	}
	now := p.now()
	due := p.dueCheckpoints(scalers, now, p.CheckpointInterval)
	due = due[:min(len(due), checkpointWriteBudget(len(scalers), p.Interval, p.CheckpointInterval, p.CheckpointWritesPerSecond))]
	var failed failures
	for _, c := range due {
		if ctx.Err() != nil {
			break
		}
		if err := p.writeCheckpoint(ctx, c.vs, c.h, now); err != nil {
			checkpointWritesTotal.WithLabelValues("cycle", "failed").Inc()
			failed.add(err)
			continue
		}
		checkpointWritesTotal.WithLabelValues("cycle", "written").Inc()
		p.written[client.ObjectKeyFromObject(c.vs)] = checkpointMark{at: now, target: c.vs.Spec.Target().Key(), version: c.h.version}
	}
	failed.log(ctx, "Writing checkpoints failed; they are tried again on a later cycle")
}

// flushCheckpoints writes, on a planned stop, the checkpoint of every VerticalScaler whose
// history changed since its last checkpoint, whatever the interval, the oldest first,
// flushWorkers at a time, for at most CheckpointFlushTimeout (ctx is the producer's, already
// done; the writes get a context of their own). The VerticalScalers come from the cache, which
// the manager stops after the producers. It returns how many it wrote and how many it left: a
// history left unwritten loses what it gathered since its last checkpoint, as after a crash.
func (p *UsageProducer) flushCheckpoints(ctx context.Context) (written, left int) {
	if !p.checkpointsOn() || len(p.histories) == 0 {
		return 0, 0
	}
	timeout := p.CheckpointFlushTimeout
	if timeout <= 0 {
		timeout = DefaultCheckpointFlushTimeout
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var list v1alpha1.VerticalScalerList
	if err := p.Cache.List(flushCtx, &list); err != nil {
		logf.FromContext(ctx).Error(err, "Listing VerticalScalers to write their checkpoints on stop failed")
		return 0, len(p.histories)
	}
	now := p.now()
	due := p.dueCheckpoints(list.Items, now, 0)
	next := make(chan checkpointCandidate)
	type result struct {
		key  types.NamespacedName
		mark checkpointMark
		err  error
	}
	results := make(chan result, len(due))
	var workers sync.WaitGroup
	for range min(flushWorkers, len(due)) {
		workers.Go(func() {
			for c := range next {
				err := p.writeCheckpoint(flushCtx, c.vs, c.h, now)
				results <- result{key: client.ObjectKeyFromObject(c.vs), err: err,
					mark: checkpointMark{at: now, target: c.vs.Spec.Target().Key(), version: c.h.version}}
			}
		})
	}
feed:
	for _, c := range due {
		select {
		case next <- c:
		case <-flushCtx.Done():
			break feed
		}
	}
	close(next)
	workers.Wait()
	close(results)
	var failed failures
	for r := range results {
		if r.err != nil {
			checkpointWritesTotal.WithLabelValues("stop", "failed").Inc()
			failed.add(r.err)
			continue
		}
		checkpointWritesTotal.WithLabelValues("stop", "written").Inc()
		p.written[r.key] = r.mark
		written++
	}
	failed.log(ctx, "Writing checkpoints on stop failed")
	return written, len(due) - written
}

// writeCheckpoint writes vs's checkpoint of history h at time now: the whole object, by
// server-side apply, which creates it the first time. The VerticalScaler is its controller
// owner, so that the garbage collector deletes it with the VerticalScaler; the reference does
// not block the owner's deletion, which would need the right to update the VerticalScaler's
// finalizers for nothing.
func (p *UsageProducer) writeCheckpoint(ctx context.Context, vs *v1alpha1.VerticalScaler, h *targetHistory, now time.Time) error {
	status, err := h.checkpoint(now)
	if err != nil {
		return fmt.Errorf("checkpoint of VerticalScaler %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	cp := &v1alpha1.VerticalScalerCheckpoint{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScalerCheckpoint"},
		ObjectMeta: metav1.ObjectMeta{Namespace: vs.Namespace, Name: vs.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScaler", Name: vs.Name, UID: vs.UID, Controller: new(true)}}},
		Spec:   checkpointSpec(&vs.Spec),
		Status: status,
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cp)
	if err != nil {
		return fmt.Errorf("encoding the checkpoint of VerticalScaler %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	// The zero creationTimestamp encodes as null, which is not a field anyone sets.
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	ctx, cancel := context.WithTimeout(ctx, p.readTimeout())
	defer cancel()
	if err := p.CheckpointWriter.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: obj}),
		client.FieldOwner(p.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the checkpoint of VerticalScaler %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	return nil
}

// checkpointSpec says whose history a checkpoint of spec's target holds.
func checkpointSpec(spec *v1alpha1.VerticalScalerSpec) v1alpha1.VerticalScalerCheckpointSpec {
	out := v1alpha1.VerticalScalerCheckpointSpec{Target: spec.Target().Key()}
	if spec.TargetRef == nil {
		// Read by a release before targets, should the manager be rolled back.
		out.DeploymentName = spec.DeploymentName
	}
	return out
}
