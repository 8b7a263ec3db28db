package recommender

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
)

func TestFromVPACheckpoint(t *testing.T) {
	day := metav1.NewTime(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC))
	first, last := metav1.NewTime(day.Add(-48*time.Hour)), metav1.NewTime(day.Add(time.Hour))
	good := vpav1.CheckpointStatus{Version: vpav1.CheckpointVersion, TotalSamplesCount: 42, FirstSampleStart: &first, LastSampleStart: &last,
		CPUHistogram:    vpav1.HistogramCheckpoint{ReferenceTimestamp: &day, TotalWeight: 4.2, BucketWeights: map[string]int64{"12": 10000, "9": 5000, "10": 0}},
		MemoryHistogram: vpav1.HistogramCheckpoint{}}
	got, err := FromVPACheckpoint("app", &good)
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.ContainerCheckpoint{Name: "app", Samples: 42, FirstSampleTime: new(metav1.NewMicroTime(first.Time)), LastSampleTime: new(metav1.NewMicroTime(last.Time)),
		CPU: v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 4_200_000, FirstBucket: 9, Weights: []int32{5000, 0, 0, 10000}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := LoadContainerCheckpoint(got); err != nil {
		t.Errorf("loading the converted checkpoint: %v", err)
	}

	for _, tc := range []struct {
		name   string
		change func(*vpav1.CheckpointStatus)
		want   string
	}{
		{"another version", func(s *vpav1.CheckpointStatus) { s.Version = "v2" }, `version "v2"`},
		{"a bucket that is not a number", func(s *vpav1.CheckpointStatus) { s.CPUHistogram.BucketWeights["x"] = 1 }, `bucket "x"`},
		{"a weight past the heaviest", func(s *vpav1.CheckpointStatus) { s.CPUHistogram.BucketWeights["3"] = 10001 }, "weight 10001"},
		{"weights without a total", func(s *vpav1.CheckpointStatus) { s.CPUHistogram.TotalWeight = 0 }, "total weight 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := good
			bad.CPUHistogram.BucketWeights = map[string]int64{"12": 10000}
			tc.change(&bad)
			if _, err := FromVPACheckpoint("app", &bad); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
