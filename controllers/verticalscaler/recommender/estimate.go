package recommender

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/apis/v1alpha1"
)

// The constants of the estimate. They are the VPA recommender's defaults
// (k8s.io/autoscaler vertical-pod-autoscaler/pkg/recommender/config/config.go and
// logic/recommender.go), so that a VerticalScaler recommends what a VPA would from the same
// usage; a VerticalScaler's spec.recommenderPolicy may change the percentiles and the margin.
const (
	// TargetPercentile of usage is the recommended request: 90% of the (decayed) samples fit.
	TargetPercentile = 0.9
	// LowerBoundPercentile of usage is the smallest request that still looks safe.
	LowerBoundPercentile = 0.5
	// UpperBoundPercentile of usage is the largest request worth giving.
	UpperBoundPercentile = 0.95
	// SafetyMarginFraction is added on top of each percentile, for the usage the samples
	// missed (a spike between two scrapes, growth since).
	SafetyMarginFraction = 0.15
	// ConfidenceInterval is the unit of the history's length in the confidence that widens the
	// bounds: a day, or 1,440 samples of one a minute.
	ConfidenceInterval = 24 * time.Hour
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

// Policy is how an estimate is drawn from a history: the percentiles of usage behind the target
// and the bounds (fractions, 0 to 1), and the margin added on top of each.
type Policy struct {
	TargetPercentile     float64
	LowerBoundPercentile float64
	UpperBoundPercentile float64
	SafetyMarginFraction float64
}

// DefaultPolicy is the VPA recommender's.
var DefaultPolicy = Policy{TargetPercentile: TargetPercentile, LowerBoundPercentile: LowerBoundPercentile,
	UpperBoundPercentile: UpperBoundPercentile, SafetyMarginFraction: SafetyMarginFraction}

// PolicyFor returns the policy a VerticalScaler's spec.recommenderPolicy asks for: DefaultPolicy
// where it says nothing.
func PolicyFor(spec *v1alpha1.RecommenderPolicy) Policy {
	p := DefaultPolicy
	if spec == nil {
		return p
	}
	percent := func(v *int32, fallback float64) float64 {
		if v == nil {
			return fallback
		}
		return float64(*v) / 100
	}
	p.TargetPercentile = percent(spec.TargetPercentile, p.TargetPercentile)
	p.LowerBoundPercentile = percent(spec.LowerBoundPercentile, p.LowerBoundPercentile)
	p.UpperBoundPercentile = percent(spec.UpperBoundPercentile, p.UpperBoundPercentile)
	p.SafetyMarginFraction = percent(spec.SafetyMarginPercent, p.SafetyMarginFraction)
	return p
}

// Status returns the policy as status reports it, in percent.
func (p Policy) Status() *v1alpha1.RecommenderPolicy {
	percent := func(f float64) *int32 {
		v := int32(math.Round(f * 100))
		return &v
	}
	return &v1alpha1.RecommenderPolicy{TargetPercentile: percent(p.TargetPercentile), LowerBoundPercentile: percent(p.LowerBoundPercentile),
		UpperBoundPercentile: percent(p.UpperBoundPercentile), SafetyMarginPercent: percent(p.SafetyMarginFraction)}
}

// Estimate is a container's recommended requests, before any policy bounds them, and what they
// rest on.
type Estimate struct {
	Target     corev1.ResourceList
	LowerBound corev1.ResourceList
	UpperBound corev1.ResourceList
	// Samples, FirstSample and LastSample are the history's CPU samples: how many, and the
	// times of the first and the last.
	Samples                 int
	FirstSample, LastSample time.Time
	// LastOOMKill is when the last OOM kill the history holds happened; zero if none.
	LastOOMKill time.Time
}

// Estimate returns the recommendation for one of a Pod's containers (containers is how many
// of the Pod's containers are recommended), the VPA's way: for each of the target and the
// bounds, its percentile of usage plus the safety margin; the bounds then widened by the
// confidence the history's length gives (the upper bound times 1 + 1/days, the lower times
// (1 + 0.001/days)^-2); each raised to the container's share of the Pod minimum. The upper bound
// never exceeds the histogram's range (1,000 cores, 1 TB), where the VPA's goes to infinity with
// no history. A resource without samples is left out; it returns false when there is no sample
// at all.
func (c *ContainerHistory) Estimate(policy Policy, containers int) (Estimate, bool) {
	if c.CPU.IsEmpty() && c.Memory.IsEmpty() {
		return Estimate{}, false
	}
	share := 1 / float64(max(containers, 1))
	confidence := c.confidence()
	upperFactor := 1 + 1/confidence
	lowerFactor := math.Pow(1+0.001/confidence, -2)
	cpu := func(p, factor float64) float64 {
		v := min(c.CPU.Percentile(p)*(1+policy.SafetyMarginFraction)*factor, CPUHistogramOptions.MaxValue)
		return max(v, PodMinCPUMilli/1000.0*share)
	}
	memory := func(p, factor float64) float64 {
		v := min(c.Memory.Percentile(p)*(1+policy.SafetyMarginFraction)*factor, MemoryHistogramOptions.MaxValue)
		return max(v, PodMinMemoryBytes*share)
	}
	at := func(p, factor float64) corev1.ResourceList {
		list := corev1.ResourceList{}
		if !c.CPU.IsEmpty() {
			list[corev1.ResourceCPU] = CPUQuantity(cpu(p, factor))
		}
		if !c.Memory.IsEmpty() {
			list[corev1.ResourceMemory] = MemoryQuantity(memory(p, factor))
		}
		return list
	}
	return Estimate{
		Target:      at(policy.TargetPercentile, 1),
		LowerBound:  at(policy.LowerBoundPercentile, lowerFactor),
		UpperBound:  at(policy.UpperBoundPercentile, upperFactor),
		Samples:     c.Samples,
		FirstSample: c.FirstSample,
		LastSample:  c.LastSample,
		LastOOMKill: c.LastOOMKill,
	}, true
}

// confidence measures the history's length, the VPA's way: in days between the first and the
// last CPU sample, and in samples per 1,440 (a day of one a minute), whichever is smaller.
func (c *ContainerHistory) confidence() float64 {
	days := float64(c.LastSample.Sub(c.FirstSample)) / float64(ConfidenceInterval)
	samples := float64(c.Samples) / ConfidenceInterval.Minutes()
	return min(days, samples)
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
