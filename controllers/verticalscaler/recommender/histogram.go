package recommender

import (
	"math"
	"slices"
	"sort"
	"time"
)

// HistogramOptions are the bucket boundaries of a Histogram: exponentially growing buckets, as
// the Vertical Pod Autoscaler's recommender uses, so that the relative error of a percentile is
// the same (Ratio-1, here 5%) at 50m CPU as at 50 cores. Make them with NewHistogramOptions.
type HistogramOptions struct {
	// FirstBucketSize is the width of bucket 0, which starts at 0.
	FirstBucketSize float64
	// Ratio is how much wider each bucket is than the one before.
	Ratio float64
	// MaxValue is where the last bucket starts; larger values fall into it.
	MaxValue float64
	// Epsilon is the weight under which a bucket counts as empty.
	Epsilon float64

	// numBuckets and logRatio are computed once: FindBucket runs for every sample.
	numBuckets int
	logRatio   float64
}

// NewHistogramOptions returns the options of exponentially growing buckets. The buckets are
// numbered with 16 bits: at most 65,536 of them.
func NewHistogramOptions(firstBucketSize, ratio, maxValue, epsilon float64) HistogramOptions {
	o := HistogramOptions{FirstBucketSize: firstBucketSize, Ratio: ratio, MaxValue: maxValue, Epsilon: epsilon, logRatio: math.Log(ratio)}
	o.numBuckets = int(math.Ceil(math.Log(maxValue*(ratio-1)/firstBucketSize+1)/o.logRatio)) + 1
	return o
}

// The histogram options of the two resources, the VPA recommender's defaults
// (k8s.io/autoscaler vertical-pod-autoscaler/pkg/recommender/model/aggregations_config.go).
var (
	// CPUHistogramOptions buckets CPU usage in cores: 0.01 cores wide first, 5% wider each, up
	// to 1000 cores.
	CPUHistogramOptions = NewHistogramOptions(0.01, 1.05, 1000, histogramEpsilon)
	// MemoryHistogramOptions buckets memory usage in bytes: 10 MB wide first, 5% wider each, up
	// to 1 TB.
	MemoryHistogramOptions = NewHistogramOptions(1e7, 1.05, 1e12, histogramEpsilon)
)

// minSampleWeight is the weight before decay of every memory peak and the least weight of a CPU
// sample (CPUSampleWeight), and histogramEpsilon the weight under which a bucket counts as
// empty: the VPA's minSampleWeight and epsilon. Their ratio is what matters: a sample still
// counts after about 10 half-lives (2^-10 > 0.001), which covers the 8 days the VPA means to
// remember.
const (
	minSampleWeight  = 0.1
	histogramEpsilon = 0.001 * minSampleWeight
)

// maxDecayExponent bounds the exponent of a sample's weight, 2^((t-reference)/halfLife): past it,
// the reference time moves forward and every weight is scaled down, so that weights never
// overflow a float64 however long the history runs. The VPA uses the same bound.
const maxDecayExponent = 100

// NumBuckets returns the number of buckets, the last one open-ended.
func (o *HistogramOptions) NumBuckets() int { return o.numBuckets }

// BucketStart returns the smallest value of bucket b.
func (o *HistogramOptions) BucketStart(b int) float64 {
	return o.FirstBucketSize * (math.Pow(o.Ratio, float64(b)) - 1) / (o.Ratio - 1)
}

// FindBucket returns the bucket value falls into; negative values fall into bucket 0.
func (o *HistogramOptions) FindBucket(value float64) int {
	if value < o.FirstBucketSize {
		return 0
	}
	last := o.numBuckets - 1
	b := int(math.Floor(math.Log(value*(o.Ratio-1)/o.FirstBucketSize+1) / o.logRatio))
	if b >= last {
		return last
	}
	// The logarithm may land a hair off an exact boundary; settle it against BucketStart.
	if b > 0 && o.BucketStart(b) > value {
		return b - 1
	}
	if o.BucketStart(b+1) <= value {
		return b + 1
	}
	return b
}

// bucketWeight is the weight held by one non-empty bucket.
type bucketWeight struct {
	weight float64
	bucket uint16
}

// Histogram is a decaying histogram of usage samples: a sample's weight doubles every HalfLife
// after the reference time, so recent usage counts more than old usage (the same as halving the
// old ones), and a history of any length costs the same memory. It follows the VPA's
// decayingHistogram, with one difference of representation: only non-empty buckets are stored,
// sorted, since the usage of one container rarely spans more than a few dozen of the 176
// buckets. The zero Histogram is not usable: use NewHistogram.
type Histogram struct {
	options  *HistogramOptions
	halfLife time.Duration
	// reference is the time at which a sample weighs exactly its given weight: a whole number
	// of half-lives (since year 1, as the VPA rounds it), zero before the first sample.
	reference time.Time
	// buckets are sorted by bucket.
	buckets []bucketWeight
	// total is the weight of every bucket, the empty ones included, as the VPA counts it.
	total float64
}

// NewHistogram returns an empty histogram with the given buckets and half-life. options must
// outlive it: histograms share their options.
func NewHistogram(options *HistogramOptions, halfLife time.Duration) *Histogram {
	h := newHistogram(options, halfLife)
	return &h
}

func newHistogram(options *HistogramOptions, halfLife time.Duration) Histogram {
	return Histogram{options: options, halfLife: halfLife}
}

// IsEmpty says whether no bucket holds a weight worth counting.
func (h *Histogram) IsEmpty() bool {
	_, _, ok := h.span()
	return !ok
}

// AddSample adds value with weight at time t. Samples may come in any order; a sample older than
// the reference simply weighs less, and one that would weigh less than Epsilon (about 10
// half-lives older than the reference) is dropped. NaN, infinite and negative values are
// ignored.
func (h *Histogram) AddSample(value, weight float64, t time.Time) {
	if weight <= 0 || math.IsNaN(value) || math.IsInf(value, 0) || value < 0 {
		return
	}
	weight *= h.decayFactor(t)
	if weight < h.options.Epsilon {
		// A sample so old that it would weigh nothing: it would only take up memory.
		return
	}
	h.total += weight
	bucket := uint16(h.options.FindBucket(value))
	i := sort.Search(len(h.buckets), func(i int) bool { return h.buckets[i].bucket >= bucket })
	if i < len(h.buckets) && h.buckets[i].bucket == bucket {
		h.buckets[i].weight += weight
		return
	}
	h.buckets = slices.Insert(h.buckets, i, bucketWeight{bucket: bucket, weight: weight})
}

// SubtractSample takes back a sample added with AddSample with the same value, weight and time:
// the VPA replaces the memory peak of an interval this way when a higher one comes. A bucket or
// total left under Epsilon becomes zero.
func (h *Histogram) SubtractSample(value, weight float64, t time.Time) {
	if weight <= 0 || math.IsNaN(value) || math.IsInf(value, 0) || value < 0 {
		return
	}
	weight *= h.decayFactor(t)
	h.total = safeSubtract(h.total, weight, h.options.Epsilon)
	bucket := uint16(h.options.FindBucket(value))
	i := sort.Search(len(h.buckets), func(i int) bool { return h.buckets[i].bucket >= bucket })
	if i == len(h.buckets) || h.buckets[i].bucket != bucket {
		return
	}
	if w := safeSubtract(h.buckets[i].weight, weight, h.options.Epsilon); w > 0 {
		h.buckets[i].weight = w
		return
	}
	h.buckets = slices.Delete(h.buckets, i, i+1)
}

func safeSubtract(value, sub, epsilon float64) float64 {
	if value -= sub; value < epsilon {
		return 0
	}
	return value
}

// decayFactor is the factor of a sample's weight at t, 2^((t-reference)/halfLife). Past
// maxDecayExponent half-lives it first moves the reference to t, as the VPA does.
func (h *Histogram) decayFactor(t time.Time) float64 {
	if h.reference.IsZero() || t.Sub(h.reference) > time.Duration(maxDecayExponent)*h.halfLife {
		h.shiftReference(t)
	}
	return math.Exp2(float64(t.Sub(h.reference)) / float64(h.halfLife))
}

// shiftReference moves the reference to t rounded to a whole number of half-lives and scales
// every weight to match, which leaves the percentiles unchanged. Buckets scaled under Epsilon
// are dropped: they held samples more than maxDecayExponent half-lives old.
func (h *Histogram) shiftReference(t time.Time) {
	next := t.Round(h.halfLife)
	if !h.reference.IsZero() {
		factor := math.Ldexp(1, int(math.Round(float64(h.reference.Sub(next))/float64(h.halfLife))))
		kept := h.buckets[:0]
		h.total *= factor
		for _, b := range h.buckets {
			b.weight *= factor
			if b.weight >= h.options.Epsilon {
				kept = append(kept, b)
			} else {
				h.total -= b.weight
			}
		}
		h.buckets = kept
	}
	h.reference = next
}

// span returns the first and last buckets (indexes into h.buckets) holding at least Epsilon,
// the VPA's minBucket and maxBucket; false when there is none.
func (h *Histogram) span() (first, last int, ok bool) {
	first, last = -1, -1
	for i, b := range h.buckets {
		if b.weight >= h.options.Epsilon {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last, first >= 0
}

// Percentile returns the value under which fraction p (0 to 1) of the weight lies: the end of
// the bucket where the cumulative weight reaches p, so the answer errs on the generous side by
// at most one bucket (5%). It returns 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) float64 {
	first, last, ok := h.span()
	if !ok {
		return 0
	}
	threshold := p * h.total
	sum := 0.0
	i := first
	for ; i < last; i++ {
		sum += h.buckets[i].weight
		if sum >= threshold {
			break
		}
	}
	bucket := int(h.buckets[i].bucket)
	if bucket < h.options.NumBuckets()-1 {
		return h.options.BucketStart(bucket + 1)
	}
	// The last bucket has no end.
	return h.options.BucketStart(bucket)
}
