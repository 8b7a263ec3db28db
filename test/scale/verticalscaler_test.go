package scale_test

import (
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
