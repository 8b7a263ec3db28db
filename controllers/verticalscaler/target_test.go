package verticalscaler_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/example/switchboard/apis/v1alpha1"
)

// installWorkloadCRDs installs the test's custom workload kinds (testdata/workloads.yaml) once.
var installWorkloadCRDs = sync.OnceValue(func() error {
	_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join("testdata", "workloads.yaml")}})
	return err
})

// workloadGroup is the API group of the test's custom workloads.
const workloadGroup = "workloads.test.example.com"

// podTemplate is the Pod template of the test's workloads: one container "app", Pods labelled
// app: name.
func podTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
	}
}

// newWorkload creates a workload of kind ("Deployment", "StatefulSet", "DaemonSet",
// "ReplicaSet", "CronJob", "Job" or "Widget") named name whose Pods are labelled app: name, and returns
// the targetRef that names it.
func newWorkload(t *testing.T, ns, kind, name string) v1alpha1.TargetReference {
	t.Helper()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	meta := metav1.ObjectMeta{Namespace: ns, Name: name}
	var obj client.Object
	apiVersion := "apps/v1"
	switch kind {
	case "Deployment":
		obj = &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: selector, Template: podTemplate(name)}}
	case "StatefulSet":
		obj = &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: selector, Template: podTemplate(name)}}
	case "DaemonSet":
		obj = &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: podTemplate(name)}}
	case "ReplicaSet":
		obj = &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: podTemplate(name)}}
	case "CronJob":
		apiVersion = "batch/v1"
		cj := &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "0 * * * *"}}
		cj.Spec.JobTemplate.Spec.Template = podTemplate(name)
		// A Job's Pods may not restart always.
		cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		obj = cj
	case "Job":
		apiVersion = "batch/v1"
		// A selector of its own, as a Job may have, so that its Pods are those labelled app: name.
		job := &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{ManualSelector: new(true), Selector: selector, Template: podTemplate(name)}}
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		obj = job
	case "Widget":
		apiVersion = workloadGroup + "/v1"
		if err := installWorkloadCRDs(); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(2)}}}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		if err := env.Client.Create(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		// Its controller would say which Pods are its in status, as an Argo Rollout does.
		u.Object["status"] = map[string]any{"replicas": int64(2), "selector": "app=" + name}
		if err := env.Client.Status().Update(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		return v1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	default:
		t.Fatalf("unknown kind %s", kind)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return v1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
}

// newTargetScaler creates a VerticalScaler of ref in Off mode.
func newTargetScaler(t *testing.T, ns, name string, ref v1alpha1.TargetReference) *v1alpha1.VerticalScaler {
	t.Helper()
	return newTargetScalerWith(t, ns, name, v1alpha1.VerticalScalerSpec{TargetRef: &ref, UpdateMode: v1alpha1.UpdateModeOff})
}

// TestEveryKindIsSized: a VerticalScaler of each workload kind finds its target, records the
// selector of its Pods, and recommends from their usage.
func TestEveryKindIsSized(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ns := env.Namespace(t, "vs-")
	for _, kind := range []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "CronJob", "Job", "Widget"} {
		t.Run(kind, func(t *testing.T) {
			name := strings.ToLower(kind)
			ref := newWorkload(t, ns, kind, name)
			newPod(t, ns, name, "cpu=500m,memory=300Mi")
			vs := newTargetScaler(t, ns, name, ref)
			waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
			c := waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)
			if vs.Status.Target != ref.Key() || !strings.Contains(c.Message, ref.Key()) {
				t.Errorf("status target %q, condition %q; want %s", vs.Status.Target, c.Message, ref.Key())
			}
			if got := vs.Status.TargetSelector; got == nil || got.MatchLabels["app"] != name {
				t.Errorf("target selector %v, want app=%s", got, name)
			}
			rec := vs.Status.Recommendation
			if rec.Target != ref.Key() || rec.DeploymentName != "" || len(rec.ContainerRecommendations) != 1 ||
				rec.ContainerRecommendations[0].ContainerName != "app" {
				t.Errorf("recommendation %+v, want one for %s's container app", rec, ref.Key())
			}
		})
	}
}

// TestTargetProblemsAreConditions: a target that is missing, of a kind the API server does not
// serve, without a scale subresource, or without a way to select its Pods is a TargetFound
// condition that names it, and no retry loop.
func TestTargetProblemsAreConditions(t *testing.T) {
	if err := installWorkloadCRDs(); err != nil {
		t.Fatal(err)
	}
	env.StartManager(t, quiet...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	// A Widget whose controller has not said which Pods are its yet.
	unselected := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1)}}}
	unselected.SetAPIVersion(workloadGroup + "/v1")
	unselected.SetKind("Widget")
	unselected.SetNamespace(ns)
	unselected.SetName("unselected")
	if err := env.Client.Create(ctx, unselected); err != nil {
		t.Fatal(err)
	}
	gadget := unselected.DeepCopy()
	gadget.SetKind("Gadget")
	gadget.SetName("gadget")
	gadget.SetResourceVersion("")
	if err := env.Client.Create(ctx, gadget); err != nil {
		t.Fatal(err)
	}
	// A Widget without the replicas its CRD's scale subresource reads.
	unscalable := unselected.DeepCopy()
	unscalable.SetName("unscalable")
	unscalable.SetResourceVersion("")
	delete(unscalable.Object, "spec")
	if err := env.Client.Create(ctx, unscalable); err != nil {
		t.Fatal(err)
	}
	unlabelled := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unlabelled"}, Spec: batchv1.CronJobSpec{Schedule: "0 * * * *"}}
	unlabelled.Spec.JobTemplate.Spec.Template = podTemplate("unlabelled")
	unlabelled.Spec.JobTemplate.Spec.Template.Labels = nil
	unlabelled.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if err := env.Client.Create(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		ref    v1alpha1.TargetReference
		reason string
		says   string
	}{
		{"missing-statefulset", v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}, v1alpha1.ReasonTargetNotFound,
			"StatefulSet.apps/db does not exist in namespace " + ns},
		{"missing-widget", v1alpha1.TargetReference{APIVersion: workloadGroup + "/v1", Kind: "Widget", Name: "nope"}, v1alpha1.ReasonTargetNotFound,
			"Widget." + workloadGroup + "/nope does not exist"},
		{"unknown-kind", v1alpha1.TargetReference{APIVersion: "nowhere.example.com/v1", Kind: "Thing", Name: "x"}, v1alpha1.ReasonTargetUnsupported,
			"the API server serves no kind Thing in nowhere.example.com/v1"},
		{"no-scale-subresource", v1alpha1.TargetReference{APIVersion: workloadGroup + "/v1", Kind: "Gadget", Name: "gadget"}, v1alpha1.ReasonTargetUnsupported,
			"its kind has no scale subresource"},
		{"no-selector", v1alpha1.TargetReference{APIVersion: workloadGroup + "/v1", Kind: "Widget", Name: "unselected"}, v1alpha1.ReasonTargetUnsupported,
			"its scale subresource has no label selector"},
		{"no-replicas", v1alpha1.TargetReference{APIVersion: workloadGroup + "/v1", Kind: "Widget", Name: "unscalable"}, v1alpha1.ReasonTargetUnsupported,
			"the API server cannot read its scale subresource"},
		{"unlabelled-cronjob", v1alpha1.TargetReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "unlabelled"}, v1alpha1.ReasonTargetUnsupported,
			"its job template's Pod template has no labels"},
		{"bad-api-version", v1alpha1.TargetReference{APIVersion: "apps/v1/extra", Kind: "Deployment", Name: "x"}, v1alpha1.ReasonTargetUnsupported,
			`spec.targetRef.apiVersion "apps/v1/extra" is not group/version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := newTargetScaler(t, ns, tc.name, tc.ref)
			c := waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, tc.reason)
			if !strings.Contains(c.Message, tc.says) {
				t.Errorf("message %q, want it to say %q", c.Message, tc.says)
			}
			waitCondition(t, vs, v1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason)
			if vs.Status.Target != "" || vs.Status.TargetSelector != nil {
				t.Errorf("status names target %q, selector %v, for a target it cannot size", vs.Status.Target, vs.Status.TargetSelector)
			}
		})
	}
	before := settledReconciles(t)
	time.Sleep(2 * time.Second)
	if got := reconcileTotal(t) - before; got != 0 {
		t.Errorf("%v more reconciles while nothing changed: a retry loop", got)
	}
}

// TestEveryKindIsWatched: a VerticalScaler waiting for its target hears of its creation and
// deletion through the watch of the target's kind and the index of targets, for every kind the
// controller caches, with no resync.
func TestEveryKindIsWatched(t *testing.T) {
	env.StartManager(t, quiet...)
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	for _, kind := range []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "CronJob", "Job"} {
		t.Run(kind, func(t *testing.T) {
			name := "watched-" + strings.ToLower(kind)
			apiVersion := "apps/v1"
			if kind == "CronJob" || kind == "Job" {
				apiVersion = "batch/v1"
			}
			vs := newTargetScaler(t, ns, name, v1alpha1.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name})
			waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)
			ref := newWorkload(t, ns, kind, name)
			waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionTrue, v1alpha1.ReasonTargetFound)
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(ref.APIVersion)
			obj.SetKind(ref.Kind)
			obj.SetNamespace(ns)
			obj.SetName(name)
			// In the background: a Job's default, orphan, would wait for the garbage collector,
			// which envtest does not run.
			if err := env.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				t.Fatal(fmt.Errorf("deleting %s: %w", ref.Key(), err))
			}
			waitCondition(t, vs, v1alpha1.ConditionTargetFound, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)
		})
	}
}

// TestRecreateWritesTheTemplateOfEveryRollingKind: Recreate writes the recommendation to the
// Pod template of every kind whose own controller then replaces its Pods.
func TestRecreateWritesTheTemplateOfEveryRollingKind(t *testing.T) {
	env.StartManager(t, annotationUsage...)
	ns := env.Namespace(t, "vs-")
	for _, kind := range []string{"StatefulSet", "DaemonSet", "CronJob"} {
		t.Run(kind, func(t *testing.T) {
			name := "recreated-" + strings.ToLower(kind)
			ref := newWorkload(t, ns, kind, name)
			newPod(t, ns, name, "cpu=500m,memory=300Mi")
			vs := newTargetScalerWith(t, ns, name, v1alpha1.VerticalScalerSpec{TargetRef: &ref, UpdateMode: v1alpha1.UpdateModeRecreate})
			waitCondition(t, vs, v1alpha1.ConditionApplied, metav1.ConditionTrue, v1alpha1.ReasonApplied)
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion(ref.APIVersion)
			obj.SetKind(ref.Kind)
			if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
				t.Fatal(err)
			}
			path := []string{"spec", "template", "spec", "containers"}
			if kind == "CronJob" {
				path = []string{"spec", "jobTemplate", "spec", "template", "spec", "containers"}
			}
			containers, _, _ := unstructured.NestedSlice(obj.Object, path...)
			requests, _, _ := unstructured.NestedStringMap(containers[0].(map[string]any), "resources", "requests")
			want := vs.Status.Recommendation.ContainerRecommendations[0].Target
			if requests["cpu"] != want.Cpu().String() || requests["memory"] != want.Memory().String() {
				t.Errorf("the Pod template requests %v, want the recommendation %v", requests, want)
			}
		})
	}
}
