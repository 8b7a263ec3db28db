package recommender

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// The poller reads a VerticalScaler's checkpoint back once (get) and writes it with server-side
// apply, which creates it the first time (create, patch). The garbage collector deletes it with
// its VerticalScaler.
// +kubebuilder:rbac:groups=app.example.com,resources=verticalscalercheckpoints,verbs=get;create;patch

// CheckpointVersion is the version of the encoding of a VerticalScalerCheckpoint's status: a
// recommender reads back only its own. It changes with anything that makes an older checkpoint
// mean something else: the buckets, the scale of the weights, the meaning of a field.
const CheckpointVersion = "v1"

// MaxCheckpointWeight is the relative weight of the heaviest bucket of a checkpointed
// histogram; the others are whole numbers relative to it, as in the VPA's checkpoints. Rounding
// moves a bucket's weight by at most 1/20,000 of the heaviest one's, which moves a percentile by
// at most one bucket, and keeps each weight to five digits.
const MaxCheckpointWeight = 10000

// weightMicros is the unit of a checkpoint's total weight: a millionth.
const weightMicros = 1e6

// maxTotalMicros bounds a checkpoint's total weight so that it fits an int64 with room to spare.
// Weights are taken at a reference near the time of the checkpoint, where a fresh sample weighs
// its request in cores, so only a history of more than about a trillion fresh samples reaches it.
const maxTotalMicros = 1 << 62

// Checkpoint returns the histogram in compact form. Its weights are taken at the reference time
// moved forward to a whole number of half-lives near at (the time of the checkpoint), when that
// is later than the histogram's own: the move scales every weight alike, which changes no
// percentile, and keeps the total within an int64 however long the history runs. Buckets that
// the move leaves under Epsilon are left out, as the histogram itself drops them when it moves
// its reference.
func (h *Histogram) Checkpoint(at time.Time) (v1alpha1.HistogramCheckpoint, error) {
	reference, factor := h.reference, 1.0
	if next := at.Round(h.halfLife); !reference.IsZero() && next.After(reference) {
		factor = math.Ldexp(1, -int(math.Round(float64(next.Sub(reference))/float64(h.halfLife))))
		reference = next
	}
	total, heaviest := h.total*factor, 0.0
	first, last := -1, -1
	for i, b := range h.buckets {
		w := b.weight * factor
		if w < h.options.Epsilon {
			total -= w
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		heaviest = max(heaviest, w)
	}
	if first < 0 || total <= 0 {
		return v1alpha1.HistogramCheckpoint{}, nil
	}
	if total*weightMicros >= maxTotalMicros {
		return v1alpha1.HistogramCheckpoint{}, fmt.Errorf("total weight %g is too large to checkpoint", total)
	}
	start := int(h.buckets[first].bucket)
	weights := make([]int32, int(h.buckets[last].bucket)-start+1)
	for _, b := range h.buckets[first : last+1] {
		if w := b.weight * factor; w >= h.options.Epsilon {
			weights[int(b.bucket)-start] = int32(math.Round(w / heaviest * MaxCheckpointWeight))
		}
	}
	ref := metav1.NewTime(reference)
	return v1alpha1.HistogramCheckpoint{ReferenceTime: &ref, TotalWeightMicros: int64(math.Round(total * weightMicros)),
		FirstBucket: int32(start), Weights: weights}, nil
}

// LoadCheckpoint replaces the histogram's content with a checkpoint's, after checking that it
// fits the histogram's buckets: the total weight is spread over the buckets in proportion to
// their relative weights, as the VPA reads its checkpoints back.
func (h *Histogram) LoadCheckpoint(cp v1alpha1.HistogramCheckpoint) error {
	var sum int64
	for i, w := range cp.Weights {
		if w < 0 || w > MaxCheckpointWeight {
			return fmt.Errorf("bucket %d has weight %d, want 0 to %d", int(cp.FirstBucket)+i, w, MaxCheckpointWeight)
		}
		sum += int64(w)
	}
	switch {
	case cp.FirstBucket < 0 || int(cp.FirstBucket)+len(cp.Weights) > h.options.NumBuckets():
		return fmt.Errorf("buckets %d to %d, outside [0, %d)", cp.FirstBucket, int(cp.FirstBucket)+len(cp.Weights)-1, h.options.NumBuckets())
	case cp.TotalWeightMicros < 0:
		return fmt.Errorf("total weight %d", cp.TotalWeightMicros)
	case sum == 0 && cp.TotalWeightMicros > 0:
		return fmt.Errorf("total weight %d in no bucket", cp.TotalWeightMicros)
	case sum > 0 && cp.TotalWeightMicros == 0:
		return errors.New("buckets with weights but no total weight")
	case sum > 0 && cp.ReferenceTime == nil:
		return errors.New("weights without a reference time")
	case sum > 0 && !cp.ReferenceTime.Time.Equal(cp.ReferenceTime.Round(h.halfLife)):
		// The histogram moves its reference by whole half-lives: from anywhere else, the move
		// would scale old samples by a rounded factor.
		return fmt.Errorf("reference time %s is not a whole number of half-lives (%s)", cp.ReferenceTime.UTC().Format(time.RFC3339), h.halfLife)
	}
	if sum == 0 {
		h.reference, h.buckets, h.total = time.Time{}, nil, 0
		return nil
	}
	total := float64(cp.TotalWeightMicros) / weightMicros
	ratio := total / float64(sum)
	buckets := make([]bucketWeight, 0, len(cp.Weights))
	for i, w := range cp.Weights {
		if w > 0 {
			buckets = append(buckets, bucketWeight{bucket: uint16(int(cp.FirstBucket) + i), weight: float64(w) * ratio})
		}
	}
	h.reference, h.buckets, h.total = cp.ReferenceTime.Time, buckets, total
	return nil
}

// Checkpoint returns the history of the container name as a checkpoint at time at: the two
// histograms in compact form, what the bounds need besides (the span and the count of the CPU
// samples), and the state of each Pod's container (its last samples, the memory peak of its
// current day, its last OOM kill), so that a manager that reads it back neither counts twice
// what it has seen nor adds a second peak for the same day.
func (c *ContainerHistory) Checkpoint(name string, at time.Time) (v1alpha1.ContainerCheckpoint, error) {
	cpu, err := c.CPU.Checkpoint(at)
	if err != nil {
		return v1alpha1.ContainerCheckpoint{}, fmt.Errorf("container %s: cpu: %w", name, err)
	}
	memory, err := c.Memory.Checkpoint(at)
	if err != nil {
		return v1alpha1.ContainerCheckpoint{}, fmt.Errorf("container %s: memory: %w", name, err)
	}
	cp := v1alpha1.ContainerCheckpoint{Name: name, Samples: int64(c.Samples), FirstSampleTime: microTime(c.FirstSample),
		LastSampleTime: microTime(c.LastSample), LastOOMKillTime: metaTime(c.LastOOMKill), CPU: cpu, Memory: memory}
	for pod, p := range c.pods {
		cp.Pods = append(cp.Pods, v1alpha1.PodCheckpoint{Name: pod, LastCPUSampleTime: microTime(p.lastCPU),
			LastMemorySampleTime: microTime(p.lastMemory), MemoryWindowEnd: microTime(p.windowEnd),
			MemoryPeakBytes: int64(math.Round(p.memoryPeak)), OOMPeakBytes: int64(math.Round(p.oomPeak)),
			LastOOMKillTime: metaTime(p.lastOOM)})
	}
	slices.SortFunc(cp.Pods, func(a, b v1alpha1.PodCheckpoint) int { return strings.Compare(a.Name, b.Name) })
	return cp, nil
}

// LoadContainerCheckpoint returns the history a container's checkpoint holds, or why it cannot.
func LoadContainerCheckpoint(cp v1alpha1.ContainerCheckpoint) (*ContainerHistory, error) {
	c := NewContainerHistory()
	if err := c.CPU.LoadCheckpoint(cp.CPU); err != nil {
		return nil, fmt.Errorf("container %s: cpu: %w", cp.Name, err)
	}
	if err := c.Memory.LoadCheckpoint(cp.Memory); err != nil {
		return nil, fmt.Errorf("container %s: memory: %w", cp.Name, err)
	}
	c.Samples, c.FirstSample, c.LastSample, c.LastOOMKill = int(cp.Samples), fromMicroTime(cp.FirstSampleTime), fromMicroTime(cp.LastSampleTime), fromTime(cp.LastOOMKillTime)
	switch {
	case cp.Samples < 0:
		return nil, fmt.Errorf("container %s: %d samples", cp.Name, cp.Samples)
	case cp.Samples > 0 && (c.FirstSample.IsZero() || c.LastSample.IsZero() || c.LastSample.Before(c.FirstSample)):
		return nil, fmt.Errorf("container %s: %d samples from %v to %v", cp.Name, cp.Samples, c.FirstSample, c.LastSample)
	}
	for _, pod := range cp.Pods {
		if _, dup := c.pods[pod.Name]; dup || pod.Name == "" {
			return nil, fmt.Errorf("container %s: Pod %q twice or unnamed", cp.Name, pod.Name)
		}
		if pod.MemoryPeakBytes < 0 || pod.OOMPeakBytes < 0 {
			return nil, fmt.Errorf("container %s: Pod %s: negative memory peak", cp.Name, pod.Name)
		}
		c.pods[pod.Name] = &podContainer{lastCPU: fromMicroTime(pod.LastCPUSampleTime), lastMemory: fromMicroTime(pod.LastMemorySampleTime),
			windowEnd: fromMicroTime(pod.MemoryWindowEnd), memoryPeak: float64(pod.MemoryPeakBytes), oomPeak: float64(pod.OOMPeakBytes),
			lastOOM: fromTime(pod.LastOOMKillTime)}
	}
	return c, nil
}

// checkpoint returns the status of a checkpoint of the history, written at time at, with its
// containers by name.
func (h *targetHistory) checkpoint(at time.Time) (v1alpha1.VerticalScalerCheckpointStatus, error) {
	status := v1alpha1.VerticalScalerCheckpointStatus{Version: CheckpointVersion, WriteTime: metav1.NewTime(at)}
	for name, c := range h.containers {
		cp, err := c.Checkpoint(name, at)
		if err != nil {
			return v1alpha1.VerticalScalerCheckpointStatus{}, err
		}
		status.Containers = append(status.Containers, cp)
	}
	slices.SortFunc(status.Containers, func(a, b v1alpha1.ContainerCheckpoint) int { return strings.Compare(a.Name, b.Name) })
	return status, nil
}

// loadCheckpoint returns the history a checkpoint's status holds, or why it cannot: another
// version of the encoding, or data that does not fit the histograms.
func loadCheckpoint(status *v1alpha1.VerticalScalerCheckpointStatus) (*targetHistory, error) {
	if status.Version != CheckpointVersion {
		return nil, fmt.Errorf("checkpoint version %q, this manager reads %q", status.Version, CheckpointVersion)
	}
	h := &targetHistory{containers: map[string]*ContainerHistory{}}
	for _, cp := range status.Containers {
		if _, dup := h.containers[cp.Name]; dup || cp.Name == "" {
			return nil, fmt.Errorf("container %q twice or unnamed", cp.Name)
		}
		c, err := LoadContainerCheckpoint(cp)
		if err != nil {
			return nil, err
		}
		h.containers[cp.Name] = c
	}
	return h, nil
}

// microTime is t in microseconds, the precision of metav1.MicroTime; nil for the zero time.
func microTime(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewMicroTime(t.Truncate(time.Microsecond))
	return &m
}

// metaTime is t in seconds, the precision of metav1.Time; nil for the zero time. Only for times
// that come in whole seconds (the kubelet's finishedAt).
func metaTime(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewTime(t)
	return &m
}

func fromMicroTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func fromTime(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
