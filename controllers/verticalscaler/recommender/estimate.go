package recommender

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"
)

// The constants of the estimate. They are the VPA recommender's defaults
// (k8s.io/autoscaler vertical-pod-autoscaler/pkg/recommender/logic/recommender.go and
// model/aggregations_config.go), so that a VerticalScaler recommends what a VPA would from the
// same usage, with the differences listed on ContainerHistory.
const (
	// UsageHalfLife is how long it takes a usage sample to weigh half as much: a day, so that
	// yesterday's peak still counts and last month's barely does.
	UsageHalfLife = 24 * time.Hour
	// TargetPercentile of usage is the recommended request: 90% of the (decayed) samples fit.
	TargetPercentile = 0.9
	// LowerBoundPercentile of usage is the smallest request that still looks safe.
	LowerBoundPercentile = 0.5
	// UpperBoundPercentile of usage is the largest request worth giving.
	UpperBoundPercentile = 0.95
	// SafetyMarginFraction is added on top of each percentile, for the usage the samples
	// missed (a spike between two scrapes, growth since).
	SafetyMarginFraction = 0.15
	// PodMinCPUMilli is the smallest CPU recommendation for a whole Pod, shared equally by its
	// containers: below it a container is throttled by scheduling noise alone.
	PodMinCPUMilli = 25
	// PodMinMemoryBytes is the smallest memory recommendation for a whole Pod (250 MiB), shared
	// equally by its containers: below it the first spike is an OOM kill.
	PodMinMemoryBytes = 250 << 20
	// Tolerance is the verticalscaler's hysteresis, as a fraction of the recommendation: a
	// recommendation that moved less is no news for the poller, and a request this close to the
	// recommendation is left alone by the controller. Smaller moves are noise, and each apply in
	// Auto mode rolls the Pods. One value serves both, so that the poller never reports a move
	// the controller would not apply.
	Tolerance = 0.1
)

// mebibyte is the unit memory recommendations are rounded up to: a recommendation of
// 262144001 bytes reads worse and helps nobody.
const mebibyte = 1 << 20

// ContainerHistory is the compact usage history of one container of one Deployment: a decaying
// histogram per resource. It differs from the VPA in two ways worth knowing: every CPU sample
// weighs the same (the VPA weighs them by the container's request), and memory samples are used
// as they come (the VPA keeps one peak per day).
type ContainerHistory struct {
	CPU    *Histogram
	Memory *Histogram
}

// NewContainerHistory returns an empty history.
func NewContainerHistory() *ContainerHistory {
	return &ContainerHistory{
		CPU:    NewHistogram(CPUHistogramOptions, UsageHalfLife),
		Memory: NewHistogram(MemoryHistogramOptions, UsageHalfLife),
	}
}

// AddSample adds one observation of the container's usage at t. A resource missing from usage
// is not sampled.
func (c *ContainerHistory) AddSample(usage corev1.ResourceList, t time.Time) {
	if q, ok := usage[corev1.ResourceCPU]; ok {
		c.CPU.AddSample(q.AsApproximateFloat64(), 1, t)
	}
	if q, ok := usage[corev1.ResourceMemory]; ok {
		c.Memory.AddSample(q.AsApproximateFloat64(), 1, t)
	}
}

// Estimate is a container's recommended requests, before any policy bounds them.
type Estimate struct {
	Target     corev1.ResourceList
	LowerBound corev1.ResourceList
	UpperBound corev1.ResourceList
}

// Estimate returns the recommendation for one of a Pod's containers (containers is how many
// the Pod has): each
// percentile plus the safety margin, raised to the container's share of the Pod minimum. A
// resource without samples is left out. It returns false when there is no sample at all.
func (c *ContainerHistory) Estimate(containers int) (Estimate, bool) {
	if c.CPU.IsEmpty() && c.Memory.IsEmpty() {
		return Estimate{}, false
	}
	share := 1 / float64(max(containers, 1))
	minCPU := PodMinCPUMilli / 1000.0 * share
	minMemory := PodMinMemoryBytes * share
	at := func(p float64) corev1.ResourceList {
		list := corev1.ResourceList{}
		if !c.CPU.IsEmpty() {
			list[corev1.ResourceCPU] = CPUQuantity(max(c.CPU.Percentile(p)*(1+SafetyMarginFraction), minCPU))
		}
		if !c.Memory.IsEmpty() {
			list[corev1.ResourceMemory] = MemoryQuantity(max(c.Memory.Percentile(p)*(1+SafetyMarginFraction), minMemory))
		}
		return list
	}
	return Estimate{
		Target:     at(TargetPercentile),
		LowerBound: at(LowerBoundPercentile),
		UpperBound: at(UpperBoundPercentile),
	}, true
}

// CPUQuantity returns cores as a quantity of whole millicores, rounded up.
func CPUQuantity(cores float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Ceil(cores*1000-1e-9)), resource.DecimalSI)
}

// MemoryQuantity returns bytes as a quantity of whole mebibytes, rounded up.
func MemoryQuantity(bytes float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Ceil(bytes/mebibyte-1e-9))*mebibyte, resource.BinarySI)
}

// Moved says whether next differs from last by more than threshold (a fraction of last) in any
// resource, or has a resource that last has not (or the other way round).
func Moved(last, next corev1.ResourceList, threshold float64) bool {
	if len(last) != len(next) {
		return true
	}
	for name, n := range next {
		l, ok := last[name]
		if !ok {
			return true
		}
		lv, nv := l.AsApproximateFloat64(), n.AsApproximateFloat64()
		if lv == 0 {
			if nv != 0 {
				return true
			}
			continue
		}
		if math.Abs(nv-lv)/lv > threshold {
			return true
		}
	}
	return false
}
