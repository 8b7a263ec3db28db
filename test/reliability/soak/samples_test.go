package soak

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
)

// rising returns an hour of samples every 10 s whose RSS and goroutines grow linearly by
// growth over the hour, after a start at 60 MiB and 200 goroutines; the queue is busy for the
// first second of every minute.
func rising(growth float64) []Sample {
	var out []Sample
	for at := 10 * time.Second; at <= time.Hour; at += 10 * time.Second {
		f := 1 + growth*at.Hours()
		depth := 0.0
		if at%time.Minute == 10*time.Second {
			depth = 3
		}
		out = append(out, Sample{At: at, RSS: 60 * mib * f, Heap: 12 * mib, Goroutines: 200 * f, OpenWatches: 11, QueueDepth: depth, RequestsPerSecond: 2})
	}
	return out
}

func TestSummarizeMeasuresGrowthAfterTheWarmup(t *testing.T) {
	bursts := []Burst{{At: 0, Drained: 2 * time.Second}, {At: 30 * time.Second, Drained: 40 * time.Second}, {At: time.Minute}}
	s, err := Summarize(rising(0.12), bursts, 30*time.Second, 10*time.Minute, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// From minute 10 to 15 against minute 55 to 60: medians at 12.5 and 57.5 minutes.
	want := (1+0.12*57.5/60)/(1+0.12*12.5/60) - 1
	if d := s.RSSGrowth - want; d > 0.002 || d < -0.002 {
		t.Errorf("RSS growth %.4f, want %.4f", s.RSSGrowth, want)
	}
	if d := s.RSSSlope - 0.12/(1+0.12*12.5/60); d > 0.005 || d < -0.005 {
		t.Errorf("RSS slope %.4f per hour", s.RSSSlope)
	}
	if s.Drained != 2 || s.WithinInterval != 1 || s.Bursts != 3 || s.LongestDrain != 40*time.Second || s.MaxQueueDepth != 3 {
		t.Errorf("bursts %d drained %d (%d within the interval), longest %s, max depth %v", s.Bursts, s.Drained, s.WithinInterval, s.LongestDrain, s.MaxQueueDepth)
	}
	failures := strings.Join(s.Failures(), "\n")
	for _, want := range []string{"RSS grew by 8.", "goroutines grew by 8.", "emptied after 2 of 3 bursts"} {
		if !strings.Contains(failures, want) {
			t.Errorf("failures %q do not say %q", failures, want)
		}
	}
	flat, err := Summarize(rising(0), nil, 30*time.Second, 10*time.Minute, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if f := flat.Failures(); len(f) != 0 {
		t.Errorf("flat samples fail: %v", f)
	}
	if _, err := Summarize(rising(0)[:60], nil, 30*time.Second, 10*time.Minute, 5*time.Minute); err == nil {
		t.Error("ten minutes of samples summarized with a warm-up of ten minutes")
	}
}

func TestReportAndPicture(t *testing.T) {
	samples := rising(0.01)
	s, err := Summarize(samples, []Burst{{Drained: time.Second}}, 30*time.Second, 10*time.Minute, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var picture bytes.Buffer
	if err := WritePNG(&picture, samples, "test", 10, 6*vg.Inch, 8*vg.Inch); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&picture)
	if err != nil {
		t.Fatalf("the picture is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 500 {
		t.Errorf("picture of %v", b)
	}
	var report bytes.Buffer
	run := Run{Command: "make soak DURATION=1h", Commit: "abc1234", Date: "2026-12-02T00:00:00Z", Ops: map[string]int{"myapp-create": 3}}
	if err := WriteReport(&report, run, s, "soak.png"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`make soak DURATION=1h`", "| resident memory (VmRSS) | 60.1 MiB | 60.6 MiB | +0.8% |", "Every target met.", "](soak.png)", "myapp-create 3"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, report.String())
		}
	}
}

func TestDrained(t *testing.T) {
	began := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	readings := func(idleFrom time.Duration) []queueReading {
		var out []queueReading
		for at := 500 * time.Millisecond; at < 3*burstEvery; at += time.Second {
			out = append(out, queueReading{at: began.Add(at), idle: at < time.Second || at >= idleFrom})
		}
		return out
	}
	for _, tc := range []struct {
		idleFrom time.Duration
		last     bool
		want     time.Duration
	}{
		{4 * time.Second, false, 4500 * time.Millisecond}, // the idle reading before a second is the burst's events not yet queued
		{45 * time.Second, false, 45500 * time.Millisecond},
		{61 * time.Second, false, 0}, // not before the burst after next
		{61 * time.Second, true, 61500 * time.Millisecond},
	} {
		if got := drained(readings(tc.idleFrom), began, tc.last); got != tc.want {
			t.Errorf("idle from %s (last %v): drained after %s, want %s", tc.idleFrom, tc.last, got, tc.want)
		}
	}
}
