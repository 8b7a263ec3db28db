package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/internal/testenv"
)

// The usage kwok emulates for every container of the test's Pods, from the Pods' annotations
// (hack/tools/kwok/metrics).
const (
	cpuUsageAnnotation    = "kwok.x-k8s.io/usage-cpu"
	memoryUsageAnnotation = "kwok.x-k8s.io/usage-memory"
)

// TestMetricsPipeline runs the verticalscaler on the local cluster's real metrics pipeline:
// kwok emulates the kubelet's resource metrics of Pods with known usage, metrics-server scrapes
// them, and the manager, as its ServiceAccount with the shipped RBAC, reads PodMetrics from
// metrics.k8s.io through kube-apiserver's aggregation layer. The recommendation must be what
// the recommender makes of that usage, and Auto mode must roll the Deployment exactly once with
// it: the requests then match the recommendation, and a write is allowed only once per
// MinApplyInterval anyway.
func TestMetricsPipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cpu, memory := resource.MustParse("200m"), resource.MustParse("300Mi")
	usage := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory}
	c := newCluster(t)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := testenv.Namespace(t, c.admin, "e2e-metrics-")

	d := usageDeployment(ns, "web", 2, cpu, memory)
	if err := c.admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	vs := &v1alpha1.VerticalScaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: d.Name, UpdateMode: v1alpha1.UpdateModeAuto},
	}
	if err := c.admin.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	// Reading usage every 5 s instead of every minute keeps the test short; metrics-server
	// still measures every 15 s, and a measurement read twice counts once.
	began := time.Now()
	m := startManager(t, kubeconfig, args, "--usage-interval=5s")

	// metrics-server serves the emulated usage: the first link of the chain, checked on its own
	// so that a failure says where the chain broke. It takes three scrapes of a new Pod, because
	// metrics-server drops a first CPU counter of zero, where kwok's starts; on a busy machine
	// that can be well over a minute.
	selector := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	eventually(t, 3*time.Minute, func() error {
		return checkPodMetrics(ctx, c, ns, selector, int(*d.Spec.Replicas), cpu, memory)
	})
	t.Logf("metrics.k8s.io serves the usage of both Pods %s after the manager started", time.Since(began).Round(time.Second))

	// The recommendation is the recommender's estimate from that usage. metrics-server's CPU
	// is a rate between two scrapes, kwok timing the counter and metrics-server the window, so a
	// slow scrape on a busy machine puts a sample a few percent off; 10% either way (two
	// histogram buckets) covers it, and still catches a missing safety margin (15%).
	low, high := estimate(t, cpu, memory, 0.9), estimate(t, cpu, memory, 1.1)
	var target corev1.ResourceList
	eventually(t, time.Minute, func() error {
		running(t, m)
		got := &v1alpha1.VerticalScaler{}
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(vs), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionRecommendationProvided) {
			return fmt.Errorf("RecommendationProvided is not True: %v", got.Status.Conditions)
		}
		target = got.Status.Recommendation.ContainerRecommendations[0].Target
		return nil
	})
	t.Logf("recommendation %s after the manager started: cpu %s, memory %s (usage %s, %s)",
		time.Since(began).Round(time.Second), fmtQ(target, corev1.ResourceCPU), fmtQ(target, corev1.ResourceMemory), cpu.String(), memory.String())
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if got := target[r]; got.Cmp(low[r]) < 0 || got.Cmp(high[r]) > 0 {
			t.Errorf("recommended %s %s, want between %s and %s: the p%.0f of usage %s plus %.0f%%, give or take 10%%",
				r, got.String(), fmtQ(low, r), fmtQ(high, r), recommender.TargetPercentile*100, fmtQ(usage, r), recommender.SafetyMarginFraction*100)
		}
	}

	// Auto mode rolls the Deployment with the recommended requests: a new ReplicaSet whose Pods
	// are all ready.
	eventually(t, 90*time.Second, func() error {
		running(t, m)
		return checkRolledOutWith(ctx, c, d, target)
	})
	t.Logf("rolled out with the recommendation %s after the manager started", time.Since(began).Round(time.Second))

	// Exactly once: the new Pods' usage, measured and read again, changes nothing. Waiting until
	// both new Pods have metrics and a few reads more makes sure the manager saw them.
	eventually(t, 3*time.Minute, func() error {
		return checkPodMetrics(ctx, c, ns, selector, int(*d.Spec.Replicas), cpu, memory)
	})
	time.Sleep(15 * time.Second)
	running(t, m)
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	var sets appsv1.ReplicaSetList
	if err := c.admin.List(ctx, &sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if d.Generation != 2 || len(sets.Items) != 2 {
		t.Errorf("Deployment generation %d and %d ReplicaSets, want 2 and 2: one rollout, by the verticalscaler", d.Generation, len(sets.Items))
	}
	if err := checkRolledOutWith(ctx, c, d, target); err != nil {
		t.Error(err)
	}
}

// usageDeployment returns a Deployment whose Pods kwok gives the usage cpu and memory, with
// requests well below it (100m and 128Mi), so that the recommendation is news.
func usageDeployment(ns, name string, replicas int32, cpu, memory resource.Quantity) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					cpuUsageAnnotation:    cpu.String(),
					memoryUsageAnnotation: memory.String(),
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "nginx:1.27",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					}},
				}}},
			},
		},
	}
}

// checkPodMetrics checks that metrics.k8s.io has the usage of pods Pods matching selector, each
// with the usage kwok emulates (CPU within 5%: a rate between two scrapes; memory exact).
func checkPodMetrics(ctx context.Context, c *testCluster, ns string, selector labels.Selector, pods int, cpu, memory resource.Quantity) error {
	var running corev1.PodList
	if err := c.admin.List(ctx, &running, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return err
	}
	current := map[string]bool{}
	for _, p := range running.Items {
		if p.DeletionTimestamp == nil {
			current[p.Name] = true
		}
	}
	usage, err := recommender.PodMetricsReader{Reader: c.admin}.PodUsage(ctx, ns, selector)
	if err != nil {
		return err
	}
	measured := 0
	for _, u := range usage {
		if !current[u.Pod] {
			continue
		}
		got := u.Containers["app"]
		gotCPU, gotMemory := got[corev1.ResourceCPU], got[corev1.ResourceMemory]
		if ratio := gotCPU.AsApproximateFloat64() / cpu.AsApproximateFloat64(); ratio < 0.95 || ratio > 1.05 {
			return fmt.Errorf("pod %s uses %s CPU, want %s", u.Pod, gotCPU.String(), cpu.String())
		}
		if gotMemory.Cmp(memory) != 0 {
			return fmt.Errorf("pod %s uses %s memory, want %s", u.Pod, gotMemory.String(), memory.String())
		}
		measured++
	}
	if len(current) != pods || measured != pods {
		return fmt.Errorf("metrics for %d of %d Pods (%d running)", measured, pods, len(current))
	}
	return nil
}

// estimate returns the recommender's target for a container that always used cpu and memory
// times factor. Every sample weighs the same whatever the request, so none is given.
func estimate(t *testing.T, cpu, memory resource.Quantity, factor float64) corev1.ResourceList {
	t.Helper()
	h := recommender.NewContainerHistory()
	scaled := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(float64(cpu.MilliValue())*factor), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(float64(memory.Value())*factor), resource.BinarySI),
	}
	now := time.Now()
	for i := range 10 {
		h.AddSample("pod", scaled, nil, now.Add(time.Duration(i)*15*time.Second))
	}
	e, ok := h.Estimate(recommender.DefaultPolicy, 1)
	if !ok {
		t.Fatal("no estimate from 10 samples")
	}
	return e.Target
}

// checkRolledOutWith checks that d's Pods run with target as their requests: the template
// carries them, the Deployment controller observed it and every replica is updated and ready.
func checkRolledOutWith(ctx context.Context, c *testCluster, d *appsv1.Deployment, target corev1.ResourceList) error {
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		return err
	}
	requests := d.Spec.Template.Spec.Containers[0].Resources.Requests
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if got, want := requests[r], target[r]; got.Cmp(want) != 0 {
			return fmt.Errorf("Deployment requests %s %s, want the recommended %s", r, got.String(), want.String())
		}
	}
	st := d.Status
	if st.ObservedGeneration != d.Generation || st.UpdatedReplicas != *d.Spec.Replicas || st.ReadyReplicas != *d.Spec.Replicas || st.Replicas != *d.Spec.Replicas {
		return fmt.Errorf("Deployment %s: generation %d observed %d, %d replicas, %d updated, %d ready", d.Name, d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas)
	}
	return nil
}

// running fails the test at once when the manager has exited.
func running(t *testing.T, m *testenv.Process) {
	t.Helper()
	if exited, err := m.Exited(); exited {
		t.Fatalf("the manager exited: %v", err)
	}
}

// fmtQ formats one resource of list.
func fmtQ(list corev1.ResourceList, r corev1.ResourceName) string {
	q := list[r]
	return q.String()
}
