package testenv

import (
	"context"
	"slices"
)

// Median returns the median of xs (the mean of the middle two when their number is even): what
// a benchmark of several rounds reports.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Rotated returns a copy of s whose first n%len(s) items have moved to its end: the order in
// which round n of a benchmark runs its modes, so that a drift of the API server's cost over a
// run does not always reach the same mode last.
func Rotated[T any](s []T, n int) []T {
	n %= len(s)
	return append(slices.Clone(s[n:]), s[:n]...)
}

// APIServerCPUPerCall calls do(0..n-1), one after the other, and returns the API server's CPU
// time per call in milliseconds.
func (e *Env) APIServerCPUPerCall(ctx context.Context, n int, do func(i int) error) (float64, error) {
	before, err := e.APIServerCPUSeconds(ctx)
	if err != nil {
		return 0, err
	}
	for i := range n {
		if err := do(i); err != nil {
			return 0, err
		}
	}
	after, err := e.APIServerCPUSeconds(ctx)
	if err != nil {
		return 0, err
	}
	return (after - before) * 1000 / float64(n), nil
}
