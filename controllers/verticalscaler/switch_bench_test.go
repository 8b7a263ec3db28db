package verticalscaler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// fakeKubelet plays the kubelet's part in the resizes of the Pods of ns until ctx ends, as
// kwok's Stages do on the local cluster: a Pod whose spec asks for other requests than its
// status reports gets them in its status, its container still running and never restarted.
func fakeKubelet(b *testing.B, ctx context.Context, ns string) {
	b.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for e := range w.ResultChan() {
			pod, ok := e.Object.(*corev1.Pod)
			if !ok || e.Type != watch.Modified || pod.DeletionTimestamp != nil || len(pod.Status.ContainerStatuses) == 0 {
				continue
			}
			s := &pod.Status.ContainerStatuses[0]
			want := pod.Spec.Containers[0].Resources
			if s.Resources != nil && equality.Semantic.DeepEqual(s.Resources.Requests, want.Requests) {
				continue
			}
			s.Resources, s.AllocatedResources = want.DeepCopy(), want.Requests.DeepCopy()
			// A conflict means a newer version, whose event comes next.
			_ = c.Status().Update(ctx, pod)
		}
	}()
}

// switchRound is what one switch of every workload to InPlaceOrRecreate did.
type switchRound struct {
	seconds                             float64
	restarted, peakUnavailable, resized int
	apiServerCPU                        float64
}

// BenchmarkSwitchToInPlace switches SWITCHBOARD_BENCH_WORKLOADS workloads (100; 5 under
// SWITCHBOARD_BENCH_SMOKE) of 3 running Pods each, recommended in Off mode, to
// InPlaceOrRecreate at once, with each of several --pod-update-rate-limit values (burst as
// large), on envtest with a fake kubelet (fakeKubelet) that reports each resize done. Every Pod
// requests less than the recommendation's lower bound, so every one is resized. It reports, per
// rate: the Pods restarted or replaced (the target is 0: every resize is feasible), the most Pods
// unavailable at once, the seconds from the switch until every VerticalScaler says Applied, and
// the API server's CPU seconds meanwhile. The default rate is chosen from it
// (docs/performance.md).
//
//	go test ./controllers/verticalscaler/ -run '^$' -bench SwitchToInPlace -benchtime=1x
func BenchmarkSwitchToInPlace(b *testing.B) {
	workloads := testenv.BenchSetting("SWITCHBOARD_BENCH_WORKLOADS", 100)
	rates := []int{5, 10, 20, 0}
	for _, rate := range rates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			for b.Loop() {
				r := switchToInPlace(b, workloads, rate)
				b.ReportMetric(float64(r.restarted), "pods-restarted")
				b.ReportMetric(float64(r.peakUnavailable), "peak-pods-unavailable")
				b.ReportMetric(r.seconds, "seconds-to-all-applied")
				b.ReportMetric(float64(r.resized), "pods-resized")
				b.ReportMetric(r.apiServerCPU, "api-cpu-seconds")
			}
		})
	}
}

// switchToInPlace runs one round of BenchmarkSwitchToInPlace with workloads workloads and the
// rate limit rate (0: none).
func switchToInPlace(b *testing.B, workloads, rate int) switchRound {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(b, "bench-switch-")
	fakeKubelet(b, ctx, ns)
	createDeployments(b, ns, workloads)
	var mu sync.Mutex
	original := map[types.UID]bool{}
	inParallel(b, 3*workloads, func(i int) error {
		pod := runningPod(b, ns, fmt.Sprintf("d-%d", i/3), fmt.Sprintf("d-%d-%d", i/3, i%3), list("100m", "100Mi"), "cpu=500m,memory=300Mi")
		mu.Lock()
		defer mu.Unlock()
		original[pod.UID] = true
		return nil
	})
	createScalers(b, ns, workloads)
	env.StartManager(b, "--controllers=verticalscaler", "--resync-interval=0", "--usage-source=pod-annotations", "--usage-interval=1s",
		"--watch-namespaces="+ns, fmt.Sprintf("--pod-update-rate-limit=%d", rate), fmt.Sprintf("--pod-update-rate-burst=%d", max(rate, 1)))
	// Every workload recommended first, in Off mode.
	testenv.Poll(b, 5*time.Minute, time.Second, func() error {
		var list v1alpha1.VerticalScalerList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		n := 0
		for _, vs := range list.Items {
			if meta.IsStatusConditionTrue(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided) {
				n++
			}
		}
		if n < workloads {
			return fmt.Errorf("%d of %d VerticalScalers recommend", n, workloads)
		}
		return nil
	})

	cpuBefore, err := env.APIServerCPUSeconds(ctx)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	inParallel(b, workloads, func(i int) error {
		vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vs-%d", i)}}
		return env.Client.Patch(ctx, vs, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"updateMode":"InPlaceOrRecreate"}}`)))
	})
	var r switchRound
	testenv.Poll(b, 10*time.Minute, 500*time.Millisecond, func() error {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		unavailable, restarted, resized := 0, 0, 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || !original[p.UID] || p.Status.ContainerStatuses[0].RestartCount > 0 {
				restarted++
			}
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			if !ready || p.DeletionTimestamp != nil {
				unavailable++
			}
			if p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 {
				resized++
			}
		}
		r.restarted, r.resized = restarted+(3*workloads-len(pods.Items)), resized
		r.peakUnavailable = max(r.peakUnavailable, unavailable)
		var list v1alpha1.VerticalScalerList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		applied := 0
		for _, vs := range list.Items {
			if meta.IsStatusConditionTrue(vs.Status.Conditions, v1alpha1.ConditionApplied) && vs.Spec.UpdateMode == v1alpha1.UpdateModeInPlaceOrRecreate {
				applied++
			}
		}
		if applied < workloads {
			return fmt.Errorf("%d of %d VerticalScalers applied, %d Pods resized", applied, workloads, resized)
		}
		return nil
	})
	r.seconds = time.Since(start).Seconds()
	cpuAfter, err := env.APIServerCPUSeconds(ctx)
	if err != nil {
		b.Fatal(err)
	}
	r.apiServerCPU = cpuAfter - cpuBefore
	return r
}
