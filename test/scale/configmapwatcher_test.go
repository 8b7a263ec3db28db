package scale_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// workloadKind is one of the configmapwatcher's workload kinds: its controller's name, the
// resource its writes are counted under, and how to make one and list them.
type workloadKind struct {
	controller, resource string
	make                 func(ns, name string, spec corev1.PodSpec) client.Object
	newList              func() client.ObjectList
}

// workloadKinds are the configmapwatcher's four kinds; workload i is of kind i%4.
var workloadKinds = []workloadKind{
	{"configmapwatcher-deployments", "deployments", func(ns, name string, spec corev1.PodSpec) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{Selector: podSelector(name), Template: podTemplate(name, spec)}}
	}, func() client.ObjectList { return &appsv1.DeploymentList{} }},
	{"configmapwatcher-statefulsets", "statefulsets", func(ns, name string, spec corev1.PodSpec) client.Object {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.StatefulSetSpec{ServiceName: name, Selector: podSelector(name), Template: podTemplate(name, spec)}}
	}, func() client.ObjectList { return &appsv1.StatefulSetList{} }},
	{"configmapwatcher-daemonsets", "daemonsets", func(ns, name string, spec corev1.PodSpec) client.Object {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DaemonSetSpec{Selector: podSelector(name), Template: podTemplate(name, spec)}}
	}, func() client.ObjectList { return &appsv1.DaemonSetList{} }},
	{"configmapwatcher-cronjobs", "cronjobs", func(ns, name string, spec corev1.PodSpec) client.Object {
		spec.RestartPolicy = corev1.RestartPolicyOnFailure
		t := podTemplate(name, spec)
		t.Labels = nil
		// Once a year: nothing is to run while the benchmark runs.
		return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: t}}}}
	}, func() client.ObjectList { return &batchv1.CronJobList{} }},
}

func podSelector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
}

func podTemplate(name string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec}
}

// sourcePayload is the data of each ConfigMap and Secret: the size of a small configuration
// file. The configmapwatcher caches no source, so its size moves the API server's figures only.
var sourcePayload = strings.Repeat("x", 1024)

// workload is workload i of ns, opted in, taking its environment from the ConfigMap cm-i and
// the Secret s-i, with those two.
func workload(ns string, i int) []client.Object {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cm-%d", i)}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("s-%d", i)}}},
	}}}}
	w := workloadKinds[i%len(workloadKinds)].make(ns, fmt.Sprintf("w-%05d", i), spec)
	w.SetAnnotations(map[string]string{v1alpha1.ReloadAnnotation: "true"})
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"payload": sourcePayload}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s-%d", i)}, Data: map[string][]byte{"payload": []byte(sourcePayload)}},
		w,
	}
}

// BenchmarkScaleConfigMapWatcher runs the configmapwatcher, as shipped, over
// SWITCHBOARD_BENCH_SCALE_WORKLOADS opted-in workloads (default 1,000, 10,000 and 30,000),
// spread over Deployments, StatefulSets, DaemonSets and CronJobs, each taking its environment
// from a ConfigMap and a Secret of its own (so as many of each), each size on a fresh control
// plane. The workloads exist before the manager starts, which records a baseline on each
// (converge: one write each, no roll). Figures per workload; the ConfigMaps and Secrets are not
// cached, so the memory per workload is what a workload costs.
func BenchmarkScaleConfigMapWatcher(b *testing.B) {
	sizes := sizes(b, "SWITCHBOARD_BENCH_SCALE_WORKLOADS", []int{1000, 10000, 30000}, []int{20, 40})
	bin := testenv.BuildBinary(b, ".")
	var names, resources []string
	for _, k := range workloadKinds {
		names, resources = append(names, k.controller), append(resources, k.resource)
	}
	resources = append(resources, "events")
	var first scenario
	for i, n := range sizes {
		b.Run("workloads="+strconv.Itoa(n), func(b *testing.B) {
			var cl *cluster
			var ns string
			s := measure(b, run{n: n, controllers: names, resources: resources, objects: workload,
				start: func(c *cluster, namespace string) *testenv.Process {
					return c.startManager(b, bin, "configmapwatcher", namespace)
				},
				prepare: func(c *cluster, namespace string) { cl, ns = c, namespace }})
			if recorded := cl.recorded(b, ns); recorded != n {
				b.Fatalf("%d of %d workloads recorded", recorded, n)
			}
			s.report(b, "workload")
			reportGrowthOnce(b, "workload", i, len(sizes)-1, &first, s)
		})
	}
}

// recorded counts the workloads of ns that carry the configmapwatcher's record.
func (cl *cluster) recorded(b *testing.B, ns string) int {
	b.Helper()
	count := 0
	for _, k := range workloadKinds {
		list := k.newList()
		if err := cl.client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if err := apimeta.EachListItem(list, func(o runtime.Object) error {
			if o.(client.Object).GetAnnotations()[v1alpha1.ConfigStateAnnotation] != "" {
				count++
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return count
}
