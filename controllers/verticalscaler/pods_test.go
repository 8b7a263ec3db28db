package verticalscaler

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
)

// TestTrimPodKeepsWhatTheVerticalScalerReads: the selector's labels, the usage annotations, the
// containers' resources, the creation time, the OOM kills, the running resources and the resize
// conditions stay; the rest goes (owners, generations, images, the Ready condition's times,
// readiness per container, allocated resources, when a container started).
func TestTrimPodKeepsWhatTheVerticalScalerReads(t *testing.T) {
	killed := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u", ResourceVersion: "7", Generation: 2,
			CreationTimestamp: killed, OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-7d9f8b6c4"}},
			Labels:        map[string]string{"app": "web"},
			Annotations:   map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=1", "checksum/config": "abc"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:v1",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, Resources: corev1.ResourceRequirements{Requests: list("100m", "128Mi")}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ObservedGeneration: 2, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: killed, ObservedGeneration: 2},
			{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "too big", ObservedGeneration: 2},
		}, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:v1", ImageID: "sha256:x", RestartCount: 1, Ready: true,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: killed}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: killed, Message: "long"}},
			Resources:            &corev1.ResourceRequirements{Requests: list("100m", "128Mi")}, AllocatedResources: list("100m", "128Mi")}}},
	}
	got, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u", ResourceVersion: "7", CreationTimestamp: killed,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=1"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app",
			Resources: corev1.ResourceRequirements{Requests: list("100m", "128Mi")}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "too big"},
		}, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 1,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: killed}},
			Resources:            &corev1.ResourceRequirements{Requests: list("100m", "128Mi")}}}},
	}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestWhichPodEventsReachTheMapFunction: usage annotations and OOM kills are the poller's; what
// decides what to do to running Pods reaches the controller.
func TestWhichPodEventsReachTheMapFunction(t *testing.T) {
	base := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "")}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app"}}}}
	changed := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		mutate(p)
		return p
	}
	for _, tc := range []struct {
		name  string
		newer *corev1.Pod
		want  bool
	}{
		{"nothing", base.DeepCopy(), false},
		{"usage annotation", changed(func(p *corev1.Pod) {
			p.Annotations = map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=1"}
		}), false},
		{"resized", changed(func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list("200m", "") }), true},
		{"resize reported", changed(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: list("200m", "")}
		}), true},
		{"resize pending", changed(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
		}), true},
		{"restarted", changed(func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = 1 }), true},
		{"relabelled", changed(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "api"} }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.newer}); got != tc.want {
				t.Errorf("reaches the map function: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTrimmedPodDecidesAsTheWholePod: what the controller decides from a Pod (its plan in place
// and by replacement, whether it is live and available, whether an update reaches the map
// function) is the same from the trimmed Pod as from the whole one, so the trim drops nothing
// it reads.
func TestTrimmedPodDecidesAsTheWholePod(t *testing.T) {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	limits := UpdateLimits{DeferredResizeTimeout: 5 * time.Minute, ResizeTimeout: time.Hour}
	rec := recommendationOf(time.Hour)
	spec := &v1alpha1.VerticalScalerSpec{DeploymentName: "web"}
	always := corev1.ContainerRestartPolicyAlways
	since := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	whole := func(cpu string, mutate func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u", ResourceVersion: "7", Generation: 2,
				CreationTimestamp: since(time.Hour), OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-7d9f8b6c4"}},
				Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"checksum/config": "abc"}},
			Spec: corev1.PodSpec{NodeName: "node-1",
				InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:v1", RestartPolicy: &always,
					Resources: corev1.ResourceRequirements{Requests: list(cpu, "512Mi")}}},
				Containers: []corev1.Container{{Name: "app", Image: "app:v1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
					Resources: corev1.ResourceRequirements{Requests: list(cpu, "512Mi"), Limits: list("2", "1Gi")}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ObservedGeneration: 2, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since(time.Hour)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since(time.Hour), ObservedGeneration: 2}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:v1", ImageID: "sha256:x", Ready: true, RestartCount: 1,
					State:     corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: since(time.Hour)}},
					Resources: &corev1.ResourceRequirements{Requests: list(cpu, "512Mi"), Limits: list("2", "1Gi")}, AllocatedResources: list(cpu, "512Mi")}}},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	condition := func(t corev1.PodConditionType, reason string, age time.Duration) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason,
				Message: "node too small", LastTransitionTime: since(age), ObservedGeneration: 2})
		}
	}
	pods := map[string]*corev1.Pod{
		"carries it":            whole("500m", nil),
		"below the lower bound": whole("100m", nil),
		"not seen by the kubelet": whole("500m", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Resources.Requests = list("100m", "512Mi")
		}),
		"infeasible":           whole("500m", condition(corev1.PodResizePending, corev1.PodReasonInfeasible, time.Second)),
		"deferred":             whole("500m", condition(corev1.PodResizePending, corev1.PodReasonDeferred, time.Minute)),
		"deferred too long":    whole("500m", condition(corev1.PodResizePending, corev1.PodReasonDeferred, 6*time.Minute)),
		"in progress":          whole("500m", condition(corev1.PodResizeInProgress, "", time.Minute)),
		"in progress too long": whole("500m", condition(corev1.PodResizeInProgress, "", 2*time.Hour)),
		"not ready":            whole("500m", func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }),
		"terminating": whole("500m", func(p *corev1.Pod) {
			p.DeletionTimestamp = new(since(0))
		}),
		"succeeded": whole("500m", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	}
	trim := func(p *corev1.Pod) *corev1.Pod {
		out, err := TrimPod(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Pod)
	}
	type decision struct {
		Action          podAction
		Why             string
		Recheck         time.Time
		Desired         map[string]corev1.ResourceRequirements
		Live, Available bool
	}
	decide := func(p *corev1.Pod, inPlace bool) decision {
		plan := planPod(spec, rec, limitRanges{}, p, inPlace, limits, now)
		return decision{Action: plan.action, Why: plan.why, Recheck: plan.recheck, Desired: plan.desired, Live: live(p), Available: available(p)}
	}
	for name, p := range pods {
		for _, inPlace := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, in place %v", name, inPlace), func(t *testing.T) {
				if diff := cmp.Diff(decide(p, inPlace), decide(trim(p), inPlace), compare.Quantities); diff != "" {
					t.Errorf("(-whole +trimmed):\n%s", diff)
				}
			})
		}
		// An update from the Pod that carries the recommendation to this one reaches the map
		// function, or not, whichever the cache holds.
		t.Run(name+", update", func(t *testing.T) {
			base := pods["carries it"]
			wholeEvent := PodChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: p})
			trimmedEvent := PodChanged().Update(event.UpdateEvent{ObjectOld: trim(base), ObjectNew: trim(p)})
			if wholeEvent != trimmedEvent {
				t.Errorf("reaches the map function: %v whole, %v trimmed", wholeEvent, trimmedEvent)
			}
		})
	}
}
