package recommender

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
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
)

// DefaultCheckpointInterval is the default least time between two checkpoints of one
// VerticalScaler: a restarted manager loses at most this much of a history that decays over
// days, and each VerticalScaler costs one write per interval at most.
const DefaultCheckpointInterval = 10 * time.Minute

// minCheckpointWritesPerCycle is the least number of checkpoints a cycle may write, whatever
// the number of VerticalScalers (the VPA's --min-checkpoints default): a small cluster catches up
// within a cycle or two.
const minCheckpointWritesPerCycle = 10

// checkpointWriteBudget is how many checkpoints one cycle may write: twice the share of the
// VerticalScalers that falls to one cycle when each is written once per checkpoint interval
// (scalers × usage interval / checkpoint interval), at least minCheckpointWritesPerCycle. The
// share alone keeps every VerticalScaler within its interval once the writes are spread out;
// twice as much drains a backlog, every VerticalScaler due at once (the first cycles of a new
// manager, or of 10,000 new VerticalScalers), in half a checkpoint interval, while no cycle
// writes more than a fifth of the VerticalScalers at the defaults, so the writes stay spread
// over the interval instead of coming in one burst every ten minutes.
func checkpointWriteBudget(scalers int, usageInterval, checkpointInterval time.Duration) int {
	share := float64(scalers) * usageInterval.Seconds() / checkpointInterval.Seconds()
	return max(minCheckpointWritesPerCycle, int(math.Ceil(2*share)))
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
	var newest *targetHistory
	var newestAt time.Time
	if p.checkpointsOn() {
		for _, vs := range scalers {
			h, at, err := p.readCheckpoint(ctx, vs)
			if err != nil {
				return nil, err
			}
			if h != nil && (newest == nil || at.After(newestAt)) {
				newest, newestAt = h, at
			}
		}
	}
	if newest == nil {
		return &targetHistory{containers: map[string]*ContainerHistory{}}, nil
	}
	logf.FromContext(ctx).V(1).Info("Read usage history back from checkpoint", "target", key.Target,
		"namespace", key.Namespace, "written", newestAt)
	return newest, nil
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

// writeCheckpoints writes the checkpoints that are due (checkpointMark.due) of the
// VerticalScalers whose target has a history, the oldest first (never written before
// anything else), at most checkpointWriteBudget of them. A write that fails is tried again on a
// later cycle; the cycle logs one line for its failures.
func (p *UsageProducer) writeCheckpoints(ctx context.Context, scalers []v1alpha1.VerticalScaler) {
	if !p.checkpointsOn() {
		return
	}
	now := p.now()
	type candidate struct {
		vs   *v1alpha1.VerticalScaler
		h    *targetHistory
		last time.Time
	}
	var due []candidate
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
		if mark.due(ok, now, p.CheckpointInterval, target.Target, h.version) {
			due = append(due, candidate{vs: vs, h: h, last: mark.at})
		}
	}
	// Forget the VerticalScalers that are gone; the garbage collector deletes their checkpoints.
	for key := range p.written {
		if !listed[key] {
			delete(p.written, key)
		}
	}
	slices.SortFunc(due, func(a, b candidate) int {
		return cmp.Or(a.last.Compare(b.last), cmp.Compare(a.vs.Namespace, b.vs.Namespace), cmp.Compare(a.vs.Name, b.vs.Name))
	})
	due = due[:min(len(due), checkpointWriteBudget(len(scalers), p.Interval, p.CheckpointInterval))]
	var failed failures
	for _, c := range due {
		if ctx.Err() != nil {
			break
		}
		if err := p.writeCheckpoint(ctx, c.vs, c.h, now); err != nil {
			failed.add(err)
			continue
		}
		p.written[client.ObjectKeyFromObject(c.vs)] = checkpointMark{at: now, target: c.vs.Spec.Target().Key(), version: c.h.version}
	}
	failed.log(ctx, "Writing checkpoints failed; they are tried again on a later cycle")
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
