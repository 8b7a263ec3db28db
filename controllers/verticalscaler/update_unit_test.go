package verticalscaler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/example/switchboard/apis/v1alpha1"
)

// TestPlanPod lists what a running Pod needs, in place and not.
func TestPlanPod(t *testing.T) {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	limits := UpdateLimits{DeferredResizeTimeout: 5 * time.Minute, ResizeTimeout: time.Hour}
	rec := recommendationOf(time.Hour)
	spec := &v1alpha1.VerticalScalerSpec{DeploymentName: "web", ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*",
		ControlledValues: v1alpha1.ControlledRequestsOnly}}}
	pod := func(cpu string, conditions ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list(cpu, "512Mi")}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conditions}}
	}
	pending := func(reason string, since time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason, Message: "node too small",
			LastTransitionTime: metav1.NewTime(now.Add(-since))}
	}
	inProgress := func(since time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-since))}
	}
	notSeen := pod("500m")
	notSeen.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: list("100m", "512Mi")}}}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		inPlace bool
		want    podAction
		says    string
	}{
		{"carries it", pod("500m"), true, podCarries, ""},
		{"below the lower bound", pod("100m"), true, podOff, "below the lower bound 400m"},
		{"below the lower bound, Recreate", pod("100m"), false, podOff, "below the lower bound"},
		{"infeasible", pod("500m", pending(corev1.PodReasonInfeasible, time.Second)), true, podResizeFailed, "Infeasible: node too small"},
		{"deferred for a minute", pod("500m", pending(corev1.PodReasonDeferred, time.Minute)), true, podResizing, ""},
		{"deferred past the timeout", pod("500m", pending(corev1.PodReasonDeferred, 6*time.Minute)), true, podResizeFailed, "Deferred for more than 5m0s"},
		{"in progress", pod("500m", inProgress(time.Minute)), true, podResizing, ""},
		{"in progress past the timeout", pod("500m", inProgress(2*time.Hour)), true, podResizeFailed, "in progress for more than 1h0m0s"},
		{"asked for, not seen by the kubelet yet", notSeen, true, podResizing, ""},
		{"Recreate ignores resize conditions", pod("500m", pending(corev1.PodReasonInfeasible, time.Second)), false, podCarries, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planPod(spec, rec, limitRanges{}, tc.pod, tc.inPlace, limits, now)
			if got.action != tc.want || !strings.Contains(got.why, tc.says) {
				t.Errorf("action %d %q, want %d saying %q", got.action, got.why, tc.want, tc.says)
			}
		})
	}
}

// TestUnmetRequirements: a requirement holds when one of its resources moves its way in one
// container; all must hold.
func TestUnmetRequirements(t *testing.T) {
	containers := []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list("100m", "2Gi")}}}
	desired := map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "512Mi")}}
	vs := func(reqs ...v1alpha1.EvictionRequirement) *v1alpha1.VerticalScaler {
		return &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{UpdatePolicy: &v1alpha1.UpdatePolicy{EvictionRequirements: reqs}}}
	}
	up := func(rs ...v1alpha1.ControlledResource) v1alpha1.EvictionRequirement {
		return v1alpha1.EvictionRequirement{Resources: rs, ChangeRequirement: v1alpha1.TargetHigherThanRequests}
	}
	down := func(rs ...v1alpha1.ControlledResource) v1alpha1.EvictionRequirement {
		return v1alpha1.EvictionRequirement{Resources: rs, ChangeRequirement: v1alpha1.TargetLowerThanRequests}
	}
	for _, tc := range []struct {
		name string
		vs   *v1alpha1.VerticalScaler
		want string
	}{
		{"none", &v1alpha1.VerticalScaler{}, ""},
		{"cpu rises", vs(up("cpu")), ""},
		{"memory rises", vs(up("memory")), "TargetHigherThanRequests for memory"},
		{"cpu or memory rises", vs(up("cpu", "memory")), ""},
		{"memory falls and cpu rises", vs(down("memory"), up("cpu")), ""},
		{"cpu falls and memory rises", vs(down("cpu"), up("memory")), "TargetLowerThanRequests for cpu, TargetHigherThanRequests for memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unmetRequirements(tc.vs, containers, desired)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("unmet %q, want %q", got, tc.want)
			}
		})
	}
}

// TestResizePatch: containers and native sidecars by name, only their controlled resources.
func TestResizePatch(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "other"}},
		InitContainers: []corev1.Container{{Name: "migrate"}, {Name: "proxy", RestartPolicy: &always}}}}
	got, err := resizePatch(pod, map[string]corev1.ResourceRequirements{"app": {Requests: list("500m", "")}, "proxy": {Requests: list("", "64Mi")},
		"migrate": {Requests: list("1", "")}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}],"initContainers":[{"name":"proxy","resources":{"requests":{"memory":"64Mi"}}}]}}`
	if string(got) != want {
		t.Errorf("patch\n got %s\nwant %s", got, want)
	}
}

// TestAdmissionSizingMissed: a Pod created once the admission policy has had time to size new
// Pods, without the requests it was to give then, was not sized by it; one created before, or
// carrying them, says nothing.
func TestAdmissionSizingMissed(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	entry := func(at time.Time, cpu string) sizedSince {
		return sizedSince{since: at, resources: []v1alpha1.ContainerResources{{ContainerName: "app", Requests: list(cpu, "")}}}
	}
	sizing := admissionSizing{entry(t0, "500m"), entry(t1, "700m")}
	pod := func(created time.Time, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: list(cpu, "512Mi")}}}}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"created before the first", pod(t0.Add(-time.Hour), "100m"), false},
		{"created within the lag", pod(t0.Add(admissionLag/2), "100m"), false},
		{"created after the first, sized as it said", pod(t0.Add(time.Minute), "500m"), false},
		{"created after the first, not sized", pod(t0.Add(time.Minute), "100m"), true},
		{"created after the first, no request", pod(t0.Add(time.Minute), ""), true},
		{"created after the second, sized as the first said", pod(t1.Add(time.Minute), "500m"), true},
		{"created after the second, sized as it said", pod(t1.Add(time.Minute), "700m"), false},
		{"created within the lag of the second", pod(t1.Add(admissionLag/2), "500m"), false},
	} {
		if got := sizing.missed(tc.pod); got != tc.want {
			t.Errorf("%s: missed = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (admissionSizing{}).missed(pod(t0, "100m")) {
		t.Error("nothing observed yet: missed, want not")
	}
}

// TestSizingLogRecordsChanges: a new entry only when what new Pods get changes, at most
// sizingHistory of them.
func TestSizingLogRecordsChanges(t *testing.T) {
	var l sizingLog
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	t0 := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	resources := func(cpu int) []v1alpha1.ContainerResources {
		return []v1alpha1.ContainerResources{{ContainerName: "app", Requests: list(fmt.Sprintf("%dm", cpu), "")}}
	}
	observe := func(cpu int, at time.Time) admissionSizing { return l.observe(key, resources(cpu), at) }
	observe(500, t0)
	if got := observe(500, t0.Add(time.Minute)); len(got) != 1 || !got[0].since.Equal(t0) {
		t.Errorf("the same resources again: %+v, want one entry since %s", got, t0)
	}
	for i := range 2 * sizingHistory {
		observe(600+i, t0.Add(time.Duration(i+2)*time.Minute))
	}
	got := observe(600+2*sizingHistory-1, t0.Add(time.Hour))
	if len(got) != sizingHistory || !got[len(got)-1].since.Equal(t0.Add(time.Duration(2*sizingHistory+1)*time.Minute)) {
		t.Errorf("after %d changes: %d entries, the last since %s; want %d, the last change's", 2*sizingHistory, len(got), got[len(got)-1].since, sizingHistory)
	}
	l.forget(key)
	if got := observe(500, t0.Add(2*time.Hour)); len(got) != 1 {
		t.Errorf("after forget: %d entries, want 1", len(got))
	}
}
