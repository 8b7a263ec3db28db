package verticalscaler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/internal/testenv"
)

// dayCheckpoint is a checkpoint of VerticalScaler name of the shape a day of reads once a
// minute gives 2 containers of 2 Pods (BenchmarkCheckpointSize in the recommender measures
// 2,201 bytes): 40 CPU and 16 memory buckets per container, and each Pod's state.
func dayCheckpoint(ns, name string, at time.Time) *unstructured.Unstructured {
	micro := metav1.NewMicroTime(at)
	weights := func(n int) []int32 {
		w := make([]int32, n)
		for i := range w {
			w[i] = int32((i*7919 + 13) % 10001)
		}
		return w
	}
	day := metav1.NewTime(at.Truncate(24 * time.Hour))
	var containers []v1alpha1.ContainerCheckpoint
	for _, c := range []string{"app", "proxy"} {
		cc := v1alpha1.ContainerCheckpoint{Name: c, Samples: 2880, FirstSampleTime: &micro, LastSampleTime: &micro,
			CPU:    v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 288000000, FirstBucket: 40, Weights: weights(40)},
			Memory: v1alpha1.HistogramCheckpoint{ReferenceTime: &day, TotalWeightMicros: 200000, FirstBucket: 80, Weights: weights(16)}}
		for p := range 2 {
			cc.Pods = append(cc.Pods, v1alpha1.PodCheckpoint{Name: fmt.Sprintf("%s-7d9f8b6c4-%05d", name, p), LastCPUSampleTime: &micro,
				LastMemorySampleTime: &micro, MemoryWindowEnd: &micro, MemoryPeakBytes: 314572800})
		}
		containers = append(containers, cc)
	}
	cp := &v1alpha1.VerticalScalerCheckpoint{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScalerCheckpoint"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "VerticalScaler", Name: name, UID: "5c7e0c36-4b7f-4d1e-9d5e-3a1f0f6c2b11", Controller: new(true)}}},
		Spec:   v1alpha1.VerticalScalerCheckpointSpec{Target: "Deployment.apps/" + name, DeploymentName: name},
		Status: v1alpha1.VerticalScalerCheckpointStatus{Version: recommender.CheckpointVersion, WriteTime: metav1.NewTime(at), Containers: containers},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cp)
	if err != nil {
		panic(err)
	}
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	return &unstructured.Unstructured{Object: obj}
}

// applyCheckpoint writes cp as the poller does: the whole object by server-side apply, forced.
func applyCheckpoint(ctx context.Context, cp *unstructured.Unstructured) error {
	return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(cp), client.FieldOwner(verticalscaler.ControllerName), client.ForceOwnership)
}

// BenchmarkCheckpointWriteCost measures what checkpoints cost the API server, which the
// default of --checkpoint-writes-per-second is chosen from: its CPU per checkpoint write of the
// size a day of history gives (a first write, which creates it, and a write again, as every
// later one is), against a status write of a VerticalScaler's recommendation, in rounds of
// SWITCHBOARD_BENCH_WRITES (200) each in a rotated order, medians reported; then how many
// checkpoints the 8 writers of a planned stop write in its default timeout, 5 s.
//
//	go test ./controllers/verticalscaler/ -run '^$' -bench CheckpointWriteCost -benchtime=1x
func BenchmarkCheckpointWriteCost(b *testing.B) {
	ctx := context.Background()
	perRound := testenv.BenchSetting("SWITCHBOARD_BENCH_WRITES", 200)
	const rounds = 3
	for b.Loop() {
		ns := env.Namespace(b, "bench-cp-")
		if data, err := json.Marshal(dayCheckpoint(ns, "web", time.Now()).Object); err == nil {
			b.ReportMetric(float64(len(data)), "bytes/checkpoint")
		}
		scalers := make([]*v1alpha1.VerticalScaler, perRound)
		for i := range scalers {
			scalers[i] = &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vs-%d", i)},
				Spec: v1alpha1.VerticalScalerSpec{DeploymentName: fmt.Sprintf("d-%d", i)}}
			if err := env.Client.Create(ctx, scalers[i]); err != nil {
				b.Fatal(err)
			}
		}
		kinds := []struct {
			name  string
			write func(round, i int) error
		}{
			{"checkpoint-create", func(round, i int) error {
				return applyCheckpoint(ctx, dayCheckpoint(ns, fmt.Sprintf("r%d-%d", round, i), time.Now()))
			}},
			{"checkpoint-rewrite", func(round, i int) error {
				return applyCheckpoint(ctx, dayCheckpoint(ns, fmt.Sprintf("r%d-%d", round, i), time.Now().Add(time.Minute)))
			}},
			{"status", func(round, i int) error {
				vs := scalers[i]
				before := vs.DeepCopy()
				vs.Status.Recommendation = &v1alpha1.Recommendation{Target: "Deployment.apps/" + vs.Spec.DeploymentName,
					ContainerRecommendations: []v1alpha1.ContainerRecommendation{{ContainerName: "app",
						Target: list(fmt.Sprintf("%dm", 100+round), "300Mi"), LowerBound: list("50m", "250Mi"), UpperBound: list("1", "1Gi")}}}
				return env.Client.Status().Patch(ctx, vs, client.MergeFrom(before))
			}},
		}
		perCall := map[string][]float64{}
		for round := range rounds {
			for _, k := range testenv.Rotated(kinds, round) {
				ms, err := env.APIServerCPUPerCall(ctx, perRound, func(i int) error { return k.write(round, i) })
				if err != nil {
					b.Fatal(err)
				}
				perCall[k.name] = append(perCall[k.name], ms)
			}
		}
		for _, k := range kinds {
			b.ReportMetric(testenv.Median(perCall[k.name]), "api-cpu-ms/"+k.name)
		}

		// A planned stop: 8 writers, 5 s.
		stopCtx, cancel := context.WithTimeout(ctx, recommender.DefaultCheckpointFlushTimeout)
		var written atomic.Int64
		var writers sync.WaitGroup
		for w := range 8 {
			writers.Go(func() {
				for i := 0; stopCtx.Err() == nil; i++ {
					if applyCheckpoint(stopCtx, dayCheckpoint(ns, fmt.Sprintf("stop-%d-%d", w, i), time.Now())) == nil {
						written.Add(1)
					}
				}
			})
		}
		writers.Wait()
		cancel()
		b.ReportMetric(float64(written.Load()), "checkpoints/stop")
	}
}
