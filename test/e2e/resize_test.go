package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// resizedWorkload is a workload of the resize test and its VerticalScaler.
type resizedWorkload struct {
	obj client.Object
	vs  *v1alpha1.VerticalScaler
	// template is the workload's Pod template as created; generation its generation then.
	template   corev1.PodTemplateSpec
	generation int64
}

// templateOfWorkload returns w's Pod template.
func templateOfWorkload(w client.Object) corev1.PodTemplateSpec {
	switch o := w.(type) {
	case *appsv1.Deployment:
		return o.Spec.Template
	case *appsv1.StatefulSet:
		return o.Spec.Template
	case *appsv1.DaemonSet:
		return o.Spec.Template
	}
	panic(fmt.Sprintf("no template in %T", w))
}

// usagePodSpec is a container that requests 100m and 128Mi, and that kwok's annotations on its
// template make use cpu and memory.
func usageTemplate(name string, cpu, memory resource.Quantity) corev1.PodTemplateSpec {
	t := templateOf(name, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}})
	t.Annotations = map[string]string{cpuUsageAnnotation: cpu.String(), memoryUsageAnnotation: memory.String()}
	return t
}

// livePods returns the Pods of w that are not being deleted, by UID.
func livePods(t *testing.T, c *testCluster, w client.Object) map[types.UID]*corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.admin.List(context.Background(), &pods, client.InNamespace(w.GetNamespace()), client.MatchingLabels{"app": w.GetName()}); err != nil {
		t.Fatal(err)
	}
	out := map[types.UID]*corev1.Pod{}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			out[pods.Items[i].UID] = &pods.Items[i]
		}
	}
	return out
}

// checkResizedInPlace checks that every Pod of w is one of uids (none replaced), never
// restarted, asks for target and runs with it, as kwok reports.
func checkResizedInPlace(t *testing.T, c *testCluster, w client.Object, uids []types.UID, target corev1.ResourceList) error {
	pods := livePods(t, c, w)
	if len(pods) != len(uids) {
		return fmt.Errorf("%T %s has %d Pods, want %d", w, w.GetName(), len(pods), len(uids))
	}
	for _, uid := range uids {
		p, ok := pods[uid]
		if !ok {
			return fmt.Errorf("%T %s: Pod %s was replaced", w, w.GetName(), uid)
		}
		asked := p.Spec.Containers[0].Resources.Requests
		if !equality.Semantic.DeepEqual(asked, target) {
			return fmt.Errorf("Pod %s asks for %v, want the recommendation %v", p.Name, asked, target)
		}
		s := p.Status.ContainerStatuses
		if len(s) != 1 || s[0].Resources == nil || !equality.Semantic.DeepEqual(s[0].Resources.Requests, target) {
			return fmt.Errorf("Pod %s runs with %+v, want %v", p.Name, s, target)
		}
		if s[0].RestartCount != 0 {
			return fmt.Errorf("Pod %s restarted %d times", p.Name, s[0].RestartCount)
		}
	}
	return nil
}

// TestInPlaceOrRecreateOnEveryTemplateKind runs the verticalscaler, deployed from the shipped
// manifests (its admission policy included), on the local cluster's metrics pipeline, with a
// Deployment, a StatefulSet and a DaemonSet of known usage in InPlaceOrRecreate: each
// recommendation is within 10% of the recommender's own estimate for that usage; every Pod is
// resized in place (same Pod, no restart, kwok reporting the new resources); a Pod added by
// scaling up starts at the recommendation; a resize beyond the Node falls back to eviction, one
// Pod at a time; and no template is ever written.
func TestInPlaceOrRecreateOnEveryTemplateKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cpu, memory := resource.MustParse("200m"), resource.MustParse("300Mi")
	c := newCluster(t)
	args := c.Deploy(t, "default")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	ns := "e2e-resize"
	if err := c.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	workloads := []*resizedWorkload{
		{obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)), Selector: selectorOf("web"), Template: usageTemplate("web", cpu, memory)}}},
		{obj: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32(2)), Selector: selectorOf("db"), Template: usageTemplate("db", cpu, memory)}}},
		{obj: &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Spec: appsv1.DaemonSetSpec{
			Selector: selectorOf("agent"), Template: usageTemplate("agent", cpu, memory)}}},
	}
	for _, w := range workloads {
		if err := c.admin.Create(ctx, w.obj); err != nil {
			t.Fatal(err)
		}
	}
	uids := map[string][]types.UID{}
	for _, w := range workloads {
		uids[w.obj.GetName()] = waitPodsReady(t, c, w.obj, nil)
		w.template, w.generation = templateOfWorkload(w.obj), w.obj.GetGeneration()
		gvk, err := c.admin.GroupVersionKindFor(w.obj)
		if err != nil {
			t.Fatal(err)
		}
		w.vs = &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.obj.GetName()},
			Spec: v1alpha1.VerticalScalerSpec{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate,
				TargetRef: &v1alpha1.TargetReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: w.obj.GetName()}}}
		if err := c.admin.Create(ctx, w.vs); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	m := startManager(t, kubeconfig, args, "--usage-interval=5s")

	// The recommendation, as in TestMetricsPipeline: the estimate for the usage, 10% either way.
	low, high := estimate(t, cpu, memory, 0.9), estimate(t, cpu, memory, 1.1)
	targets := map[string]corev1.ResourceList{}
	for _, w := range workloads {
		eventually(t, 4*time.Minute, func() error {
			running(t, m)
			if err := c.admin.Get(ctx, client.ObjectKeyFromObject(w.vs), w.vs); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(w.vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided) {
				return fmt.Errorf("%s: RecommendationProvided is not True: %v", w.vs.Name, w.vs.Status.Conditions)
			}
			return nil
		})
		target := w.vs.Status.Recommendation.ContainerRecommendations[0].Target
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if got := target[r]; got.Cmp(low[r]) < 0 || got.Cmp(high[r]) > 0 {
				t.Errorf("%s: recommended %s %s, want between %s and %s", w.vs.Name, r, got.String(), fmtQ(low, r), fmtQ(high, r))
			}
		}
		targets[w.vs.Name] = target
		t.Logf("%s: recommendation %s after the manager started: cpu %s, memory %s", w.vs.Name,
			time.Since(began).Round(time.Second), fmtQ(target, corev1.ResourceCPU), fmtQ(target, corev1.ResourceMemory))
	}

	// Every Pod resized in place. The recommendation may still move a little as samples come
	// (it is refreshed every cycle); the Pods follow once a request leaves the bounds.
	for _, w := range workloads {
		eventually(t, 2*time.Minute, func() error {
			running(t, m)
			if err := c.admin.Get(ctx, client.ObjectKeyFromObject(w.vs), w.vs); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(w.vs.Status.Conditions, v1alpha1.ConditionApplied) {
				return fmt.Errorf("%s: Applied is not True: %v", w.vs.Name, meta.FindStatusCondition(w.vs.Status.Conditions, v1alpha1.ConditionApplied))
			}
			return checkResizedInPlace(t, c, w.obj, uids[w.obj.GetName()], w.vs.Status.PodResources[0].Requests)
		})
		t.Logf("%s: every Pod resized in place %s after the manager started", w.vs.Name, time.Since(began).Round(time.Second))
	}

	// Scaling up: the new Pod starts at the recommendation, given by the admission policy.
	web := workloads[0]
	d := web.obj.(*appsv1.Deployment)
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = new(int32(3))
	if err := c.admin.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	web.generation = d.Generation
	scaled := waitPodsReady(t, c, d, nil)
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(web.vs), web.vs); err != nil {
		t.Fatal(err)
	}
	for _, uid := range scaled {
		if slices.Contains(uids["web"], uid) {
			continue
		}
		p := livePods(t, c, d)[uid]
		if got, want := p.Spec.Containers[0].Resources.Requests, web.vs.Status.PodResources[0].Requests; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("the Pod added by scaling up, %s, starts with %v, want the recommendation %v", p.Name, got, want)
		}
	}

	// A recommendation beyond the Node's allocatable (32 cores): the API server refuses the
	// resize, and the Pods are evicted instead, one at a time (the replacement, sized at 40
	// cores by the admission policy, stays Pending, so no other Pod goes). The API server
	// refuses such a resize from Kubernetes 1.36 (its PodResize admission plugin), and sizes the
	// replacement only with the admission policy.
	if minor := testenv.ServerMinor(t, c.Config); minor < 36 {
		t.Logf("Kubernetes 1.%d: the eviction of a resize beyond the Node is not checked here (it needs 1.36's PodResize admission and the admission policy)", minor)
		checkTemplatesUntouched(t, c, workloads)
		return
	}
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(web.vs), web.vs); err != nil {
		t.Fatal(err)
	}
	web.vs.Spec.ContainerPolicies = []v1alpha1.ContainerPolicy{{ContainerName: "*",
		MinAllowed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40")}}}
	if err := c.admin.Update(ctx, web.vs); err != nil {
		t.Fatal(err)
	}
	countReplaced := func() int {
		n := 0
		live := livePods(t, c, d)
		for _, uid := range scaled {
			if _, ok := live[uid]; !ok {
				n++
			}
		}
		return n
	}
	eventually(t, time.Minute, func() error {
		running(t, m)
		if n := countReplaced(); n != 1 {
			return fmt.Errorf("%d of the Deployment's Pods evicted, want 1", n)
		}
		return nil
	})
	time.Sleep(20 * time.Second)
	if n := countReplaced(); n != 1 {
		t.Errorf("%d of the Deployment's Pods evicted while the first one's replacement was not ready, want 1 at a time", n)
	}
	if err := c.admin.Get(ctx, client.ObjectKeyFromObject(web.vs), web.vs); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(web.vs.Status.Conditions, v1alpha1.ConditionApplied); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Applied %+v, want False while the Pods do not carry the recommendation", c)
	}

	checkTemplatesUntouched(t, c, workloads)
}

// checkTemplatesUntouched: no template was written throughout: the workloads are as they were
// created (the Deployment scaled).
func checkTemplatesUntouched(t *testing.T, c *testCluster, workloads []*resizedWorkload) {
	t.Helper()
	ctx := context.Background()
	for _, w := range workloads {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(w.obj), w.obj); err != nil {
			t.Fatal(err)
		}
		if w.obj.GetGeneration() != w.generation || !equality.Semantic.DeepEqual(templateOfWorkload(w.obj), w.template) {
			t.Errorf("%T %s: generation %d (want %d), template %+v; want it untouched", w.obj, w.obj.GetName(), w.obj.GetGeneration(),
				w.generation, templateOfWorkload(w.obj).Spec.Containers[0].Resources)
		}
	}
}
