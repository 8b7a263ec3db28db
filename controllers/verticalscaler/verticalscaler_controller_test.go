package verticalscaler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/internal/testenv"
)

const timeout = 20 * time.Second

// Manager flags: no periodic resync and no metrics source, so that every reconcile has a cause
// the test controls; or usage read from Pod annotations every 200ms.
var (
	quiet           = []string{"--controllers=verticalscaler", "--resync-interval=0", "--usage-source=off"}
	annotationUsage = []string{"--controllers=verticalscaler", "--resync-interval=0", "--usage-source=pod-annotations", "--usage-interval=200ms"}
)

// newDeployment creates a Deployment with one container "app" as the field manager "myapp"
// would, with the given resources.
func newDeployment(t *testing.T, ns, name string, res corev1.ResourceRequirements) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "app", Image: "registry.example.com/app:v1", Resources: res},
				}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), d, client.FieldOwner("myapp")); err != nil {
		t.Fatal(err)
	}
	return d
}

// newPod creates a Pod of Deployment name whose container "app" reports usage through the
// annotation the pod-annotations usage source reads.
func newPod(t *testing.T, ns, name, usage string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-", Labels: map[string]string{"app": name},
			Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": usage}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
	}
	if err := env.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func newScaler(t *testing.T, ns, name, deployment string, mode v1alpha1.UpdateMode, policies ...v1alpha1.ContainerPolicy) *v1alpha1.VerticalScaler {
	t.Helper()
	vs := &v1alpha1.VerticalScaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.VerticalScalerSpec{DeploymentName: deployment, UpdateMode: mode, ContainerPolicies: policies},
	}
	if err := env.Client.Create(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func get(obj client.Object) error {
	return env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
}

// waitCondition waits until vs has condition t with status and reason, at its generation.
func waitCondition(t *testing.T, vs *v1alpha1.VerticalScaler, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		c = meta.FindStatusCondition(vs.Status.Conditions, condType)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != vs.Generation {
			return fmt.Errorf("%s = %+v, want %s %s at generation %d", condType, c, status, reason, vs.Generation)
		}
		return nil
	})
	return c
}

func list(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

// reconcileTotal returns how many reconciles the verticalscaler controllers of this process
// have finished, from controller-runtime's metrics.
func reconcileTotal(t *testing.T) float64 {
	t.Helper()
	n, err := testenv.ReconcileTotal(verticalscaler.ControllerName)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// settledReconciles waits until the verticalscaler is quiet (its reconcile count unchanged
// over a second, nothing queued, no worker busy) and returns its reconcile count.
func settledReconciles(t *testing.T) float64 {
	t.Helper()
	return testenv.WaitQuiet(t, testenv.InProcess, testenv.Quiet{Controllers: []string{verticalscaler.ControllerName},
		Idle: true, For: time.Second, Interval: time.Second, Timeout: timeout})
}

func TestEveryOrderOfCreationAndDeletion(t *testing.T) {
	env.StartManager(t, quiet...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")

	// The VerticalScaler first: its Deployment does not exist yet.
	vs := newScaler(t, ns, "early", "web", v1alpha1.UpdateModeOff)
	waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)
	waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)

	// The Deployment appears: the map function finds the VerticalScaler through the index.
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)

	// The Deployment goes: status says so, nothing else happens.
	if err := env.Client.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)

	// It comes back.
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)

	// The VerticalScaler is pointed at another Deployment, which does not exist, then does.
	vs.Spec.DeploymentName = "api"
	if err := env.Client.Update(ctx, vs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)
	newDeployment(t, ns, "api", corev1.ResourceRequirements{})
	waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)
}

func TestDeploymentUpdateReconcilesOnlyItsVerticalScaler(t *testing.T) {
	env.StartManager(t, quiet...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	web := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "")})
	newDeployment(t, ns, "api", corev1.ResourceRequirements{})
	for _, vs := range []*v1alpha1.VerticalScaler{
		newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff),
		newScaler(t, ns, "api", "api", v1alpha1.UpdateModeOff),
	} {
		waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)
	}
	before := settledReconciles(t)

	// A change of web's container resources reaches the map function, which names one
	// VerticalScaler: one reconcile.
	web.Spec.Template.Spec.Containers[0].Resources.Requests = list("200m", "")
	if err := env.Client.Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	if got := settledReconciles(t) - before; got != 1 {
		t.Errorf("resources of web changed: %v reconciles, want 1", got)
	}

	// Changes that cannot matter are filtered before the map function: none.
	before = settledReconciles(t)
	web.Spec.Template.Spec.Containers[0].Image = "registry.example.com/app:v2"
	web.Spec.Replicas = new(int32(5))
	if err := env.Client.Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	web.Status.Replicas = 5
	if err := env.Client.Status().Update(ctx, web); err != nil {
		t.Fatal(err)
	}
	if got := settledReconciles(t) - before; got != 0 {
		t.Errorf("image, replicas and status of web changed: %v reconciles, want 0", got)
	}
}

func TestOffModeRecommendsIntoStatusOnly(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ns := env.Namespace(t, "vs-")
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "100Mi")})
	newPod(t, ns, "web", "cpu=500m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff,
		v1alpha1.ContainerPolicy{ContainerName: "*", MaxAllowed: list("400m", "")})

	waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
	// 500m and 300Mi end their histogram buckets at 511m and 315Mi; with the 15% margin,
	// 588m and 363Mi. The policy caps CPU at 400m. A few samples are little history: the lower
	// bound is the Pod minimum, the upper bound very wide (capped at 400m for CPU).
	got := vs.Status.Recommendation
	want := &v1alpha1.Recommendation{Target: "Deployment.apps/web", DeploymentName: "web", Policy: recommender.DefaultPolicy.Status(),
		ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
			ContainerName: "app", Target: list("400m", "363Mi"), LowerBound: list("25m", "250Mi"),
			UpperBound: list("400m", got.ContainerRecommendations[0].UpperBound.Memory().String()), UncappedTarget: list("588m", "363Mi")}}}
	c := &got.ContainerRecommendations[0]
	// What the recommendation rests on: the samples and the history's window.
	if c.Samples < 1 || c.FirstSampleTime == nil || c.LastSampleTime == nil || c.LastSampleTime.Before(c.FirstSampleTime) {
		t.Errorf("samples %d from %v to %v, want at least one sample and its window", c.Samples, c.FirstSampleTime, c.LastSampleTime)
	}
	if c.UpperBound.Memory().Cmp(resource.MustParse("10Gi")) < 0 {
		t.Errorf("memory upper bound %s after seconds of history, want it very wide", c.UpperBound.Memory())
	}
	c.Samples, c.FirstSampleTime, c.LastSampleTime = 0, nil, nil
	if diff := cmp.Diff(want, got, compare.Quantities); diff != "" {
		t.Errorf("recommendation (-want +got):\n%s", diff)
	}
	waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonUpdateModeOff)
	waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonRecommendationCurrent)

	before := d.ResourceVersion
	if err := get(d); err != nil {
		t.Fatal(err)
	}
	if d.ResourceVersion != before {
		t.Errorf("Off mode wrote the Deployment: %v", d.Spec.Template.Spec.Containers[0].Resources)
	}

	// The recommendation is a gauge per container, resource and bound, gone with the
	// VerticalScaler.
	series := map[string]string{"namespace": ns, "verticalscaler": "web", "container": "app", "resource": "cpu", "bound": "target"}
	if v, n, err := testenv.MetricValue("switchboard_verticalscaler_recommendation", series); err != nil || n != 1 || v != 0.4 {
		t.Errorf("recommendation gauge %v (%d series, %v), want 0.4 cores", v, n, err)
	}
	if err := env.Client.Delete(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		_, n, err := testenv.MetricValue("switchboard_verticalscaler_recommendation", map[string]string{"namespace": ns})
		if err != nil || n != 0 {
			return fmt.Errorf("%d series of the deleted VerticalScaler (%v)", n, err)
		}
		return nil
	})
}

// ownedContainerFields returns, per manager, the fields it owns in container "app".
func ownedContainerFields(t *testing.T, d *appsv1.Deployment) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, entry := range d.ManagedFields {
		if entry.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatal(err)
		}
		node := any(fields)
		for _, key := range []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"app"}`} {
			m, _ := node.(map[string]any)
			node = m[key]
		}
		container, _ := node.(map[string]any)
		for key := range container {
			out[entry.Manager] = append(out[entry.Manager], key)
		}
		sort.Strings(out[entry.Manager])
	}
	return out
}

func TestAutoModeAppliesOnlyTheControlledResources(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	d := newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("100m", "100Mi"), Limits: list("200m", "")})
	newPod(t, ns, "web", "cpu=500m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeAuto)

	waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonApplied)
	waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonRecommendationCurrent)
	if !vs.Status.Applied || vs.Status.LastAppliedTime == nil {
		t.Errorf("status.applied %v lastAppliedTime %v, want true and set", vs.Status.Applied, vs.Status.LastAppliedTime)
	}
	// The write is an Event on the VerticalScaler that says why: memory below the lower bound
	// (the Pod minimum); CPU, within the wide bounds of a short history, moves with it.
	applied := waitEvents(t, vs, v1alpha1.ReasonRecommendationApplied, 1)
	if note := applied[0].Note; !strings.Contains(note, "container app requests memory 100Mi, below the lower bound 250Mi (recommended 363Mi)") {
		t.Errorf("Event note %q, want the request that was off", note)
	}
	if err := get(d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	// The CPU limit keeps its ratio of 2 to the request; memory had no limit and gets none.
	wantRes := corev1.ResourceRequirements{Requests: list("588m", "363Mi"), Limits: list("1176m", "")}
	if diff := cmp.Diff(wantRes, c.Resources, compare.Quantities); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if c.Image != "registry.example.com/app:v1" {
		t.Errorf("image = %q: another manager's field changed", c.Image)
	}
	owned := ownedContainerFields(t, d)
	// "." and f:name are the list entry and its key, which an apply of the entry co-owns.
	if diff := cmp.Diff([]string{".", "f:name", "f:resources"}, owned[verticalscaler.ControllerName]); diff != "" {
		t.Errorf("fields of container app owned by verticalscaler (-want +got):\n%s", diff)
	}
	if !contains(owned["myapp"], "f:image") {
		t.Errorf("myapp no longer owns the image: %v", owned)
	}

	// Usage stays the same: further cycles write nothing to the Deployment (the status follows
	// the bounds as the history grows, at most once a cycle).
	appliedVersion := d.ResourceVersion
	time.Sleep(2 * time.Second)
	if err := get(d); err != nil {
		t.Fatal(err)
	}
	if d.ResourceVersion != appliedVersion {
		t.Errorf("Deployment written again with nothing to change: %v", d.Spec.Template.Spec.Containers[0].Resources)
	}

	// A policy now asks for at least a core: the request is below the lower bound, but the
	// Deployment is not written again before the minimum interval since the last write (every
	// write rolls Pods).
	if err := get(vs); err != nil {
		t.Fatal(err)
	}
	vs.Spec.ContainerPolicies = []v1alpha1.ContainerPolicy{{ContainerName: "*", MinAllowed: list("1", "")}}
	if err := env.Client.Update(ctx, vs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionFalse, v1alpha1.ReasonWaitingForMinApplyInterval)
	if c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionApplied); !strings.Contains(c.Message, "Container app requests cpu 588m, below the lower bound 1 (recommended 1)") {
		t.Errorf("Applied message %q, want the request that is off", c.Message)
	}
	if err := get(d); err != nil {
		t.Fatal(err)
	}
	if d.ResourceVersion != appliedVersion {
		t.Errorf("Deployment written again within the minimum interval: %v", d.Spec.Template.Spec.Containers[0].Resources)
	}
	if n := len(waitEvents(t, vs, v1alpha1.ReasonRecommendationApplied, 1)); n != 1 {
		t.Errorf("%d RecommendationApplied Events, want 1: nothing was written since", n)
	}

	// Deleting the VerticalScaler leaves the Deployment as it is.
	if err := env.Client.Delete(ctx, vs); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VerticalScaler still there: %v", err)
		}
		return nil
	})
	time.Sleep(time.Second)
	if err := get(d); err != nil {
		t.Fatalf("Deployment after the VerticalScaler was deleted: %v", err)
	}
	if d.ResourceVersion != appliedVersion {
		t.Errorf("Deployment changed after the VerticalScaler was deleted")
	}
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

func TestMetricsUnavailableKeepsTheLastRecommendation(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff)
	// A recommendation from an earlier run of the manager, of a release before targets: it
	// names the Deployment only.
	last := &v1alpha1.Recommendation{DeploymentName: "web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{{
		ContainerName: "app", Target: list("250m", "256Mi"), UncappedTarget: list("250m", "256Mi")}}}
	vs.Status.Recommendation = last.DeepCopy()
	if err := env.Client.Status().Update(ctx, vs); err != nil {
		t.Fatal(err)
	}

	// envtest serves no metrics.k8s.io.
	env.StartManager(t, "--controllers=verticalscaler", "--resync-interval=0", "--usage-source=metrics-api", "--usage-interval=200ms")
	c := waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionFalse, v1alpha1.ReasonMetricsAPIMissing)
	if !strings.Contains(c.Message, "is metrics-server installed?") || !strings.Contains(c.Message, "the last recommendation is kept") {
		t.Errorf("message = %q, want the cause and that the recommendation is kept", c.Message)
	}
	// Kept, and now naming its target.
	last.Target = "Deployment.apps/web"
	if diff := cmp.Diff(last, vs.Status.Recommendation, compare.Quantities); diff != "" {
		t.Errorf("recommendation (-want +got):\n%s", diff)
	}
	waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMetricsAPIMissing)
	// The poller reads every 200ms and fails each time: the status, written once, stays, and
	// the controller does not retry in a loop.
	before, written := settledReconciles(t), vs.ResourceVersion
	time.Sleep(2 * time.Second)
	if got := reconcileTotal(t) - before; got != 0 {
		t.Errorf("%v more reconciles while metrics stayed missing: a retry loop", got)
	}
	if err := get(vs); err != nil || vs.ResourceVersion != written {
		t.Errorf("status written again while metrics stayed missing (%v)", err)
	}
}

func TestPolicyForMissingContainerIsAConditionNotARetryLoop(t *testing.T) {
	env.StartManager(t, quiet...)
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeAuto, v1alpha1.ContainerPolicy{ContainerName: "ghost"})
	c := waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonContainerNotFound)
	if want := `spec.containerPolicies[0].containerName: the target's Pod template has no container "ghost"`; c.Message != want {
		t.Errorf("message = %q, want %q", c.Message, want)
	}
	before := settledReconciles(t)
	time.Sleep(2 * time.Second)
	if got := reconcileTotal(t) - before; got != 0 {
		t.Errorf("%v more reconciles while nothing changed: an error loop", got)
	}
}

func TestCRDRejectsInvalidSpecs(t *testing.T) {
	ns := env.Namespace(t, "vs-")
	for _, tc := range []struct {
		name string
		spec v1alpha1.VerticalScalerSpec
		want []string
	}{
		{name: "no target", spec: v1alpha1.VerticalScalerSpec{},
			want: []string{"spec", "set exactly one of deploymentName and targetRef"}},
		{name: "two targets", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			TargetRef: &v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}},
			want: []string{"spec", "set exactly one of deploymentName and targetRef"}},
		{name: "targetRef without a kind", spec: v1alpha1.VerticalScalerSpec{
			TargetRef: &v1alpha1.TargetReference{APIVersion: "apps/v1", Name: "db"}},
			want: []string{"spec.targetRef.kind"}},
		{name: "bad deployment name", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "Web_1"},
			want: []string{"spec.deploymentName", "must be a Deployment name"}},
		{name: "unknown update mode", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web", UpdateMode: "Sometimes"},
			want: []string{"spec.updateMode", `supported values: "Off", "Initial", "Recreate", "InPlaceOrRecreate", "Auto"`}},
		{name: "empty container name", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: ""}}},
			want: []string{"spec.containerPolicies[0].containerName"}},
		{name: "min above max", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "app", MinAllowed: list("2", "1Gi"), MaxAllowed: list("1", "2Gi")}}},
			want: []string{"spec.containerPolicies[0]", "minAllowed.cpu must not exceed maxAllowed.cpu"}},
		{name: "memory min above max", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "app", MinAllowed: list("", "2Gi"), MaxAllowed: list("", "1Gi")}}},
			want: []string{"spec.containerPolicies[0]", "minAllowed.memory must not exceed maxAllowed.memory"}},
		{name: "unknown resource in bounds", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "app", MaxAllowed: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}},
			want: []string{"spec.containerPolicies[0].maxAllowed", "only cpu and memory are supported"}},
		{name: "percentile above 100", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			RecommenderPolicy: &v1alpha1.RecommenderPolicy{TargetPercentile: new(int32(101))}},
			want: []string{"spec.recommenderPolicy.targetPercentile", "less than or equal to 100"}},
		{name: "lower bound above the default target", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			RecommenderPolicy: &v1alpha1.RecommenderPolicy{LowerBoundPercentile: new(int32(95))}},
			want: []string{"spec.recommenderPolicy", "lowerBoundPercentile must not exceed targetPercentile (defaults 50 and 90)"}},
		{name: "target above the upper bound", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			RecommenderPolicy: &v1alpha1.RecommenderPolicy{TargetPercentile: new(int32(99)), UpperBoundPercentile: new(int32(98))}},
			want: []string{"spec.recommenderPolicy", "targetPercentile must not exceed upperBoundPercentile"}},
		{name: "negative margin", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			RecommenderPolicy: &v1alpha1.RecommenderPolicy{SafetyMarginPercent: new(int32(-1))}},
			want: []string{"spec.recommenderPolicy.safetyMarginPercent", "greater than or equal to 0"}},
		{name: "OOM bump below 1", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", OOMBumpUpRatio: new(resource.MustParse("0.5"))}}},
			want: []string{"spec.containerPolicies[0].oomBumpUpRatio", "must be at least 1"}},
		{name: "negative OOM minimum", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", OOMMinBumpUp: new(resource.MustParse("-1Mi"))}}},
			want: []string{"spec.containerPolicies[0].oomMinBumpUp", "must not be negative"}},
		{name: "memory window of seconds", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", MemoryAggregationInterval: &metav1.Duration{Duration: 10 * time.Second}}}},
			want: []string{"spec.containerPolicies[0].memoryAggregationInterval", "must be at least 1m"}},
		{name: "no memory windows", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "*", MemoryAggregationIntervalCount: new(int32(0))}}},
			want: []string{"spec.containerPolicies[0].memoryAggregationIntervalCount", "greater than or equal to 1"}},
		{name: "unknown controlled resource", spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web",
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "app", ControlledResources: []v1alpha1.ControlledResource{"gpu"}}}},
			want: []string{"spec.containerPolicies[0].controlledResources[0]", `supported values: "cpu", "memory"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "bad-"}, Spec: tc.spec}
			err := env.Client.Create(context.Background(), vs)
			var status apierrors.APIStatus
			if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
				t.Fatalf("created or failed otherwise: %v", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// TestOneVerticalScalerPerWorkload: of two VerticalScalers that name one Deployment, the older
// sizes it and the newer is TargetFound=False, TargetConflict, naming the older; once the older
// goes, the newer takes over.
func TestOneVerticalScalerPerWorkload(t *testing.T) {
	env.StartManager(t, quiet...)
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	first := newScaler(t, ns, "first", "web", v1alpha1.UpdateModeOff)
	waitCondition(t, first, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)
	// Creation times are whole seconds: the second is created a second later, so that it is
	// the newer by time, not by name.
	time.Sleep(time.Second)
	second := newScaler(t, ns, "a-second", "web", v1alpha1.UpdateModeOff)
	c := waitCondition(t, second, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetConflict)
	if !strings.Contains(c.Message, "VerticalScaler first") {
		t.Errorf("TargetConflict message %q, want it to name VerticalScaler first", c.Message)
	}
	if second.Status.Target != "" || second.Status.TargetSelector != nil {
		t.Errorf("status.target %q, targetSelector %v of the refused VerticalScaler, want none: the usage poller must not read for it", second.Status.Target, second.Status.TargetSelector)
	}
	waitCondition(t, first, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)

	if err := env.Client.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, second, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)

	// A third waits for the second, which then names another workload: the third takes over.
	time.Sleep(time.Second)
	third := newScaler(t, ns, "third", "web", v1alpha1.UpdateModeOff)
	waitCondition(t, third, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetConflict)
	second.Spec.DeploymentName = "api"
	if err := env.Client.Update(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, third, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)
}
