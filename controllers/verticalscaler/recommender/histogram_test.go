package recommender

import (
	"math"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	o := &CPUHistogramOptions
	// log(1000*0.05/0.01+1)/log(1.05) = 174.6, so 175 bounded buckets and the open last one.
	if got := o.NumBuckets(); got != 176 {
		t.Errorf("NumBuckets = %d, want 176", got)
	}
	for _, b := range []int{0, 1, 25, 100, 175} {
		if got := o.FindBucket(o.BucketStart(b)); got != b {
			t.Errorf("FindBucket(BucketStart(%d)) = %d", b, got)
		}
		if b > 0 {
			if got := o.FindBucket(o.BucketStart(b) - 1e-9); got != b-1 {
				t.Errorf("FindBucket(just under BucketStart(%d)) = %d, want %d", b, got, b-1)
			}
		}
	}
	for _, tc := range []struct {
		value float64
		want  int
	}{
		{value: -1, want: 0},
		{value: 0, want: 0},
		{value: 0.0099, want: 0},
		{value: 0.01, want: 1},
		{value: 0.5, want: 25}, // log(0.5*0.05/0.01+1)/log(1.05) = 25.7
		{value: 1e9, want: 175},
	} {
		if got := o.FindBucket(tc.value); got != tc.want {
			t.Errorf("FindBucket(%v) = %d, want %d", tc.value, got, tc.want)
		}
	}
}

func TestHistogramPercentile(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := &CPUHistogramOptions
	// end returns the end of the bucket value falls in: the answer Percentile gives.
	end := func(value float64) float64 { return o.BucketStart(o.FindBucket(value) + 1) }
	for _, tc := range []struct {
		name    string
		samples []float64
		p       float64
		want    float64
	}{
		{name: "empty", samples: nil, p: 0.9, want: 0},
		{name: "one sample, end of its bucket", samples: []float64{0.5}, p: 0.9, want: 0.51113},
		{name: "median of ten", samples: []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}, p: 0.5, want: end(0.5)},
		{name: "90th of ten", samples: []float64{1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1}, p: 0.9, want: end(0.9)},
		{name: "100th is the largest", samples: []float64{0.1, 0.2, 3}, p: 1, want: end(3)},
		{name: "beyond the last bucket", samples: []float64{5000}, p: 0.5, want: o.BucketStart(175)},
		{name: "NaN and Inf are ignored", samples: []float64{math.NaN(), math.Inf(1), 0.5}, p: 1, want: 0.51113},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistogram(o, time.Hour)
			for _, s := range tc.samples {
				h.AddSample(s, 1, t0)
			}
			if got := h.Percentile(tc.p); math.Abs(got-tc.want) > 1e-4 {
				t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestHistogramDecay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	halfLife := time.Hour
	o := &CPUHistogramOptions

	// At the same time, 1 core and 4 cores weigh the same: the median is the smaller.
	same := NewHistogram(o, halfLife)
	same.AddSample(1, 1, t0)
	same.AddSample(4, 1, t0)
	if got, want := same.Percentile(0.5), o.BucketStart(o.FindBucket(1)+1); got != want {
		t.Errorf("no decay: median %v, want %v", got, want)
	}

	// One half-life later, the 4-core sample weighs twice the 1-core one: it is the median,
	// and the 1-core sample is only the lowest third.
	decayed := NewHistogram(o, halfLife)
	decayed.AddSample(1, 1, t0)
	decayed.AddSample(4, 1, t0.Add(halfLife))
	if got, want := decayed.Percentile(0.5), o.BucketStart(o.FindBucket(4)+1); got != want {
		t.Errorf("decay: median %v, want %v", got, want)
	}
	if got, want := decayed.Percentile(0.33), o.BucketStart(o.FindBucket(1)+1); got != want {
		t.Errorf("decay: 33rd percentile %v, want %v", got, want)
	}
	if got := decayed.total; math.Abs(got-3) > 1e-9 {
		t.Errorf("total weight %v, want 3", got)
	}
}

func TestHistogramReferenceShiftKeepsWeightsFinite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := NewHistogram(&CPUHistogramOptions, time.Hour)
	h.AddSample(1, 1, t0)
	h.AddSample(2, 1, t0.Add(50*time.Hour))
	// 150 half-lives after the first sample the exponent passes maxDecayExponent: the
	// reference moves, and the first sample (2^-150 of the newest) is dropped.
	h.AddSample(3, 1, t0.Add(150*time.Hour))
	if len(h.buckets) != 1 {
		t.Errorf("buckets = %v, want only the newest sample's", h.buckets)
	}
	if math.IsInf(h.total, 0) || math.IsNaN(h.total) || h.total < 1 || h.total > 1+1e-9 {
		t.Errorf("total weight %v, want about 1", h.total)
	}
	if got, want := h.Percentile(0.01), CPUHistogramOptions.BucketStart(CPUHistogramOptions.FindBucket(3)+1); got != want {
		t.Errorf("Percentile(0.01) = %v, want %v", got, want)
	}
	// A sample as old as the dropped one is not added either.
	h.AddSample(0.1, 1, t0)
	if len(h.buckets) != 1 {
		t.Errorf("a sample 150 half-lives old was added: %v", h.buckets)
	}
}
