package loganalysis

import "math"

// The duration sketch: a fixed log-scale histogram of reconcile durations in milliseconds
// (DDSketch's bucketing). Any quantile it returns is within sketchAlpha (1%) of the true
// value for durations between sketchMinMs and sketchMaxMs; shorter durations count as
// sketchMinMs and longer ones as sketchMaxMs. Its size is fixed: sketchBuckets counters per
// controller, whatever the number of reconciles.
const (
	sketchAlpha = 0.01
	sketchMinMs = 0.001 // 1 µs
	sketchMaxMs = 1e8   // about 28 hours
	sketchGamma = (1 + sketchAlpha) / (1 - sketchAlpha)
)

var (
	sketchLogGamma = math.Log(sketchGamma)
	sketchBuckets  = bucketOf(sketchMaxMs) + 1
)

func bucketOf(ms float64) int {
	if ms <= sketchMinMs {
		return 0
	}
	return int(math.Ceil(math.Log(ms/sketchMinMs) / sketchLogGamma))
}

// sketch collects durations; the zero value is empty and allocates its buckets on first use.
type sketch struct {
	counts []uint64
	n      uint64
	max    float64
}

func (s *sketch) add(ms float64) {
	if s.counts == nil {
		s.counts = make([]uint64, sketchBuckets)
	}
	if ms > s.max {
		s.max = ms
	}
	b := bucketOf(min(ms, sketchMaxMs))
	s.counts[b]++
	s.n++
}

// quantile returns the q-quantile (0 < q ≤ 1) of the durations added by the nearest-rank
// method, or 0 when there are none. It never exceeds the exact maximum.
func (s *sketch) quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	rank := uint64(max(math.Ceil(q*float64(s.n)), 1)) - 1
	var seen uint64
	for b, c := range s.counts {
		seen += c
		if seen > rank {
			if b == 0 {
				return min(sketchMinMs, s.max)
			}
			// The middle of the bucket (γ^(b-1), γ^b], in relative terms.
			v := sketchMinMs * 2 * math.Pow(sketchGamma, float64(b)) / (sketchGamma + 1)
			return min(v, s.max)
		}
	}
	return s.max
}
