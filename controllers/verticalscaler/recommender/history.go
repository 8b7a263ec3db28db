package recommender

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// The constants of the usage history: the VPA recommender's defaults
// (k8s.io/autoscaler vertical-pod-autoscaler/pkg/recommender/model/aggregations_config.go).
const (
	// UsageHalfLife is how long it takes a usage sample to weigh half as much: a day, so that
	// yesterday's peak still counts and last month's barely does.
	UsageHalfLife = 24 * time.Hour
	// MemoryAggregationInterval is the interval of which each Pod's container contributes one
	// memory sample, its peak: memory is sized for the peaks, and a day of samples at the same
	// level says no more than one.
	MemoryAggregationInterval = 24 * time.Hour
	// MemoryAggregationIntervals is how many intervals the history covers: a container without
	// a sample for that long is forgotten (the VPA garbage-collects its state then).
	MemoryAggregationIntervals = 8
	// OOMBumpUpRatio and OOMMinBumpUpBytes say how much more memory than it had a container
	// killed for lack of memory needs: at least 20% more, and at least 100 MiB more.
	OOMBumpUpRatio    = 1.2
	OOMMinBumpUpBytes = 100 << 20
)

// HistoryConfig is how a container's history aggregates memory and answers OOM kills: the
// constants above by default, and what a VerticalScaler's container policy sets instead, as the
// Vertical Pod Autoscaler allows per object since v1.6 (AEP-8026).
type HistoryConfig struct {
	// OOMBumpUpRatio and OOMMinBumpUpBytes: after an OOM kill a container needs the memory it
	// had times the ratio, or plus the minimum, whichever is more.
	OOMBumpUpRatio    float64
	OOMMinBumpUpBytes float64
	// MemoryAggregationInterval is the window of one memory peak per Pod, and
	// MemoryAggregationIntervals how many windows the history keeps.
	MemoryAggregationInterval  time.Duration
	MemoryAggregationIntervals int
}

// DefaultHistoryConfig is the Vertical Pod Autoscaler's.
var DefaultHistoryConfig = HistoryConfig{OOMBumpUpRatio: OOMBumpUpRatio, OOMMinBumpUpBytes: OOMMinBumpUpBytes,
	MemoryAggregationInterval: MemoryAggregationInterval, MemoryAggregationIntervals: MemoryAggregationIntervals}

// HistoryConfigFor returns the history configuration a container policy asks for: the defaults
// where it says nothing.
func HistoryConfigFor(p v1alpha1.ContainerPolicy) HistoryConfig {
	c := DefaultHistoryConfig
	if p.OOMBumpUpRatio != nil {
		c.OOMBumpUpRatio = p.OOMBumpUpRatio.AsApproximateFloat64()
	}
	if p.OOMMinBumpUp != nil {
		c.OOMMinBumpUpBytes = p.OOMMinBumpUp.AsApproximateFloat64()
	}
	if p.MemoryAggregationInterval != nil && p.MemoryAggregationInterval.Duration > 0 {
		c.MemoryAggregationInterval = p.MemoryAggregationInterval.Duration
	}
	if p.MemoryAggregationIntervalCount != nil && *p.MemoryAggregationIntervalCount > 0 {
		c.MemoryAggregationIntervals = int(*p.MemoryAggregationIntervalCount)
	}
	return c
}

// ContainerHistory is the usage history of the containers of one name across a Deployment's
// Pods: the VPA's AggregateContainerState, with the per-Pod state of its ContainerState. It
// keeps a decaying histogram of CPU samples and one of memory peaks, one peak per Pod and
// MemoryAggregationInterval, raised by OOM kills. It is not safe for concurrent use.
//
// It follows the VPA recommender (v1.8.1) in every rule that decides a recommendation but one:
// memory samples count through per-interval peaks, an OOM kill adds a peak of
// max(used + 100 MiB, used × 1.2) where used is the larger of the container's memory request and
// its peak in the current interval, and the bounds widen when the history is short. The one: a
// CPU sample weighs the container's CPU request in cores, at least 0.1 (CPUSampleWeight), as the
// VPA's did until v1.4.0. The VPA dropped the weighting because the request its feeder passed had
// long been zero (kubernetes/autoscaler#7818), so every sample already weighed 0.1; we keep it
// because a container that ran with a larger request had more room, so its usage says more
// about what it needs than usage squeezed under a small request.
type ContainerHistory struct {
	// CPU holds CPU samples in cores.
	CPU Histogram
	// Memory holds memory peaks in bytes.
	Memory Histogram
	// FirstSample and LastSample are the times of the first and the last CPU sample, and
	// Samples how many CPU samples were added: the VPA measures the history by its CPU samples.
	FirstSample, LastSample time.Time
	Samples                 int
	// LastOOMKill is when the last OOM kill recorded happened; zero if none.
	LastOOMKill time.Time

	// pods holds the state of each Pod's container: which of its samples were taken, and its
	// memory peak in the current interval.
	pods map[string]*podContainer
	// config is how memory is aggregated and OOM kills answered; shared by the histories of
	// one configuration.
	config *HistoryConfig
}

// podContainer is the state of one Pod's container, the VPA's ContainerState.
type podContainer struct {
	lastCPU    time.Time
	lastMemory time.Time
	// windowEnd ends the current memory aggregation interval (not inclusive).
	windowEnd time.Time
	// memoryPeak is the highest memory sample of the interval, oomPeak the one an OOM kill
	// gave; the interval's peak in the histogram is the larger.
	memoryPeak, oomPeak float64
	// lastOOM is the finish time of the last OOM kill recorded, so that one kill, seen on every
	// read until the container terminates again, counts once.
	lastOOM time.Time
}

// NewContainerHistory returns an empty history with the default configuration.
func NewContainerHistory() *ContainerHistory {
	return NewContainerHistoryWith(&DefaultHistoryConfig)
}

// NewContainerHistoryWith returns an empty history with config, which it shares.
func NewContainerHistoryWith(config *HistoryConfig) *ContainerHistory {
	return &ContainerHistory{
		CPU:    newHistogram(&CPUHistogramOptions, UsageHalfLife),
		Memory: newHistogram(&MemoryHistogramOptions, UsageHalfLife),
		pods:   map[string]*podContainer{},
		config: config,
	}
}

// Configure makes the history aggregate and answer OOM kills as config says from now on.
func (c *ContainerHistory) Configure(config *HistoryConfig) { c.config = config }

func (c *ContainerHistory) pod(name string) *podContainer {
	p := c.pods[name]
	if p == nil {
		p = &podContainer{}
		c.pods[name] = p
	}
	return p
}

// AddSample adds one observation of the usage of pod's container at t, taken while the
// container requested requests (its Pod template's requests then; nil for none), and says
// whether it recorded anything. A resource missing from usage is not sampled; a sample not newer
// than the last one of the Pod (the same measurement read twice, or an older one) is dropped.
// The CPU sample weighs CPUSampleWeight(requests).
func (c *ContainerHistory) AddSample(pod string, usage, requests corev1.ResourceList, t time.Time) bool {
	p := c.pod(pod)
	added := false
	if q, ok := usage[corev1.ResourceCPU]; ok {
		added = c.addCPU(p, q.AsApproximateFloat64(), CPUSampleWeight(requests), t)
	}
	if q, ok := usage[corev1.ResourceMemory]; ok {
		if _, changed := c.addMemory(p, q.AsApproximateFloat64(), t, false); changed {
			added = true
		}
	}
	return added
}

// CPUSampleWeight is the weight of a CPU sample taken while the container requested requests:
// its CPU request in cores, and at least minSampleWeight (0.1 core), so that a container
// without a request still counts. The VPA's formula before v1.4.0.
func CPUSampleWeight(requests corev1.ResourceList) float64 {
	q, ok := requests[corev1.ResourceCPU]
	if !ok {
		return minSampleWeight
	}
	return max(q.AsApproximateFloat64(), minSampleWeight)
}

// addCPU is the VPA's ContainerState.addCPUSample and AggregateContainerState.addCPUSample, with
// the sample's weight given.
func (c *ContainerHistory) addCPU(p *podContainer, cores, weight float64, t time.Time) bool {
	if cores < 0 || !t.After(p.lastCPU) {
		return false
	}
	c.CPU.AddSample(cores, weight, t)
	p.lastCPU = t
	if t.After(c.LastSample) {
		c.LastSample = t
	}
	if c.FirstSample.IsZero() || t.Before(c.FirstSample) {
		c.FirstSample = t
	}
	c.Samples++
	return true
}

// addMemory is the VPA's ContainerState.addMemorySample: one peak per Pod and interval, stamped
// with the interval's end. A higher sample within the interval replaces the peak.
//
// It says whether it took the sample (accepted) and whether the history changed: a new peak, or
// a later sample, which the Pod's state records.
func (c *ContainerHistory) addMemory(p *podContainer, bytes float64, t time.Time, oom bool) (accepted, changed bool) {
	if bytes < 0 || (!oom && t.Before(p.lastMemory)) {
		return false, false
	}
	changed = !t.Equal(p.lastMemory)
	p.lastMemory = t
	if p.windowEnd.IsZero() {
		p.windowEnd = t
	}
	addPeak := false
	if t.Before(p.windowEnd) {
		if old := max(p.memoryPeak, p.oomPeak); old != 0 && bytes > old {
			c.Memory.SubtractSample(old, minSampleWeight, p.windowEnd)
			addPeak = true
		}
	} else {
		// The sample opens a new interval: the one that holds t.
		interval := c.config.MemoryAggregationInterval
		shift := t.Sub(p.windowEnd).Truncate(interval) + interval
		p.windowEnd = p.windowEnd.Add(shift)
		p.memoryPeak, p.oomPeak = 0, 0
		addPeak = true
	}
	if addPeak {
		c.Memory.AddSample(bytes, minSampleWeight, p.windowEnd)
		if oom {
			p.oomPeak = bytes
		} else {
			p.memoryPeak = bytes
		}
	}
	return true, changed || addPeak
}

// RecordOOM records that pod's container was killed for lack of memory at finishedAt (its
// lastState.terminated.finishedAt) while it requested requestBytes of memory, and says whether
// it was new: a kill already recorded, or older than an interval before the Pod's last memory
// sample, is not. A new one adds a memory peak the VPA's way, and shows in the next Estimate.
func (c *ContainerHistory) RecordOOM(pod string, finishedAt time.Time, requestBytes float64) bool {
	p := c.pod(pod)
	if !finishedAt.After(p.lastOOM) {
		return false
	}
	if !p.lastMemory.IsZero() && finishedAt.Before(p.lastMemory.Add(-c.config.MemoryAggregationInterval)) {
		return false
	}
	// The VPA leaves out oomPeak here, so that OOM kills in a row do not compound.
	used := max(requestBytes, p.memoryPeak)
	needed := max(used+c.config.OOMMinBumpUpBytes, used*c.config.OOMBumpUpRatio)
	if accepted, _ := c.addMemory(p, needed, finishedAt, true); !accepted {
		return false
	}
	p.lastOOM = finishedAt
	if finishedAt.After(c.LastOOMKill) {
		c.LastOOMKill = finishedAt
	}
	return true
}

// RetainPods forgets the state of the Pods for which keep is false: they are gone. Their samples
// stay in the histograms. It says whether it forgot any.
func (c *ContainerHistory) RetainPods(keep func(pod string) bool) bool {
	forgot := false
	for name := range c.pods {
		if !keep(name) {
			delete(c.pods, name)
			forgot = true
		}
	}
	return forgot
}

// Expired says whether the history had no CPU sample for its configuration's memory
// aggregation intervals before now, when the VPA forgets a container.
func (c *ContainerHistory) Expired(now time.Time) bool {
	return !c.LastSample.IsZero() && now.Sub(c.LastSample) >= time.Duration(c.config.MemoryAggregationIntervals)*c.config.MemoryAggregationInterval
}
