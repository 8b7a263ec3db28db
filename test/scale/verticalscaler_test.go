package scale_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// verticalScalerResources are what the verticalscaler writes.
var verticalScalerResources = []string{"verticalscalers", "verticalscalers/status", "deployments", "verticalscalercheckpoints", "events"}

// BenchmarkScaleVerticalScaler runs the verticalscaler, as shipped but without usage (the
// control plane serves no metrics.k8s.io: --usage-source=off), over
// SWITCHBOARD_BENCH_SCALE_SCALERS VerticalScalers (default 1,000 and 10,000), each naming a
// Deployment of its own, each size on a fresh control plane. They exist before the manager
// starts; it reports on each (converge: its status observes its generation). Figures per
// VerticalScaler, with its Deployment.
func BenchmarkScaleVerticalScaler(b *testing.B) {
	sizes := sizes(b, "SWITCHBOARD_BENCH_SCALE_SCALERS", []int{1000, 10000}, []int{20, 40})
	bin := testenv.BuildBinary(b, ".")
	var first scenario
	for i, n := range sizes {
		b.Run("scalers="+strconv.Itoa(n), func(b *testing.B) {
			s := measure(b, run{n: n, controllers: []string{"verticalscaler"}, resources: verticalScalerResources, objects: scaledDeployment,
				start: func(cl *cluster, ns string) *testenv.Process {
					return cl.startManager(b, bin, "verticalscaler", ns, "--usage-source=off")
				},
				watch: func(b *testing.B, cl *cluster, ns string) (<-chan time.Time, func()) {
					return cl.watchConverged(b, func() client.ObjectList { return &v1alpha1.VerticalScalerList{} }, ns, n, func(obj client.Object) bool {
						vs := obj.(*v1alpha1.VerticalScaler)
						return vs.Status.ObservedGeneration == vs.Generation
					})
				}})
			s.report(b, "scaler")
			reportGrowthOnce(b, "scaler", i, len(sizes)-1, &first, s)
		})
	}
}

// scaledDeployment is Deployment i of ns, with requests, and a VerticalScaler in Auto naming
// it.
func scaledDeployment(ns string, i int) []client.Object {
	name := fmt.Sprintf("app-%05d", i)
	labels := map[string]string{"app": name}
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}}}},
		&v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.VerticalScalerSpec{DeploymentName: name, UpdateMode: v1alpha1.UpdateModeAuto}},
	}
}

// BenchmarkScaleVerticalScalerPods measures what the verticalscaler's Pod cache costs the
// manager process, the figure its memory limit follows: the manager as shipped with
// --controllers=verticalscaler (--usage-source=off: the control plane serves no
// metrics.k8s.io) over SWITCHBOARD_BENCH_SCALE_PODS running Pods of a busy cluster's shape
// (testenv.BusyPod; default 1,000, 10,000 and 30,000), each size on a fresh control plane. The
// Pods exist before the manager starts, with one VerticalScaler and its Deployment, whose
// reconcile says the caches have synced (the controller starts its workers only then). Per
// size: the settled memory less the same binary's over one Pod, per Pod and in total, and the
// peak resident memory (VmHWM), which the start's list of every Pod sets.
func BenchmarkScaleVerticalScalerPods(b *testing.B) {
	sizes := sizes(b, "SWITCHBOARD_BENCH_SCALE_PODS", []int{1000, 10000, 30000}, []int{20, 40})
	bin := testenv.BuildBinary(b, ".")
	for _, n := range sizes {
		b.Run("pods="+strconv.Itoa(n), func(b *testing.B) {
			loadStart := load1(b)
			cl := newCluster(b)
			ns, single := cl.env.Namespace(b, "scale-"), cl.env.Namespace(b, "single-")
			createPods := func(namespace string, n int) {
				cl.each(b, n, func(ctx context.Context, i int) error {
					return testenv.CreatePod(ctx, cl.client, testenv.BusyPod(namespace, i))
				})
			}
			cl.create(b, 1, func(int) []client.Object { return scaledDeployment(single, 0) })
			cl.create(b, 1, func(int) []client.Object { return scaledDeployment(ns, 0) })
			createPods(single, 1)
			createPods(ns, n)
			start := func(namespace string) (*testenv.Process, time.Duration) {
				began := time.Now()
				p := cl.startManager(b, bin, "verticalscaler", namespace, "--usage-source=off")
				return p, quietAt(b, p, []string{"verticalscaler"}, 0, 1, 30*time.Minute).Sub(began)
			}
			began := time.Now()
			base, _ := start(single)
			p, synced := start(ns)
			s := scenario{n: n, base: settledMemory(b, base, began), mem: settledMemory(b, p, began)}
			peak, err := p.Status("VmHWM")
			if err != nil {
				b.Fatal(err)
			}
			stop(b, base)
			stop(b, p)
			per := s.mem.perObject(s.base, n)
			b.ReportMetric(float64(n), "pods")
			b.ReportMetric(per.heap/1024, "heap-live-KiB/pod")
			b.ReportMetric(per.rss/1024, "VmRSS-KiB/pod")
			b.ReportMetric(per.anon/1024, "RssAnon-KiB/pod")
			b.ReportMetric(s.mem.heap/(1<<20), "heap-live-MiB")
			b.ReportMetric(s.mem.rss/(1<<20), "VmRSS-MiB")
			b.ReportMetric(s.mem.anon/(1<<20), "RssAnon-MiB")
			b.ReportMetric(peak["VmHWM"]/(1<<20), "VmHWM-MiB")
			b.ReportMetric(s.base.rss/(1<<20), "single-VmRSS-MiB")
			b.ReportMetric(synced.Seconds(), "synced-s")
			b.ReportMetric(loadStart, "load1-start")
			b.ReportMetric(load1(b), "load1-end")
			b.Logf("%d Pods: live heap %.2f KiB/Pod, VmRSS %.2f KiB/Pod, RssAnon %.2f KiB/Pod; settled VmRSS %.1f MiB (over one %.1f MiB), RssAnon %.1f MiB, peak %.1f MiB; synced in %s",
				n, per.heap/1024, per.rss/1024, per.anon/1024, s.mem.rss/(1<<20), s.base.rss/(1<<20), s.mem.anon/(1<<20), peak["VmHWM"]/(1<<20), synced.Round(time.Millisecond))
		})
	}
}
