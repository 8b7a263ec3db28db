package faultproxy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Faults says what the proxy does to the requests it forwards. The zero value does nothing:
// every request is forwarded at once.
type Faults struct {
	// Latency draws the delay added before each request is forwarded (a watch: before it is
	// opened); nil adds none.
	Latency Distribution
	// TooManyRequests is the share of requests, from 0 to 1, answered 429 with a Retry-After
	// header of RetryAfter, without being forwarded.
	TooManyRequests float64
	// RetryAfter is the Retry-After of a 429, in whole seconds; one second when zero.
	RetryAfter time.Duration
	// InternalError is the share of requests answered 500, and Unavailable the share answered
	// 503, without being forwarded and without a Retry-After.
	InternalError float64
	Unavailable   float64
	// WatchCut, when positive, ends every watch stream after a random time between half of it
	// and all of it.
	WatchCut time.Duration
}

// Validate says what is wrong with f: a share outside 0 to 1, or shares adding up to more.
func (f Faults) Validate() error {
	total := 0.0
	for name, share := range map[string]float64{"TooManyRequests": f.TooManyRequests, "InternalError": f.InternalError, "Unavailable": f.Unavailable} {
		if share < 0 || share > 1 || math.IsNaN(share) {
			return fmt.Errorf("faultproxy: %s share %v is not between 0 and 1", name, share)
		}
		total += share
	}
	if total > 1 {
		return fmt.Errorf("faultproxy: the error shares add up to %v, more than 1", total)
	}
	if f.RetryAfter < 0 || f.WatchCut < 0 {
		return fmt.Errorf("faultproxy: negative RetryAfter %s or WatchCut %s", f.RetryAfter, f.WatchCut)
	}
	return nil
}

// retryAfterSeconds is the Retry-After of a 429, at least one second.
func (f Faults) retryAfterSeconds() int {
	return max(1, int(f.RetryAfter.Round(time.Second)/time.Second))
}

// answer draws whether a request is answered by the proxy: 0 to forward it, else the code.
func (f Faults) answer(r *rand.Rand) int {
	x := r.Float64()
	switch {
	case x < f.TooManyRequests:
		return 429
	case x < f.TooManyRequests+f.InternalError:
		return 500
	case x < f.TooManyRequests+f.InternalError+f.Unavailable:
		return 503
	}
	return 0
}

// watchCut draws how long a watch stream lives: 0 for as long as it likes.
func (f Faults) watchCut(r *rand.Rand) time.Duration {
	if f.WatchCut <= 0 {
		return 0
	}
	return f.WatchCut/2 + time.Duration(r.Int64N(int64(f.WatchCut/2)+1))
}

// Distribution draws durations.
type Distribution interface {
	// Sample draws one duration from r.
	Sample(r *rand.Rand) time.Duration
}

// LogNormal is a log-normal distribution of durations given by its median and its 99th
// percentile: most requests close to the median, a long tail, as measured latencies of API
// servers look. Samples above Max (ten times the 99th percentile when zero) are cut to it.
type LogNormal struct {
	Median, P99, Max time.Duration
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// Sample draws one duration.
func (d LogNormal) Sample(r *rand.Rand) time.Duration {
	if d.Median <= 0 {
		return 0
	}
	sigma := 0.0
	if d.P99 > d.Median {
		sigma = math.Log(float64(d.P99)/float64(d.Median)) / z99
	}
	sample := time.Duration(float64(d.Median) * math.Exp(sigma*r.NormFloat64()))
	limit := d.Max
	if limit <= 0 {
		limit = 10 * max(d.P99, d.Median)
	}
	return min(sample, limit)
}

// String says what the distribution is, for reports.
func (d LogNormal) String() string {
	return fmt.Sprintf("log-normal, median %s, p99 %s", d.Median, d.P99)
}
