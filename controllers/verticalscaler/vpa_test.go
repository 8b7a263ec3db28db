package verticalscaler_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	vpav1 "github.com/example/switchboard/apis/vpa/v1"
	"github.com/example/switchboard/controllers/internal/compare"
	"github.com/example/switchboard/controllers/verticalscaler"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/internal/testenv"
)

// vpaUsage runs the verticalscaler and the verticalpodautoscaler, with usage read from Pod
// annotations every 200ms.
var vpaUsage = []string{"--controllers=verticalscaler,verticalpodautoscaler", "--resync-interval=0",
	"--usage-source=pod-annotations", "--usage-interval=200ms"}

// newVPA creates a VerticalPodAutoscaler of the VPA's own API with spec, written as a VPA user
// writes one.
func newVPA(t *testing.T, ns, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	vpa := verticalscaler.NewVerticalPodAutoscaler()
	vpa.SetNamespace(ns)
	vpa.SetName(name)
	vpa.Object["spec"] = spec
	if err := env.Client.Create(context.Background(), vpa); err != nil {
		t.Fatal(err)
	}
	return vpa
}

// startVPAs installs the VPA's CRDs, starts a manager with vpaUsage, and returns a new
// namespace with a Deployment web.
func startVPAs(t *testing.T) string {
	t.Helper()
	env.InstallVPACRDs(t)
	env.StartManager(t, vpaUsage...)
	ns := env.Namespace(t, "vpa-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	return ns
}

// vpaStatus reads the VerticalPodAutoscaler's status.
func vpaStatus(vpa *unstructured.Unstructured) (vpav1.Status, error) {
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(vpa), vpa); err != nil {
		return vpav1.Status{}, err
	}
	raw, _, err := unstructured.NestedMap(vpa.Object, "status")
	if err != nil {
		return vpav1.Status{}, err
	}
	var status vpav1.Status
	err = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status)
	return status, err
}

// vpaCondition is the condition of type t, nil when there is none.
func vpaCondition(status vpav1.Status, t string) *vpav1.Condition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// newTwoContainerDeployment creates Deployment name with containers app and sidecar, and two
// Pods of it reporting usage for both.
func newTwoContainerDeployment(t *testing.T, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	containers := []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}, {Name: "sidecar", Image: "registry.example.com/proxy:v1"}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}},
	}
	if err := env.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-", Labels: labels, Annotations: map[string]string{
				v1alpha1.UsageAnnotationPrefix + "app": "cpu=300m,memory=200Mi", v1alpha1.UsageAnnotationPrefix + "sidecar": "cpu=20m,memory=30Mi"}},
			Spec: corev1.PodSpec{Containers: containers},
		}
		if err := env.Client.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerticalPodAutoscalerIsCarriedOut: a VerticalPodAutoscaler as a VPA user writes it (a
// sidecar left out with mode Off, the others limited to cpu with a floor) becomes a
// VerticalScaler of its name that it controls, and its status gets the recommendation as the
// VPA writes one: no sidecar, cpu only, within the floor, RecommendationProvided and no
// NoPodsMatched.
func TestVerticalPodAutoscalerIsCarriedOut(t *testing.T) {
	env.InstallVPACRDs(t)
	env.StartManager(t, vpaUsage...)
	ns := env.Namespace(t, "vpa-")
	newTwoContainerDeployment(t, ns, "web")
	vpa := newVPA(t, ns, "web", map[string]any{
		"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		"updatePolicy": map[string]any{"updateMode": "Off"},
		"resourcePolicy": map[string]any{"containerPolicies": []any{
			map[string]any{"containerName": "sidecar", "mode": "Off"},
			map[string]any{"containerName": "*", "controlledResources": []any{"cpu"}, "minAllowed": map[string]any{"cpu": "500m"}},
		}},
	})

	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	testenv.Eventually(t, timeout, func() error { return get(vs) })
	if !metav1.IsControlledBy(vs, vpa) {
		t.Errorf("VerticalScaler web's owners = %+v, want the VerticalPodAutoscaler as controller", vs.OwnerReferences)
	}
	wantSpec := v1alpha1.VerticalScalerSpec{
		TargetRef:  &v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		UpdateMode: v1alpha1.UpdateModeOff, UpdatePolicy: &v1alpha1.UpdatePolicy{RecreateBy: v1alpha1.RecreateByEviction},
		ContainerPolicies: []v1alpha1.ContainerPolicy{
			{ContainerName: "sidecar", Mode: v1alpha1.ContainerModeOff, ControlledValues: v1alpha1.ControlledRequestsAndLimits},
			{ContainerName: "*", Mode: v1alpha1.ContainerModeAuto, ControlledValues: v1alpha1.ControlledRequestsAndLimits,
				ControlledResources: []v1alpha1.ControlledResource{"cpu"}, MinAllowed: list("500m", "")},
		},
	}
	if diff := cmp.Diff(wantSpec, vs.Spec, compare.Quantities); diff != "" {
		t.Errorf("VerticalScaler web's spec (-want +got):\n%s", diff)
	}

	var status vpav1.Status
	testenv.Eventually(t, timeout, func() error {
		var err error
		if status, err = vpaStatus(vpa); err != nil {
			return err
		}
		if c := vpaCondition(status, vpav1.ConditionRecommendationProvided); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("RecommendationProvided = %+v, want True", c)
		}
		return nil
	})
	if status.ObservedGeneration == nil || *status.ObservedGeneration != vpa.GetGeneration() {
		t.Errorf("status.observedGeneration = %v, want %d", status.ObservedGeneration, vpa.GetGeneration())
	}
	for _, unwanted := range []string{vpav1.ConditionNoPodsMatched, vpav1.ConditionConfigUnsupported} {
		if c := vpaCondition(status, unwanted); c != nil {
			t.Errorf("condition %s = %+v, want none", unwanted, c)
		}
	}
	recs := status.Recommendation.ContainerRecommendations
	if len(recs) != 1 || recs[0].ContainerName != "app" {
		t.Fatalf("recommendations = %+v, want one, for app (sidecar's mode is Off)", recs)
	}
	floor := resource.MustParse("500m")
	for name, values := range map[string]corev1.ResourceList{"target": recs[0].Target, "lowerBound": recs[0].LowerBound, "upperBound": recs[0].UpperBound} {
		cpu, ok := values[corev1.ResourceCPU]
		if len(values) != 1 || !ok || cpu.Cmp(floor) < 0 {
			t.Errorf("%s = %v, want cpu only (the controlled resource), at least minAllowed 500m", name, values)
		}
	}
	if uncapped := recs[0].UncappedTarget[corev1.ResourceCPU]; uncapped.Cmp(floor) >= 0 {
		t.Errorf("uncappedTarget cpu = %s, want the usage's estimate, under minAllowed 500m", uncapped.String())
	}
}

// TestVerticalPodAutoscalerOfAnotherRecommender: an object that names another recommender gets
// the recommendation that recommender writes into its status applied, as the VPA's updater and
// admission controller apply it, and its status is left to that recommender; once it names none
// (the default recommender's, as Switchboard's is by default) Switchboard recommends for it.
func TestVerticalPodAutoscalerOfAnotherRecommender(t *testing.T) {
	ctx := context.Background()
	ns := startVPAs(t)
	vpa := newVPA(t, ns, "web", map[string]any{
		"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		"updatePolicy": map[string]any{"updateMode": "Recreate"},
		"resourcePolicy": map[string]any{"containerPolicies": []any{
			map[string]any{"containerName": "*", "maxAllowed": map[string]any{"cpu": "200m"}},
		}},
		"recommenders": []any{map[string]any{"name": "custom"}},
	})
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		if want := []v1alpha1.RecommenderSelector{{Name: "custom"}}; !cmp.Equal(vs.Spec.Recommenders, want) {
			return fmt.Errorf("spec.recommenders = %+v, want %+v", vs.Spec.Recommenders, want)
		}
		return nil
	})

	// What the other recommender writes, as the VPA's e2e suite writes it: a target above the
	// policy's cpu ceiling, without uncappedTarget.
	rec := map[string]any{"containerRecommendations": []any{map[string]any{"containerName": "app",
		"target": map[string]any{"cpu": "250m", "memory": "200Mi"}, "lowerBound": map[string]any{"cpu": "250m", "memory": "200Mi"},
		"upperBound": map[string]any{"cpu": "250m", "memory": "200Mi"}}}}
	if err := unstructured.SetNestedField(vpa.Object, rec, "status", "recommendation"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(ctx, vpa); err != nil {
		t.Fatal(err)
	}
	// What the admission policy gives the Deployment's new Pods (the VPA evicts the running ones).
	want := list("200m", "200Mi")
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		if len(vs.Status.PodResources) != 1 {
			return fmt.Errorf("podResources %+v, want app's", vs.Status.PodResources)
		}
		if got := vs.Status.PodResources[0].Requests; !cmp.Equal(want, got, compare.Quantities) {
			return fmt.Errorf("app's requests at admission = %v, want %v: the written target within maxAllowed", got, want)
		}
		return nil
	})
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided); c == nil || c.Reason != v1alpha1.ReasonRecommendedElsewhere {
			return fmt.Errorf("VerticalScaler's RecommendationProvided = %+v, want reason %s", c, v1alpha1.ReasonRecommendedElsewhere)
		}
		return nil
	})
	// By now the controller reconciled it on each change of its VerticalScaler.
	status, err := vpaStatus(vpa)
	if err != nil {
		t.Fatal(err)
	}
	if status.ObservedGeneration != nil || len(status.Conditions) > 0 || len(status.Recommendation.ContainerRecommendations) != 1 ||
		!cmp.Equal(list("250m", "200Mi"), status.Recommendation.ContainerRecommendations[0].Target, compare.Quantities) {
		t.Errorf("status of a VPA for recommender custom = %+v, want it as that recommender wrote it", status)
	}

	unstructured.RemoveNestedField(vpa.Object, "spec", "recommenders")
	if err := env.Client.Update(ctx, vpa); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		if len(vs.Spec.Recommenders) > 0 {
			return fmt.Errorf("spec.recommenders = %+v, want none: Switchboard's own recommends", vs.Spec.Recommenders)
		}
		// The other recommender's recommendation is no estimate of Switchboard's own: the
		// status says it waits for usage (the Deployment has no Pods), rather than failing to
		// write a recommendation without targets, which the API server refuses.
		c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided)
		if vs.Status.ObservedGeneration != vs.Generation || c == nil || c.Reason != v1alpha1.ReasonNoUsageYet {
			return fmt.Errorf("observedGeneration %d of %d, RecommendationProvided = %+v, want reason %s", vs.Status.ObservedGeneration, vs.Generation, c, v1alpha1.ReasonNoUsageYet)
		}
		return nil
	})
}

// TestVerticalPodAutoscalerConfigUnsupported: what Switchboard cannot carry out (a startup
// boost, a VerticalScaler of the name that the VPA did not make) is ConfigUnsupported=True with a
// message that names it, and no VerticalScaler acts; once fixed, it is acted on and the condition
// goes.
func TestVerticalPodAutoscalerConfigUnsupported(t *testing.T) {
	ctx := context.Background()
	ns := startVPAs(t)
	target := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
	boosted := newVPA(t, ns, "boosted", map[string]any{"targetRef": target,
		"startupBoost": map[string]any{"cpu": map[string]any{"type": "Factor", "factor": int64(2)}}})
	waitUnsupported(t, boosted, "spec.startupBoost")
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "boosted"}}
	if err := get(vs); !apierrors.IsNotFound(err) {
		t.Errorf("VerticalScaler of an unsupported VPA: %v, want none", err)
	}
	unstructured.RemoveNestedField(boosted.Object, "spec", "startupBoost")
	if err := env.Client.Update(ctx, boosted); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		status, err := vpaStatus(boosted)
		if err != nil {
			return err
		}
		if c := vpaCondition(status, vpav1.ConditionConfigUnsupported); c != nil {
			return fmt.Errorf("ConfigUnsupported = %+v once fixed, want none", c)
		}
		return get(vs)
	})

	// A VerticalScaler of the name, made by hand, is not taken over.
	newScaler(t, ns, "taken", "web", v1alpha1.UpdateModeOff)
	taken := newVPA(t, ns, "taken", map[string]any{"targetRef": target})
	waitUnsupported(t, taken, "VerticalScaler taken exists and was not made from this VerticalPodAutoscaler")
}

// waitUnsupported waits until the VerticalPodAutoscaler is ConfigUnsupported=True with a message
// that contains want.
func waitUnsupported(t *testing.T, vpa *unstructured.Unstructured, want string) {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		status, err := vpaStatus(vpa)
		if err != nil {
			return err
		}
		c := vpaCondition(status, vpav1.ConditionConfigUnsupported)
		if c == nil || c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, want) {
			return fmt.Errorf("ConfigUnsupported = %+v, want True saying %q", c, want)
		}
		return nil
	})
}

// createGone creates obj and deletes it when the test ends: a VPA checkpoint written recently,
// or vpa-webhook-config, left behind would make every later manager of the package find the
// VPA's own components running.
func createGone(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
}

// TestVerticalPodAutoscalerHistoryCarriesOver: the VPA recommender's checkpoint of a container
// (two days of CPU usage near 2 cores) is read when the VerticalScaler made from the
// VerticalPodAutoscaler starts, so that its first recommendation rests on that history, not on
// the few samples of 100m its Pods report since.
func TestVerticalPodAutoscalerHistoryCarriesOver(t *testing.T) {
	ns := startVPAs(t)
	now := time.Now().UTC()
	day := now.Round(24 * time.Hour)
	cpuBucket := recommender.CPUHistogramOptions.FindBucket(2)
	memoryBucket := recommender.MemoryHistogramOptions.FindBucket(500 << 20)
	checkpoint := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": vpav1.GroupVersion.String(), "kind": vpav1.CheckpointKind,
		"metadata": map[string]any{"namespace": ns, "name": "web-app"},
		"spec":     map[string]any{"vpaObjectName": "web", "containerName": "app"},
		"status": map[string]any{
			"version": vpav1.CheckpointVersion, "lastUpdateTime": now.Add(-time.Minute).Format(time.RFC3339),
			"cpuHistogram": map[string]any{"referenceTimestamp": day.Format(time.RFC3339), "totalWeight": 200.0,
				"bucketWeights": map[string]any{strconv.Itoa(cpuBucket): int64(10000)}},
			"memoryHistogram": map[string]any{"referenceTimestamp": day.Format(time.RFC3339), "totalWeight": 2.0,
				"bucketWeights": map[string]any{strconv.Itoa(memoryBucket): int64(10000)}},
			"firstSampleStart": now.Add(-48 * time.Hour).Format(time.RFC3339), "lastSampleStart": now.Add(-time.Minute).Format(time.RFC3339),
			"totalSamplesCount": int64(2000),
		},
	}}
	createGone(t, checkpoint)
	newPod(t, ns, "web", "cpu=100m,memory=100Mi")
	vpa := newVPA(t, ns, "web", map[string]any{
		"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		"updatePolicy": map[string]any{"updateMode": "Off"},
	})
	var recs []vpav1.RecommendedContainerResources
	testenv.Eventually(t, timeout, func() error {
		status, err := vpaStatus(vpa)
		if err != nil {
			return err
		}
		if status.Recommendation == nil || len(status.Recommendation.ContainerRecommendations) == 0 {
			return errors.New("no recommendation yet")
		}
		recs = status.Recommendation.ContainerRecommendations
		return nil
	})
	// The VPA's 90th percentile of that history with its 15% margin is about 2.3 cores; the
	// Pods' own 100m would give a tenth of it.
	if cpu := recs[0].Target[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1900m")) < 0 {
		t.Errorf("first cpu target %s, want about 2.3 cores, from the VPA's checkpoint", cpu.String())
	}
}

// TestVerticalPodAutoscalerIdleWhileTheVPARuns: a manager that finds the VPA's own admission
// controller registered (vpa-webhook-config), or its recommender writing checkpoints, leaves its
// verticalpodautoscaler idle and says why on /readyz, so that the two never size the same
// Pods; with neither, or with --vpa-detect-components=false, it acts.
func TestVerticalPodAutoscalerIdleWhileTheVPARuns(t *testing.T) {
	env.InstallVPACRDs(t)
	ctx := context.Background()
	ns := env.Namespace(t, "vpa-")
	role := func(args ...string) string {
		t.Helper()
		probes := testenv.FreeAddress(t)
		m := env.StartManager(t, append([]string{"--health-probe-bind-address=" + probes}, append(vpaUsage, args...)...)...)
		defer m.Stop()
		var body string
		testenv.Eventually(t, timeout, func() error {
			resp, err := http.Get("http://" + probes + "/readyz/" + verticalscaler.VPAControllerName)
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }()
			b, err := io.ReadAll(resp.Body)
			body = string(b)
			return err
		})
		return body
	}

	webhook := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "vpa-webhook-config"}}
	createGone(t, webhook)
	if got := role(); !strings.Contains(got, "idle: the VPA's admission controller is registered") {
		t.Errorf("with vpa-webhook-config: /readyz/verticalpodautoscaler says %q, want idle, naming the admission controller", got)
	}
	if got := role("--vpa-detect-components=false"); strings.Contains(got, "idle") {
		t.Errorf("with --vpa-detect-components=false: /readyz/verticalpodautoscaler says %q, want it not idle", got)
	}
	if err := env.Client.Delete(ctx, webhook); err != nil {
		t.Fatal(err)
	}

	checkpoint := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": vpav1.GroupVersion.String(), "kind": vpav1.CheckpointKind,
		"metadata": map[string]any{"namespace": ns, "name": "recent"},
		"spec":     map[string]any{"vpaObjectName": "other", "containerName": "app"},
		"status":   map[string]any{"version": vpav1.CheckpointVersion, "lastUpdateTime": time.Now().UTC().Format(time.RFC3339)},
	}}
	createGone(t, checkpoint)
	if got := role(); !strings.Contains(got, "idle: the VPA's recommender runs") {
		t.Errorf("with a checkpoint written now: /readyz/verticalpodautoscaler says %q, want idle, naming the recommender", got)
	}
	// Written long ago: the VPA's recommender is gone.
	if err := unstructured.SetNestedField(checkpoint.Object, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "status", "lastUpdateTime"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(ctx, checkpoint); err != nil {
		t.Fatal(err)
	}
	if got := role(); strings.Contains(got, "idle") {
		t.Errorf("with a checkpoint an hour old: /readyz/verticalpodautoscaler says %q, want it not idle", got)
	}
}

// TestVerticalPodAutoscalerCheckpointsCollected: a VerticalPodAutoscalerCheckpoint whose
// VerticalPodAutoscaler does not exist is deleted, as the VPA's recommender collects them; one of
// an existing VerticalPodAutoscaler stays.
func TestVerticalPodAutoscalerCheckpointsCollected(t *testing.T) {
	ctx := context.Background()
	ns := startVPAs(t)
	newVPA(t, ns, "web", map[string]any{
		"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
		"updatePolicy": map[string]any{"updateMode": "Off"},
	})
	checkpoint := func(name, vpa string) *unstructured.Unstructured {
		c := verticalscaler.NewVerticalPodAutoscalerCheckpoint()
		c.SetNamespace(ns)
		c.SetName(name)
		c.Object["spec"] = map[string]any{"vpaObjectName": vpa, "containerName": "app"}
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	orphan, kept := checkpoint("gone-app", "gone"), checkpoint("web-app", "web")
	testenv.Eventually(t, timeout, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(orphan), orphan); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the checkpoint of a VerticalPodAutoscaler that does not exist: %v, want it deleted", err)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kept), kept); err != nil {
		t.Errorf("the checkpoint of VerticalPodAutoscaler web: %v, want it kept", err)
	}
}
