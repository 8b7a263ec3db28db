package verticalscaler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/internal/testenv"
)

// waitEvents waits until at least n Events with reason are recorded about vs, and returns them.
func waitEvents(t *testing.T, vs *v1alpha1.VerticalScaler, reason string, n int) []eventsv1.Event {
	t.Helper()
	var out []eventsv1.Event
	testenv.Eventually(t, timeout, func() error {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(vs.Namespace)); err != nil {
			return err
		}
		out = out[:0]
		for _, e := range list.Items {
			if e.Reason == reason && e.Regarding.Kind == "VerticalScaler" && e.Regarding.Name == vs.Name {
				out = append(out, e)
			}
		}
		if len(out) < n {
			return fmt.Errorf("%d Events %s about %s, want %d", len(out), reason, vs.Name, n)
		}
		return nil
	})
	return out
}

// TestOOMKillRaisesMemoryAtOnce: a container killed for lack of memory (its lastState says
// OOMKilled) raises the memory recommendation on the next read, the VPA's way, from its
// request: max(512Mi + 100Mi, 512Mi × 1.2) = 614.4Mi, in the bucket ending at 633.6Mi, +15%.
func TestOOMKillRaisesMemoryAtOnce(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "512Mi")})
	// The request that counts is the Pod's, which it ran with when it was killed.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1", Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=100m,memory=400Mi"}}, Spec: d.Spec.Template.Spec}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff)
	waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
	if m := vs.Status.Recommendation.ContainerRecommendations[0].Target.Memory().String(); m != "489Mi" {
		t.Fatalf("memory before the kill %s, want 489Mi (400Mi's bucket end, +15%%)", m)
	}

	killed := metav1.NewTime(time.Now().Add(-time.Second).Truncate(time.Second))
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.example.com/app:v1", RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: killed}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "OOMKilled", ExitCode: 137, StartedAt: metav1.NewTime(killed.Add(-time.Hour)), FinishedAt: killed}}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		c := vs.Status.Recommendation.ContainerRecommendations[0]
		if m := c.Target.Memory().String(); m != "729Mi" || c.LastOOMKillTime == nil || !c.LastOOMKillTime.Equal(&killed) {
			return fmt.Errorf("memory %s, lastOOMKillTime %v; want 729Mi and %v", m, c.LastOOMKillTime, killed)
		}
		return nil
	})
}

// TestNativeSidecarsAreRecommendedAndInitContainersAreNot, on a Deployment that requests
// nothing: the container and the native sidecar get a recommendation and, in Auto mode, its
// requests; the plain init container gets neither, and a policy naming it says why.
func TestNativeSidecarsAreRecommendedAndInitContainersAreNot(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	always := corev1.ContainerRestartPolicyAlways
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "registry.example.com/migrate:v1"},
				{Name: "proxy", Image: "registry.example.com/proxy:v1", RestartPolicy: &always}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}},
		}}}}
	if err := env.Client.Create(ctx, d, client.FieldOwner("myapp")); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1", Labels: labels, Annotations: map[string]string{
		v1alpha1.UsageAnnotationPrefix + "app":     "cpu=500m,memory=300Mi",
		v1alpha1.UsageAnnotationPrefix + "proxy":   "cpu=100m,memory=200Mi",
		v1alpha1.UsageAnnotationPrefix + "migrate": "cpu=2,memory=1Gi",
	}}, Spec: d.Spec.Template.Spec}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeAuto)
	waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonApplied)
	var names []string
	for _, c := range vs.Status.Recommendation.ContainerRecommendations {
		names = append(names, c.ContainerName)
	}
	if diff := cmp.Diff([]string{"app", "proxy"}, names); diff != "" {
		t.Errorf("recommended containers (-want +got):\n%s", diff)
	}
	if err := get(d); err != nil {
		t.Fatal(err)
	}
	// Two recommended containers share the Pod minimum: proxy's 200Mi (bucket end 205.8Mi,
	// +15% = 236.7Mi) stays above its 125Mi share.
	want := map[string]corev1.ResourceList{"migrate": nil, "proxy": list("127m", "237Mi"), "app": list("588m", "363Mi")}
	got := map[string]corev1.ResourceList{}
	for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
		got[c.Name] = c.Resources.Requests
	}
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("requests on the Deployment (-want +got):\n%s", diff)
	}

	// A policy for the init container is reported, not retried.
	before := vs.DeepCopy()
	vs.Spec.ContainerPolicies = []v1alpha1.ContainerPolicy{{ContainerName: "migrate", MaxAllowed: list("1", "")}}
	// A merge patch carries no resourceVersion: the controller's status writes do not conflict.
	if err := env.Client.Patch(ctx, vs, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonContainerNotFound)
	if !strings.Contains(c.Message, `"migrate" is an init container, which gets no recommendation`) {
		t.Errorf("Ready message %q, want why migrate gets no recommendation", c.Message)
	}
}

// TestRecommenderPolicyIsOurs: a VerticalScaler's recommenderPolicy changes the percentile its
// recommendation is drawn from, and status says which.
func TestRecommenderPolicyIsOurs(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	newPod(t, ns, "web", "cpu=500m,memory=300Mi")
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1alpha1.VerticalScalerSpec{
		DeploymentName: "web", RecommenderPolicy: &v1alpha1.RecommenderPolicy{TargetPercentile: new(int32(60)), SafetyMarginPercent: new(int32(0))}}}
	if err := env.Client.Create(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
	want := &v1alpha1.RecommenderPolicy{TargetPercentile: new(int32(60)), LowerBoundPercentile: new(int32(50)),
		UpperBoundPercentile: new(int32(95)), SafetyMarginPercent: new(int32(0))}
	if diff := cmp.Diff(want, vs.Status.Recommendation.Policy); diff != "" {
		t.Errorf("status.recommendation.policy (-want +got):\n%s", diff)
	}
	// No margin: 500m's bucket end, 511.13m, rounded up.
	if got := vs.Status.Recommendation.ContainerRecommendations[0].Target.Cpu().String(); got != "512m" {
		t.Errorf("cpu target %s, want 512m", got)
	}
}
