package verticalscaler

import (
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
// containers' resources, the OOM kills, the running resources and the resize conditions stay;
// the rest goes.
func TestTrimPodKeepsWhatTheVerticalScalerReads(t *testing.T) {
	killed := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u", ResourceVersion: "7", Generation: 2,
			Labels:        map[string]string{"app": "web"},
			Annotations:   map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=1", "checksum/config": "abc"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:v1",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, Resources: corev1.ResourceRequirements{Requests: list("100m", "128Mi")}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ObservedGeneration: 2, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "too big"},
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
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=1"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app",
			Resources: corev1.ResourceRequirements{Requests: list("100m", "128Mi")}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ObservedGeneration: 2, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible, Message: "too big"},
		}, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 1, Ready: true,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: killed}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: killed}},
			Resources:            &corev1.ResourceRequirements{Requests: list("100m", "128Mi")}, AllocatedResources: list("100m", "128Mi")}}},
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
