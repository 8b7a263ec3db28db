package verticalscaler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/internal/testenv"
)

// updating reads usage from Pod annotations every 200ms and changes running Pods without a rate
// limit, so that a test sees every change at once.
var updating = append(append([]string{}, annotationUsage...), "--pod-update-rate-limit=0")

// testNode is the Node the tests' running Pods are bound to: the API server resizes only the
// Pods of a Node it knows, within the Node's allocatable (4 cores, 8Gi).
const testNode = "node-1"

// createTestNode creates testNode once.
var createTestNode = sync.OnceValue(func() error {
	allocatable := list("4", "8Gi")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{corev1.LabelOSStable: "linux"}}}
	if err := env.Client.Create(context.Background(), node); err != nil {
		return err
	}
	node.Status = corev1.NodeStatus{Capacity: allocatable, Allocatable: allocatable}
	return env.Client.Status().Update(context.Background(), node)
})

// runningPod creates Pod name of workload app (labelled app: app), bound to testNode and ready,
// as the kubelet would report it, whose container "app" requests requests and uses usage.
func runningPod(t testing.TB, ns, app, name string, requests corev1.ResourceList, usage string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if err := createTestNode(); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app},
			Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": usage}},
		Spec: corev1.PodSpec{NodeName: testNode, Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1",
			Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// The kubelet reports the resources each container runs with; the API server resizes only
	// the Pods of a kubelet that does.
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "registry.example.com/app:v1", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Resources: &corev1.ResourceRequirements{Requests: requests}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// podsOf returns the Pods of ns labelled app: app, by name.
func podsOf(t *testing.T, ns, app string) map[string]*corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// evicted returns the sorted names of the Pods of pods being deleted.
func evicted(pods map[string]*corev1.Pod) []string {
	var out []string
	for name, p := range pods {
		if p.DeletionTimestamp != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// forceDelete deletes pod at once, as the kubelet confirms a graceful deletion.
func forceDelete(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

// newReplicaSetScaler creates ReplicaSet "rs" of n running Pods requesting 100m and 100Mi and
// using 500m and 300Mi, and a VerticalScaler of it in mode with policy.
func newReplicaSetScaler(t *testing.T, ns string, n int, mode v1alpha1.UpdateMode, policy *v1alpha1.UpdatePolicy) *v1alpha1.VerticalScaler {
	t.Helper()
	return newReplicaSetScalerWith(t, ns, n, v1alpha1.VerticalScalerSpec{UpdateMode: mode, UpdatePolicy: policy})
}

// newReplicaSetScalerWith is newReplicaSetScaler with spec, whose targetRef it sets.
func newReplicaSetScalerWith(t *testing.T, ns string, n int, spec v1alpha1.VerticalScalerSpec) *v1alpha1.VerticalScaler {
	t.Helper()
	ref := newWorkload(t, ns, "ReplicaSet", "rs")
	for i := range n {
		runningPod(t, ns, "rs", fmt.Sprintf("rs-%d", i), list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	}
	spec.TargetRef = &ref
	return newTargetScalerWith(t, ns, "rs", spec)
}

// newTargetScalerWith creates VerticalScaler name with spec.
func newTargetScalerWith(t *testing.T, ns, name string, spec v1alpha1.VerticalScalerSpec) *v1alpha1.VerticalScaler {
	t.Helper()
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := env.Client.Create(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// waitHeld waits until vs's Applied condition says a guard holds evictions back for reason, with
// a message that says says, and checks that no Pod labelled app: app of ns is being evicted.
func waitHeld(t *testing.T, vs *v1alpha1.VerticalScaler, reason, says, ns, app string) {
	t.Helper()
	c := waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, reason)
	if !strings.Contains(c.Message, says) {
		t.Errorf("Applied says %q, want %q", c.Message, says)
	}
	if got := evicted(podsOf(t, ns, app)); len(got) != 0 {
		t.Errorf("evicting %v despite the guard", got)
	}
}

// noEvictionWithoutThePolicy is why the eviction tests of a ReplicaSet skip themselves on a
// Kubernetes minor without MutatingAdmissionPolicy.
const noEvictionWithoutThePolicy = "there Recreate evicts no Pod of a ReplicaSet, whose replacements no admission policy would size (TestModesWithoutAnAdmissionPolicy)"

// TestRecreateEvictsOneAtATimeAboveMinReplicas: Recreate replaces the Pods of a ReplicaSet
// (whose template a write would not roll) through the Eviction API, one at a time while one is
// unavailable, and none when fewer than minReplicas are live.
func TestRecreateEvictsOneAtATimeAboveMinReplicas(t *testing.T) {
	testenv.NeedsAdmissionPolicies(t, env.Config, noEvictionWithoutThePolicy)
	env.StartManager(t, updating...)
	ns := env.Namespace(t, "vs-")
	vs := newReplicaSetScaler(t, ns, 3, v1alpha1.UpdateModeRecreate, nil)
	var first []string
	testenv.Eventually(t, timeout, func() error {
		if first = evicted(podsOf(t, ns, "rs")); len(first) != 1 {
			return fmt.Errorf("evicting %v, want one Pod", first)
		}
		return nil
	})
	c := waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonDisruptionLimit)
	if !strings.Contains(c.Message, "1 of the Pods of ReplicaSet.apps/rs are unavailable") {
		t.Errorf("Applied says %q, want why no other Pod is evicted", c.Message)
	}
	waitEvents(t, vs, v1alpha1.ReasonPodEvicted, 1)
	if got := evicted(podsOf(t, ns, "rs")); !slices.Equal(got, first) {
		t.Errorf("evicting %v while %v was unavailable, want one at a time", got, first)
	}

	// The evicted Pod goes (no replacement comes: envtest runs no ReplicaSet controller): two
	// live Pods, minReplicas 2, so another goes.
	pods := podsOf(t, ns, "rs")
	forceDelete(t, pods[first[0]])
	var second []string
	testenv.Eventually(t, timeout, func() error {
		if second = evicted(podsOf(t, ns, "rs")); len(second) != 1 {
			return fmt.Errorf("evicting %v, want one more Pod", second)
		}
		return nil
	})
	forceDelete(t, podsOf(t, ns, "rs")[second[0]])
	// One live Pod, fewer than minReplicas: it stays.
	c = waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonMinReplicas)
	if !strings.Contains(c.Message, "has 1 live Pods, fewer than minReplicas 2") {
		t.Errorf("Applied says %q, want the minReplicas it waits for", c.Message)
	}
	time.Sleep(time.Second)
	if got := evicted(podsOf(t, ns, "rs")); len(got) != 0 {
		t.Errorf("evicting %v with fewer live Pods than minReplicas", got)
	}
}

// TestRecreateByEvictionLeavesTheTemplateAlone: with updatePolicy.recreateBy Eviction, Recreate
// replaces the Pods of a Deployment as the VPA's updater does: it never writes the template, a
// single Pod stays (minReplicas 2), and of two Pods one is evicted.
func TestRecreateByEvictionLeavesTheTemplateAlone(t *testing.T) {
	testenv.NeedsAdmissionPolicies(t, env.Config, noEvictionWithoutThePolicy)
	env.StartManager(t, updating...)
	ns := env.Namespace(t, "vs-")
	ref := newWorkload(t, ns, "Deployment", "web")
	runningPod(t, ns, "web", "web-0", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	vs := newTargetScalerWith(t, ns, "web", v1alpha1.VerticalScalerSpec{TargetRef: &ref, UpdateMode: v1alpha1.UpdateModeRecreate,
		UpdatePolicy: &v1alpha1.UpdatePolicy{RecreateBy: v1alpha1.RecreateByEviction}})
	c := waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonMinReplicas)
	if !strings.Contains(c.Message, "has 1 live Pods, fewer than minReplicas 2") {
		t.Errorf("Applied says %q, want the minReplicas it waits for", c.Message)
	}

	runningPod(t, ns, "web", "web-1", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	testenv.Eventually(t, timeout, func() error {
		if got := evicted(podsOf(t, ns, "web")); len(got) != 1 {
			return fmt.Errorf("evicting %v, want one Pod", got)
		}
		return nil
	})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := get(d); err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Errorf("the Deployment is at generation %d, want 1: its template was written", d.Generation)
	}
}

// TestAMissingReplicaIsUnavailable: a Pod the workload wants and has not created yet (three
// replicas, two Pods) counts as unavailable, so no Pod is evicted before it comes.
func TestAMissingReplicaIsUnavailable(t *testing.T) {
	testenv.NeedsAdmissionPolicies(t, env.Config, noEvictionWithoutThePolicy)
	env.StartManager(t, updating...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	ref := newWorkload(t, ns, "ReplicaSet", "rs")
	rs := &appsv1.ReplicaSet{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rs"}, rs); err != nil {
		t.Fatal(err)
	}
	rs.Spec.Replicas = new(int32(3))
	if err := env.Client.Update(ctx, rs); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		runningPod(t, ns, "rs", fmt.Sprintf("rs-%d", i), list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	}
	vs := newTargetScalerWith(t, ns, "rs", v1alpha1.VerticalScalerSpec{TargetRef: &ref, UpdateMode: v1alpha1.UpdateModeRecreate,
		UpdatePolicy: &v1alpha1.UpdatePolicy{MinReplicas: new(int32(1))}})
	waitHeld(t, vs, v1alpha1.ReasonDisruptionLimit, "1 of the Pods of ReplicaSet.apps/rs are unavailable or not created yet", ns, "rs")
}

// TestMinReplicasCountsTheJobOfACronJobsPod: minReplicas counts the live Pods of a CronJob's
// Pod's own Job, as the VPA's updater counts a Pod's controller's: two Jobs of one Pod each
// overlap, and neither Pod is evicted.
func TestMinReplicasCountsTheJobOfACronJobsPod(t *testing.T) {
	testenv.NeedsAdmissionPolicies(t, env.Config, noEvictionWithoutThePolicy)
	env.StartManager(t, updating...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	ref := newWorkload(t, ns, "CronJob", "cj")
	for _, job := range []string{"cj-1", "cj-2"} {
		pod := runningPod(t, ns, "cj", job+"-pod", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
		pod.Labels[batchv1.JobNameLabel] = job
		if err := env.Client.Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	vs := newTargetScalerWith(t, ns, "cj", v1alpha1.VerticalScalerSpec{TargetRef: &ref, UpdateMode: v1alpha1.UpdateModeRecreate,
		UpdatePolicy: &v1alpha1.UpdatePolicy{RecreateBy: v1alpha1.RecreateByEviction}})
	waitHeld(t, vs, v1alpha1.ReasonMinReplicas, "Job cj-1 of CronJob.batch/cj has 1 live Pods, fewer than minReplicas 2", ns, "cj")
}

// TestNoEvictionWhenReplacementsComeBackUnsized: where no admission policy sizes the target's
// new Pods (none is bound in the test's namespace), a Pod created after the controller asked for
// it without the recommendation shows that a replacement would come back the same: no Pod is
// evicted, and Applied says why, instead of evicting the Pods over and over.
func TestNoEvictionWhenReplacementsComeBackUnsized(t *testing.T) {
	testenv.NeedsAdmissionPolicies(t, env.Config, noEvictionWithoutThePolicy)
	env.StartManager(t, updating...)
	ns := env.Namespace(t, "vs-")
	// A recommendation pinned by the policy, so that what new Pods get does not move.
	pinned := list("500m", "400Mi")
	vs := newReplicaSetScalerWith(t, ns, 2, v1alpha1.VerticalScalerSpec{UpdateMode: v1alpha1.UpdateModeRecreate,
		UpdatePolicy:      &v1alpha1.UpdatePolicy{MinReplicas: new(int32(1))},
		ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", MinAllowed: pinned, MaxAllowed: pinned}}})
	var first []string
	testenv.Eventually(t, timeout, func() error {
		if first = evicted(podsOf(t, ns, "rs")); len(first) != 1 {
			return fmt.Errorf("evicting %v, want one Pod", first)
		}
		return nil
	})
	// The ReplicaSet's controller replaces it, unsized, once the policy has had time to act.
	time.Sleep(verticalscaler.AdmissionLag + time.Second)
	runningPod(t, ns, "rs", "rs-replacement", list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	forceDelete(t, podsOf(t, ns, "rs")[first[0]])
	c := waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonReplacementsUnsized)
	if !strings.Contains(c.Message, "Pod rs-replacement") {
		t.Errorf("Applied says %q, want the Pod that came back unsized", c.Message)
	}
	time.Sleep(time.Second)
	if got := evicted(podsOf(t, ns, "rs")); len(got) != 0 {
		t.Errorf("evicting %v, whose replacements would come back unsized", got)
	}
}

// TestGuardsHoldEvictionsBack: a PodDisruptionBudget that allows no disruption, and an eviction
// requirement the change does not meet, each hold every eviction back, and Applied says so.
func TestGuardsHoldEvictionsBack(t *testing.T) {
	testenv.NeedsAdmissionPolicies(t, env.Config, noEvictionWithoutThePolicy)
	env.StartManager(t, updating...)
	for _, tc := range []struct {
		name   string
		pdb    bool
		policy *v1alpha1.UpdatePolicy
		reason string
		says   string
	}{
		{name: "PodDisruptionBudget", pdb: true, reason: v1alpha1.ReasonPodDisruptionBudget, says: "the Eviction API refused"},
		// Only a fall of memory may change a Pod; the recommendation raises it.
		{name: "eviction requirements", policy: &v1alpha1.UpdatePolicy{EvictionRequirements: []v1alpha1.EvictionRequirement{
			{Resources: []v1alpha1.ControlledResource{"memory"}, ChangeRequirement: v1alpha1.TargetLowerThanRequests}}},
			reason: v1alpha1.ReasonEvictionRequirements, says: "TargetLowerThanRequests for memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.Namespace(t, "vs-")
			if tc.pdb {
				pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rs"}, Spec: policyv1.PodDisruptionBudgetSpec{
					MaxUnavailable: new(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rs"}}}}
				if err := env.Client.Create(context.Background(), pdb); err != nil {
					t.Fatal(err)
				}
			}
			vs := newReplicaSetScaler(t, ns, 3, v1alpha1.UpdateModeRecreate, tc.policy)
			waitHeld(t, vs, tc.reason, tc.says, ns, "rs")
		})
	}
}

// TestInPlaceResizesRunningPodsAndNeverTheTemplate: InPlaceOrRecreate resizes each running Pod
// through its resize subresource, keeping its UID, and leaves the Deployment's template alone;
// a Pod the kubelet reports Infeasible is evicted, and only that one.
func TestInPlaceResizesRunningPodsAndNeverTheTemplate(t *testing.T) {
	env.StartManager(t, updating...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "100Mi")})
	uids := map[string]types.UID{}
	for i := range 3 {
		p := runningPod(t, ns, "web", fmt.Sprintf("web-%d", i), list("100m", "100Mi"), "cpu=500m,memory=300Mi")
		uids[p.Name] = p.UID
	}
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeInPlaceOrRecreate)
	waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
	target := vs.Status.Recommendation.ContainerRecommendations[0].Target
	testenv.Eventually(t, timeout, func() error {
		for name, p := range podsOf(t, ns, "web") {
			if p.UID != uids[name] {
				return fmt.Errorf("pod %s was replaced", name)
			}
			if got := p.Spec.Containers[0].Resources.Requests; !equality.Semantic.DeepEqual(got, target) {
				return fmt.Errorf("pod %s requests %v, want the recommendation %v", name, got, target)
			}
		}
		return nil
	})
	waitEvents(t, vs, v1alpha1.ReasonPodResized, 3)
	// Until the kubelet reports the Pods running with their new requests, the resizes are
	// under way.
	testenv.Eventually(t, timeout, func() error {
		c := waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonUpdating)
		if !strings.Contains(c.Message, "3 resizes under way") {
			return fmt.Errorf("applied says %q, want the resizes under way", c.Message)
		}
		return nil
	})
	for _, p := range podsOf(t, ns, "web") {
		p.Status.ContainerStatuses[0].Resources = p.Spec.Containers[0].Resources.DeepCopy()
		if err := env.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonApplied)
	before := d.ResourceVersion
	if err := get(d); err != nil || d.ResourceVersion != before {
		t.Errorf("the Deployment was written (%v): %v", err, d.Spec.Template.Spec.Containers[0].Resources)
	}

	// The kubelet cannot fit web-1's resize: it is evicted, and no other Pod.
	p := podsOf(t, ns, "web")["web-1"]
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
		Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity", LastTransitionTime: metav1.Now()})
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if got := evicted(podsOf(t, ns, "web")); !slices.Equal(got, []string{"web-1"}) {
			return fmt.Errorf("evicting %v, want web-1", got)
		}
		return nil
	})
	waitEvents(t, vs, v1alpha1.ReasonResizeFailed, 1)
}

// TestResizeBeyondTheNodeFallsBackToEviction: a recommendation larger than the Node's
// allocatable is refused by the API server (its PodResizeValidator, cause NodeCapacity), as the
// kubelet reports a resize Infeasible: the Pods are evicted instead, one at a time.
func TestResizeBeyondTheNodeFallsBackToEviction(t *testing.T) {
	if minor := testenv.ServerMinor(t, env.Config); minor < 36 {
		t.Skipf("Kubernetes 1.%d: the API server refuses a resize beyond the Node's capacity from 1.36 (its PodResize admission plugin); before, the kubelet reports it Infeasible, as TestInPlaceResizesRunningPodsAndNeverTheTemplate checks", minor)
	}
	resizeFailed := func() float64 {
		t.Helper()
		v, _, err := testenv.MetricValue("switchboard_verticalscaler_evictions_total", map[string]string{"reason": "ResizeFailed"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := resizeFailed()
	env.StartManager(t, updating...)
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "big", corev1.ResourceRequirements{Requests: list("100m", "100Mi")})
	for i := range 3 {
		runningPod(t, ns, "big", fmt.Sprintf("big-%d", i), list("100m", "100Mi"), "cpu=500m,memory=300Mi")
	}
	vs := newScaler(t, ns, "big", "big", v1alpha1.UpdateModeInPlaceOrRecreate,
		v1alpha1.ContainerPolicy{ContainerName: "*", MinAllowed: list("6", "")})
	testenv.Eventually(t, timeout, func() error {
		if got := evicted(podsOf(t, ns, "big")); len(got) != 1 {
			return fmt.Errorf("evicting %v, want one Pod", got)
		}
		return nil
	})
	warning := waitEvents(t, vs, v1alpha1.ReasonResizeFailed, 1)[0]
	if !strings.Contains(warning.Note, "exceeds available node resources") && !strings.Contains(warning.Note, "NodeCapacity") &&
		!strings.Contains(warning.Note, "allocatable") {
		t.Errorf("ResizeFailed says %q, want the Node's capacity", warning.Note)
	}
	// The refused resize's eviction counts as ResizeFailed, which SwitchboardPodResizesFailing
	// alerts on, not as a Recreate.
	if got := resizeFailed() - before; got != 1 {
		t.Errorf("switchboard_verticalscaler_evictions_total{reason=\"ResizeFailed\"} grew by %v, want 1", got)
	}
	time.Sleep(time.Second)
	if got := evicted(podsOf(t, ns, "big")); len(got) != 1 {
		t.Errorf("evicting %v, want one at a time", got)
	}
}
