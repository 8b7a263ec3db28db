package configmapwatcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// fullTemplate is a Pod template with more than the trim keeps.
func fullTemplate(annotations map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}}}},
	}
}

func trimmedTemplate(annotations map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}}}},
	}
}

// TestTrim: each kind keeps its metadata (without managed fields and kubectl's last-applied
// copy) and, when an annotation may opt it in (on it or on its Pod template), the Pod
// template's annotations and references; other objects pass through.
func TestTrim(t *testing.T) {
	meta := func(annotations map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2, Annotations: annotations,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	optedIn := map[string]string{v1alpha1.ReloadAnnotation: "true", lastApplied: `{"a":"huge copy"}`}
	kept := map[string]string{v1alpha1.ReloadAnnotation: "true"}
	templateAnnotations := map[string]string{v1alpha1.ConfigHashAnnotation: "abc"}
	reloaderOnTemplate := map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}
	replicas := int32(3)
	csi := map[string]string{"secretproviderclass.reloader.stakater.com/reload": "vault"}
	autoReloadAll := NewOptions()
	autoReloadAll.AutoReloadAll = true
	trimmedMeta := func(annotations map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2, Annotations: annotations}
	}
	for _, tc := range []struct {
		name string
		trim func(any) (any, error)
		in   any
		want any
	}{
		{"Deployment opted in", Deployments.Trim(NewOptions()),
			&appsv1.Deployment{ObjectMeta: meta(optedIn), Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: fullTemplate(templateAnnotations)},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 3}},
			&appsv1.Deployment{ObjectMeta: trimmedMeta(kept), Spec: appsv1.DeploymentSpec{Template: trimmedTemplate(templateAnnotations)}}},
		{"Deployment not opted in: metadata only", Deployments.Trim(NewOptions()),
			&appsv1.Deployment{ObjectMeta: meta(map[string]string{"team": "blue"}), Spec: appsv1.DeploymentSpec{Template: fullTemplate(templateAnnotations)}},
			&appsv1.Deployment{ObjectMeta: trimmedMeta(map[string]string{"team": "blue"})}},
		{"StatefulSet opted in on its Pod template", StatefulSets.Trim(NewOptions()),
			&appsv1.StatefulSet{ObjectMeta: meta(nil), Spec: appsv1.StatefulSetSpec{ServiceName: "web", Template: fullTemplate(reloaderOnTemplate)}},
			&appsv1.StatefulSet{ObjectMeta: trimmedMeta(nil), Spec: appsv1.StatefulSetSpec{Template: trimmedTemplate(reloaderOnTemplate)}}},
		{"DaemonSet opted in", DaemonSets.Trim(NewOptions()),
			&appsv1.DaemonSet{ObjectMeta: meta(optedIn), Spec: appsv1.DaemonSetSpec{Template: fullTemplate(nil)}},
			&appsv1.DaemonSet{ObjectMeta: trimmedMeta(kept), Spec: appsv1.DaemonSetSpec{Template: trimmedTemplate(nil)}}},
		{"CronJob opted in: its job template's Pod template", CronJobs.Trim(NewOptions()),
			&batchv1.CronJob{ObjectMeta: meta(optedIn), Spec: batchv1.CronJobSpec{Schedule: "@daily",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: fullTemplate(templateAnnotations)}}}},
			&batchv1.CronJob{ObjectMeta: trimmedMeta(kept), Spec: batchv1.CronJobSpec{
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: trimmedTemplate(templateAnnotations)}}}}},
		{"other types pass through", Deployments.Trim(NewOptions()), &appsv1.StatefulSet{}, &appsv1.StatefulSet{}},
		{"Deployment: spec.paused is kept, for pause-period", Deployments.Trim(NewOptions()),
			&appsv1.Deployment{ObjectMeta: meta(nil), Spec: appsv1.DeploymentSpec{Paused: true, Template: fullTemplate(nil)}},
			&appsv1.Deployment{ObjectMeta: trimmedMeta(nil), Spec: appsv1.DeploymentSpec{Paused: true}}},
		{"--auto-reload-all: every workload keeps its references", Deployments.Trim(autoReloadAll),
			&appsv1.Deployment{ObjectMeta: meta(nil), Spec: appsv1.DeploymentSpec{Template: fullTemplate(nil)}},
			&appsv1.Deployment{ObjectMeta: trimmedMeta(nil), Spec: appsv1.DeploymentSpec{Template: trimmedTemplate(nil)}}},
		{"any of Reloader's annotations keeps the Pod template's, for the start-up report", Deployments.Trim(NewOptions()),
			&appsv1.Deployment{ObjectMeta: meta(nil), Spec: appsv1.DeploymentSpec{Template: fullTemplate(csi)}},
			&appsv1.Deployment{ObjectMeta: trimmedMeta(nil), Spec: appsv1.DeploymentSpec{Template: trimmedTemplate(csi)}}},
		{"Job opted in", Jobs.Trim(NewOptions()),
			&batchv1.Job{ObjectMeta: meta(optedIn), Spec: batchv1.JobSpec{Template: fullTemplate(nil)}},
			&batchv1.Job{ObjectMeta: trimmedMeta(kept), Spec: batchv1.JobSpec{Template: trimmedTemplate(nil)}}},
		{"Job of a CronJob: left to the CronJob, metadata only", Jobs.Trim(NewOptions()),
			&batchv1.Job{ObjectMeta: ownedByCronJob(meta(nil)), Spec: batchv1.JobSpec{Template: fullTemplate(reloaderOnTemplate)}},
			&batchv1.Job{ObjectMeta: ownedByCronJob(trimmedMeta(nil))}},
		{"Rollout opted in: unstructured, spec.restartAt kept", Rollouts.Trim(NewOptions()),
			rollout(meta(optedIn), fullTemplate(templateAnnotations), "2026-01-01T00:00:00Z", map[string]any{"replicas": int64(3), "strategy": map[string]any{"canary": map[string]any{}}}),
			rollout(trimmedMeta(kept), trimmedTemplate(templateAnnotations), "2026-01-01T00:00:00Z", nil)},
		{"Rollout of a Deployment's Pods (workloadRef): left alone, metadata and the reference only", Rollouts.Trim(NewOptions()),
			rollout(meta(optedIn), corev1.PodTemplateSpec{}, "", map[string]any{"workloadRef": map[string]any{"kind": "Deployment", "name": "web"}}),
			withoutTemplate(rollout(trimmedMeta(kept), corev1.PodTemplateSpec{}, "", map[string]any{"workloadRef": map[string]any{"kind": "Deployment", "name": "web"}}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.trim(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if optedIn[lastApplied] == "" {
		t.Error("the trim changed the annotations of the object it was given: the informer's copy is shared")
	}
}

// ownedByCronJob adds a CronJob as meta's controller.
func ownedByCronJob(meta metav1.ObjectMeta) metav1.ObjectMeta {
	yes := true
	meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "u", Controller: &yes}}
	return meta
}

// rollout returns an unstructured Argo Rollout.
func rollout(meta metav1.ObjectMeta, template corev1.PodTemplateSpec, restartAt string, spec map[string]any) *unstructured.Unstructured {
	u := Rollouts.New()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&meta)
	if err != nil {
		panic(err)
	}
	delete(m, "creationTimestamp")
	u.Object["metadata"] = m
	for k, v := range spec {
		_ = unstructured.SetNestedField(u.Object, v, "spec", k)
	}
	if err := podrefs.SetRolloutTemplate(u, &template); err != nil {
		panic(err)
	}
	if restartAt != "" {
		_ = unstructured.SetNestedField(u.Object, restartAt, "spec", "restartAt")
	}
	return u
}

// withoutTemplate removes a Rollout's spec.template.
func withoutTemplate(u *unstructured.Unstructured) *unstructured.Unstructured {
	unstructured.RemoveNestedField(u.Object, "spec", "template")
	return u
}

// TestPredicates: workload events pass when an opt-in annotation is there (before or after)
// and the Pod template or an annotation other than the controller's own record changed; not
// when only the generation moved (replicas, or a Deployment's annotations: the record's too).
func TestPredicates(t *testing.T) {
	optedIn := func(generation int64, annotations map[string]string) *appsv1.Deployment {
		all := map[string]string{v1alpha1.ReloadAnnotation: "true"}
		for k, v := range annotations {
			all[k] = v
		}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: generation, Annotations: all}}
	}
	plain := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	onTemplate := &appsv1.Deployment{}
	onTemplate.Spec.Template.Annotations = map[string]string{v1alpha1.ReloaderSecretAutoAnnotation: "true"}
	newImage := optedIn(2, nil)
	newImage.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example.com/app:v2"}}
	recorded := optedIn(2, map[string]string{v1alpha1.ConfigStateAnnotation: "b"})
	onTemplateChanged := onTemplate.DeepCopy()
	onTemplateChanged.Generation = 2
	onTemplateChanged.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example.com/app:v2"}}
	p := Predicates(NewOptions())[0]
	for _, tc := range []struct {
		name string
		old  client.Object
		new  client.Object
		want bool
	}{
		{"Pod template changed", optedIn(1, nil), newImage, true},
		{"only the generation moved (replicas)", optedIn(1, nil), optedIn(2, nil), false},
		{"the record written, the Deployment's generation moved with it", optedIn(1, nil), recorded, false},
		{"an annotation changed", optedIn(1, nil), optedIn(1, map[string]string{"team": "blue"}), true},
		{"only the record changed", optedIn(1, map[string]string{v1alpha1.ConfigStateAnnotation: "a"}),
			optedIn(1, map[string]string{v1alpha1.ConfigStateAnnotation: "b"}), false},
		{"the record written for the first time", optedIn(1, nil), optedIn(1, map[string]string{v1alpha1.ConfigStateAnnotation: "b"}), false},
		{"status only", optedIn(1, nil), optedIn(1, nil), false},
		{"opted out", optedIn(1, nil), plain, true},
		{"never opted in", plain, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}}, false},
		{"opted in on the Pod template", onTemplate, onTemplateChanged, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("Update = %v, want %v", got, tc.want)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: onTemplate}) || p.Create(event.CreateEvent{Object: plain}) {
		t.Error("Create must pass exactly the workloads that may be opted in")
	}
	if p.Delete(event.DeleteEvent{Object: optedIn(1, nil)}) {
		t.Error("Delete must not pass: a deleted workload has nothing to roll")
	}
}
