package vpacompare

import (
	"encoding/json"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"

	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// maxCheckpointError is how far the target drawn from a VPA checkpoint read by the
// verticalscaler may be from the one the VPA draws from the same checkpoint, as a fraction. The
// bounds are held to maxRelativeError, as in TestTargetWithinFivePercentOfTheVPA: they differ as
// much from the same history however it was read (rounding up to a millicore where the VPA
// truncates moves a 125m bound by 0.8%).
const maxCheckpointError = 0.01

// TestVPACheckpointCarriesOver: the VPA v1.8.1 recommender's own code writes the checkpoint of
// each trace's history (AggregateContainerState.SaveToCheckpoint) and reads it back
// (LoadFromCheckpoint) for its recommendation; the verticalscaler reads the same checkpoint, as
// the API server stores it (JSON), into its own history, and its first target from it is within
// 1% of the VPA's, CPU and memory, and its bounds within 5%.
func TestVPACheckpointCarriesOver(t *testing.T) {
	for _, tr := range traces() {
		if tr.hasRequests() {
			// The VPA v1.8.1 weighs every CPU sample alike: the histogram it checkpoints has
			// no requests in it, whatever the trace says.
			continue
		}
		t.Run(tr.name, func(t *testing.T) {
			written, err := vpaAggregate(tr, false).SaveToCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			restored := model.NewAggregateContainerState()
			if err := restored.LoadFromCheckpoint(written); err != nil {
				t.Fatal(err)
			}
			want := vpaRecommendation(restored)

			data, err := json.Marshal(written)
			if err != nil {
				t.Fatal(err)
			}
			var stored vpav1.CheckpointStatus
			if err := json.Unmarshal(data, &stored); err != nil {
				t.Fatal(err)
			}
			converted, err := recommender.FromVPACheckpoint("app", &stored)
			if err != nil {
				t.Fatal(err)
			}
			history, err := recommender.LoadContainerCheckpoint(converted)
			if err != nil {
				t.Fatal(err)
			}
			est, ok := history.Estimate(recommender.DefaultPolicy, 1)
			if !ok {
				t.Fatal("no estimate from the VPA's checkpoint")
			}
			pair := func(l corev1.ResourceList) [2]float64 {
				return [2]float64{l.Cpu().AsApproximateFloat64(), l.Memory().AsApproximateFloat64()}
			}
			got := result{target: pair(est.Target), lower: pair(est.LowerBound), upper: pair(est.UpperBound)}
			for _, c := range []struct {
				what      string
				got, want [2]float64
				limit     float64
			}{{"target", got.target, want.target, maxCheckpointError}, {"lower bound", got.lower, want.lower, maxRelativeError},
				{"upper bound", got.upper, want.upper, maxRelativeError}} {
				for i, res := range []string{"cpu", "memory"} {
					g, w := c.got[i], c.want[i]
					t.Logf("%s %s from the checkpoint: ours %s, VPA %s (%+.2f%%)", res, c.what, format(res, g), format(res, w), 100*(g-w)/w)
					if w == 0 || math.Abs(g-w)/w > c.limit {
						t.Errorf("%s %s from the checkpoint: ours %s, VPA %s, more than %.0f%% apart", res, c.what, format(res, g), format(res, w), 100*c.limit)
					}
				}
			}
		})
	}
}
