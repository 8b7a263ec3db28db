package recommender

import (
	"math"
	"sort"
	"time"
)

// HistogramOptions are the bucket boundaries of a Histogram: exponentially growing buckets, as
// the Vertical Pod Autoscaler's recommender uses, so that the relative error of a percentile is
// the same (Ratio-1, here 5%) at 50m CPU as at 50 cores.
type HistogramOptions struct {
	// FirstBucketSize is the width of bucket 0, which starts at 0.
	FirstBucketSize float64
	// Ratio is how much wider each bucket is than the one before.
	Ratio float64
	// MaxValue is where the last bucket starts; larger values fall into it.
	MaxValue float64
}

// The histogram options of the two resources, the VPA recommender's defaults
// (k8s.io/autoscaler vertical-pod-autoscaler/pkg/recommender/model/aggregations_config.go).
var (
	// CPUHistogramOptions buckets CPU usage in cores: 0.01 cores wide first, 5% wider each, up
	// to 1000 cores.
	CPUHistogramOptions = HistogramOptions{FirstBucketSize: 0.01, Ratio: 1.05, MaxValue: 1000}
	// MemoryHistogramOptions buckets memory usage in bytes: 10 MB wide first, 5% wider each, up
	// to 1 TB.
	MemoryHistogramOptions = HistogramOptions{FirstBucketSize: 1e7, Ratio: 1.05, MaxValue: 1e12}
)

// histogramEpsilon is the weight under which a bucket counts as empty: a sample decayed over
// more than about 33 half-lives (2^-33 < 1e-10) no longer takes up memory.
const histogramEpsilon = 1e-10

// maxDecayExponent bounds the exponent of a sample's weight, 2^((t-reference)/halfLife): past it,
// the reference time moves forward and every weight is scaled down, so that weights never
// overflow a float64 however long the history runs. The VPA uses the same bound.
const maxDecayExponent = 100

// NumBuckets returns the number of buckets, the last one open-ended.
func (o HistogramOptions) NumBuckets() int {
	return int(math.Ceil(math.Log(o.MaxValue*(o.Ratio-1)/o.FirstBucketSize+1)/math.Log(o.Ratio))) + 1
}

// BucketStart returns the smallest value of bucket b.
func (o HistogramOptions) BucketStart(b int) float64 {
	return o.FirstBucketSize * (math.Pow(o.Ratio, float64(b)) - 1) / (o.Ratio - 1)
}

// FindBucket returns the bucket value falls into; negative values fall into bucket 0.
func (o HistogramOptions) FindBucket(value float64) int {
	if value < o.FirstBucketSize {
		return 0
	}
	b := int(math.Floor(math.Log(value*(o.Ratio-1)/o.FirstBucketSize+1) / math.Log(o.Ratio)))
	// The logarithm may land a hair off an exact boundary; settle it against BucketStart.
	for b > 0 && o.BucketStart(b) > value {
		b--
	}
	for b+1 < o.NumBuckets() && o.BucketStart(b+1) <= value {
		b++
	}
	return min(b, o.NumBuckets()-1)
}

// bucketWeight is the weight held by one non-empty bucket.
type bucketWeight struct {
	bucket int
	weight float64
}

// Histogram is a decaying histogram of usage samples: a sample's weight halves every HalfLife,
// so recent usage counts more than old usage, and a history of any length costs the same
// memory. Only non-empty buckets are stored (usage of one container rarely spans more than a
// few dozen of the 176 buckets). The zero Histogram is not usable: use NewHistogram.
type Histogram struct {
	options  HistogramOptions
	halfLife time.Duration
	// reference is the time at which a sample weighs exactly its given weight.
	reference time.Time
	// buckets are sorted by bucket.
	buckets []bucketWeight
	total   float64
}

// NewHistogram returns an empty histogram with the given buckets and half-life.
func NewHistogram(options HistogramOptions, halfLife time.Duration) *Histogram {
	return &Histogram{options: options, halfLife: halfLife}
}

// IsEmpty says whether the histogram holds no weight worth counting.
func (h *Histogram) IsEmpty() bool { return h.total < histogramEpsilon }

// AddSample adds value with weight at time t. Samples may come in any order; a sample older than
// the reference simply weighs less.
func (h *Histogram) AddSample(value, weight float64, t time.Time) {
	if weight <= 0 || math.IsNaN(value) || math.IsInf(value, 0) {
		return
	}
	if h.reference.IsZero() {
		h.reference = t
	}
	if h.exponent(t) > maxDecayExponent {
		h.shiftReference(t)
	}
	weight *= math.Exp2(h.exponent(t))
	if weight < histogramEpsilon {
		// A sample so old that it would weigh nothing.
		return
	}
	h.add(h.options.FindBucket(value), weight)
}

// exponent is the decay exponent of a sample at t.
func (h *Histogram) exponent(t time.Time) float64 {
	return float64(t.Sub(h.reference)) / float64(h.halfLife)
}

// shiftReference moves the reference to t and scales every weight by the same factor, which
// leaves the percentiles unchanged, then drops the buckets that decayed to nothing.
func (h *Histogram) shiftReference(t time.Time) {
	factor := math.Exp2(-h.exponent(t))
	h.reference = t
	kept := h.buckets[:0]
	h.total = 0
	for _, b := range h.buckets {
		b.weight *= factor
		if b.weight >= histogramEpsilon {
			kept = append(kept, b)
			h.total += b.weight
		}
	}
	h.buckets = kept
}

// add adds weight to bucket, keeping buckets sorted.
func (h *Histogram) add(bucket int, weight float64) {
	h.total += weight
	i := sort.Search(len(h.buckets), func(i int) bool { return h.buckets[i].bucket >= bucket })
	if i < len(h.buckets) && h.buckets[i].bucket == bucket {
		h.buckets[i].weight += weight
		return
	}
	h.buckets = append(h.buckets, bucketWeight{})
	copy(h.buckets[i+1:], h.buckets[i:])
	h.buckets[i] = bucketWeight{bucket: bucket, weight: weight}
}

// Percentile returns the value under which fraction p (0 to 1) of the weight lies: the end of
// the bucket where the cumulative weight reaches p, so the answer errs on the generous side by
// at most one bucket (5%). It returns 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) float64 {
	if h.IsEmpty() {
		return 0
	}
	threshold := p * h.total
	sum := 0.0
	bucket := h.buckets[len(h.buckets)-1].bucket
	for _, b := range h.buckets {
		sum += b.weight
		if sum >= threshold {
			bucket = b.bucket
			break
		}
	}
	if bucket < h.options.NumBuckets()-1 {
		return h.options.BucketStart(bucket + 1)
	}
	// The last bucket has no end.
	return h.options.BucketStart(bucket)
}
