// Package soak runs the manager for a long time under steady churn and records what would show a
// leak: resident memory, Go heap, goroutines, open watches, work-queue depths and API requests
// per second, every ten seconds, then summarizes and draws them (gonum.org/v1/plot). TestSoak
// runs it on the local cluster (`make soak DURATION=1h`); the summary and the picture are
// what docs/operations/reliability.md shows.
package soak

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// Sample is one reading of the manager.
type Sample struct {
	// At is the time since the soak started.
	At time.Duration
	// RSS is the resident memory (VmRSS), Heap the Go heap in use (go_memstats_heap_inuse_bytes),
	// both in bytes.
	RSS, Heap float64
	// Goroutines is go_goroutines.
	Goroutines float64
	// OpenWatches is the watch streams the manager holds open against the API server.
	OpenWatches float64
	// QueueDepth is the requests waiting in every controller's work queue, summed: the deepest
	// of the readings taken every second since the last sample (a burst is over in seconds).
	QueueDepth float64
	// RequestsPerSecond is the API requests the manager sent per second since the last sample.
	RequestsPerSecond float64
}

// Burst is one burst of churn and how long the work queues took to empty after it.
type Burst struct {
	// At is when the burst began, since the soak started.
	At time.Duration
	// Operations is how many operations it made.
	Operations int
	// Drained is how long after the burst began every work queue was first seen empty with
	// every worker idle; zero when they were not before the burst after next.
	Drained time.Duration
}

// Summary is what the samples say about growth, after a warm-up.
type Summary struct {
	// Duration is how long the soak ran, Warmup what it left out, Window how long each
	// median's stretch is, Interval the time between two bursts.
	Duration, Warmup, Window, Interval time.Duration
	// Samples counts the samples read.
	Samples int
	// The medians of the first window after the warm-up (start) and of the last window (end),
	// and the growth from one to the other, as a fraction of the start.
	RSSStart, RSSEnd, RSSGrowth                      float64
	GoroutinesStart, GoroutinesEnd, GoroutinesGrowth float64
	HeapStart, HeapEnd                               float64
	// RSSSlope is the least-squares slope of RSS after the warm-up, per hour, as a fraction of
	// RSSStart: a second view of the growth, less sensitive to where the windows fall.
	RSSSlope, GoroutinesSlope float64
	// MaxQueueDepth is the deepest any sample saw; WatchesMin and WatchesMax the range of open
	// watches; RequestsPerSecond the mean.
	MaxQueueDepth, WatchesMin, WatchesMax, RequestsPerSecond float64
	// Bursts counts the bursts, Drained those after which the queues emptied, and LongestDrain
	// the longest time that took; WithinInterval those that emptied before the next burst.
	Bursts, Drained, WithinInterval int
	LongestDrain                    time.Duration
}

// Summarize reads the samples after warmup: the first and last window of that stretch, the
// slope over it, and the bursts, which came every interval.
func Summarize(samples []Sample, bursts []Burst, interval, warmup, window time.Duration) (Summary, error) {
	s := Summary{Warmup: warmup, Window: window, Interval: interval, Samples: len(samples), Bursts: len(bursts)}
	if len(samples) == 0 {
		return s, fmt.Errorf("no samples")
	}
	s.Duration = samples[len(samples)-1].At
	var after []Sample
	for _, x := range samples {
		if x.At >= warmup {
			after = append(after, x)
		}
	}
	if len(after) < 2 || after[len(after)-1].At-after[0].At < 2*window {
		return s, fmt.Errorf("%d samples over %s after a warm-up of %s: too few for two windows of %s", len(after), s.Duration, warmup, window)
	}
	first := func(x Sample) bool { return x.At < after[0].At+window }
	last := func(x Sample) bool { return x.At > s.Duration-window }
	rss := func(x Sample) float64 { return x.RSS }
	goroutines := func(x Sample) float64 { return x.Goroutines }
	heap := func(x Sample) float64 { return x.Heap }
	s.RSSStart, s.RSSEnd = median(after, first, rss), median(after, last, rss)
	s.GoroutinesStart, s.GoroutinesEnd = median(after, first, goroutines), median(after, last, goroutines)
	s.HeapStart, s.HeapEnd = median(after, first, heap), median(after, last, heap)
	s.RSSGrowth = s.RSSEnd/s.RSSStart - 1
	s.GoroutinesGrowth = s.GoroutinesEnd/s.GoroutinesStart - 1
	s.RSSSlope = slopePerHour(after, rss) / s.RSSStart
	s.GoroutinesSlope = slopePerHour(after, goroutines) / s.GoroutinesStart
	s.WatchesMin = samples[0].OpenWatches
	for _, x := range samples {
		s.MaxQueueDepth = max(s.MaxQueueDepth, x.QueueDepth)
		s.WatchesMin, s.WatchesMax = min(s.WatchesMin, x.OpenWatches), max(s.WatchesMax, x.OpenWatches)
		s.RequestsPerSecond += x.RequestsPerSecond / float64(len(samples))
	}
	for _, b := range bursts {
		if b.Drained > 0 {
			s.Drained++
			s.LongestDrain = max(s.LongestDrain, b.Drained)
		}
		if b.Drained > 0 && b.Drained <= interval {
			s.WithinInterval++
		}
	}
	return s, nil
}

func median(samples []Sample, keep func(Sample) bool, value func(Sample) float64) float64 {
	var xs []float64
	for _, x := range samples {
		if keep(x) {
			xs = append(xs, value(x))
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// slopePerHour is the least-squares slope of value over time, per hour.
func slopePerHour(samples []Sample, value func(Sample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, x := range samples {
		t := x.At.Hours()
		v := value(x)
		n++
		sx += t
		sy += v
		sxx += t * t
		sxy += t * v
	}
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

// WriteCSV writes the samples as CSV, in MiB where the unit is bytes.
func WriteCSV(w io.Writer, samples []Sample) error {
	out := csv.NewWriter(w)
	if err := out.Write([]string{"seconds", "rss_mib", "heap_mib", "goroutines", "open_watches", "queue_depth", "requests_per_second"}); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	for _, x := range samples {
		if err := out.Write([]string{f(x.At.Seconds()), f(x.RSS / mib), f(x.Heap / mib), f(x.Goroutines), f(x.OpenWatches), f(x.QueueDepth), f(x.RequestsPerSecond)}); err != nil {
			return err
		}
	}
	out.Flush()
	return out.Error()
}

const mib = 1 << 20
