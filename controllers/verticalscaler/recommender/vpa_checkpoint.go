package recommender

import (
	"fmt"
	"math"
	"strconv"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
)

// FromVPACheckpoint is the history a VerticalPodAutoscalerCheckpoint of container name holds,
// as a checkpoint of Switchboard's own: the VPA recommender keeps the same histograms (the same
// buckets, half-life and relative weights), so that the conversion only changes the encoding.
// A checkpoint of another version of the VPA's encoding, or one whose buckets do not parse, is
// an error that says why.
func FromVPACheckpoint(name string, status *vpav1.CheckpointStatus) (v1alpha1.ContainerCheckpoint, error) {
	if status.Version != vpav1.CheckpointVersion {
		return v1alpha1.ContainerCheckpoint{}, fmt.Errorf("container %s: VPA checkpoint version %q, this manager reads %q", name, status.Version, vpav1.CheckpointVersion)
	}
	cpu, err := fromVPAHistogram(status.CPUHistogram)
	if err != nil {
		return v1alpha1.ContainerCheckpoint{}, fmt.Errorf("container %s: cpuHistogram: %w", name, err)
	}
	memory, err := fromVPAHistogram(status.MemoryHistogram)
	if err != nil {
		return v1alpha1.ContainerCheckpoint{}, fmt.Errorf("container %s: memoryHistogram: %w", name, err)
	}
	return v1alpha1.ContainerCheckpoint{Name: name, Samples: status.TotalSamplesCount, FirstSampleTime: microTime(fromTime(status.FirstSampleStart)),
		LastSampleTime: microTime(fromTime(status.LastSampleStart)), CPU: cpu, Memory: memory}, nil
}

// fromVPAHistogram is a VPA histogram checkpoint in Switchboard's compact form: the weights by
// bucket index become a run of weights from the first bucket on.
func fromVPAHistogram(in vpav1.HistogramCheckpoint) (v1alpha1.HistogramCheckpoint, error) {
	weights := make(map[int]int32, len(in.BucketWeights))
	first, last := math.MaxInt, -1
	for key, w := range in.BucketWeights {
		bucket, err := strconv.Atoi(key)
		if err != nil || bucket < 0 {
			return v1alpha1.HistogramCheckpoint{}, fmt.Errorf("bucket %q is not a bucket index", key)
		}
		if w < 0 || w > MaxCheckpointWeight {
			return v1alpha1.HistogramCheckpoint{}, fmt.Errorf("bucket %d has weight %d, want 0 to %d", bucket, w, MaxCheckpointWeight)
		}
		if w == 0 {
			continue
		}
		weights[bucket] = int32(w)
		first, last = min(first, bucket), max(last, bucket)
	}
	if last < 0 {
		return v1alpha1.HistogramCheckpoint{}, nil
	}
	if in.TotalWeight <= 0 || in.TotalWeight*weightMicros >= maxTotalMicros || math.IsNaN(in.TotalWeight) {
		return v1alpha1.HistogramCheckpoint{}, fmt.Errorf("total weight %g", in.TotalWeight)
	}
	out := v1alpha1.HistogramCheckpoint{ReferenceTime: in.ReferenceTimestamp, TotalWeightMicros: int64(math.Round(in.TotalWeight * weightMicros)),
		FirstBucket: int32(first), Weights: make([]int32, last-first+1)}
	for bucket, w := range weights {
		out.Weights[bucket-first] = w
	}
	return out, nil
}
