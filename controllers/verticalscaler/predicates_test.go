package verticalscaler

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestWhichDeploymentEventsReachTheMapFunction lists the Deployment events and whether the
// predicate lets them through to the map function.
func TestWhichDeploymentEventsReachTheMapFunction(t *testing.T) {
	base := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 1},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	base.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "app", Image: "app:v1", Resources: corev1.ResourceRequirements{Requests: list("100m", "128Mi")}},
		{Name: "sidecar", Image: "proxy:v1"},
	}
	changed := func(mutate func(d *appsv1.Deployment)) *appsv1.Deployment {
		d := base.DeepCopy()
		mutate(d)
		return d
	}
	p := WorkloadChanged(TemplateKinds[0])
	if !p.Create(event.CreateEvent{Object: base}) {
		t.Error("create filtered: a VerticalScaler waiting for its Deployment would never hear of it")
	}
	if !p.Delete(event.DeleteEvent{Object: base}) {
		t.Error("delete filtered: TargetFound would stay True")
	}
	for _, tc := range []struct {
		name  string
		newer *appsv1.Deployment
		want  bool
	}{
		{name: "resync (no change)", newer: base.DeepCopy(), want: false},
		{name: "deleted and created again, seen as an update after a relist", newer: changed(func(d *appsv1.Deployment) { d.UID = "another" }), want: true},
		{name: "status only", newer: changed(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 3; d.Status.ObservedGeneration = 1 }), want: false},
		{name: "replicas", newer: changed(func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(5)) }), want: false},
		{name: "image", newer: changed(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "app:v2" }), want: false},
		{name: "labels and annotations", newer: changed(func(d *appsv1.Deployment) {
			d.Labels = map[string]string{"team": "a"}
			d.Spec.Template.Annotations = map[string]string{"restartedAt": "now"}
		}), want: false},
		{name: "selector", newer: changed(func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web2"}}
		}), want: true},
		{name: "a request", newer: changed(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests = list("200m", "128Mi")
		}), want: true},
		{name: "the same request written differently", newer: changed(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests = list("0.1", "128Mi")
		}), want: false},
		{name: "a limit added", newer: changed(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[1].Resources.Limits = list("1", "")
		}), want: true},
		{name: "a container added", newer: changed(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "debug"})
		}), want: true},
		{name: "a container renamed", newer: changed(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[1].Name = "envoy" }), want: true},
		{name: "an init container added", newer: changed(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "migrate"}}
		}), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.newer}); got != tc.want {
				t.Errorf("reaches the map function: %v, want %v", got, tc.want)
			}
		})
	}

	// An init container that becomes a native sidecar starts to get a recommendation.
	plain := changed(func(d *appsv1.Deployment) { d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy"}} })
	always := corev1.ContainerRestartPolicyAlways
	sidecar := changed(func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
	})
	if !p.Update(event.UpdateEvent{ObjectOld: plain, ObjectNew: sidecar}) {
		t.Error("an init container became a native sidecar: filtered")
	}
}

// TestCronJobPodLabelsAreItsSelector: a CronJob has no selector; its job template's Pod labels
// select its Pods, so a change of them reaches the map function.
func TestCronJobPodLabelsAreItsSelector(t *testing.T) {
	kind, ok := templateKind("batch", "CronJob")
	if !ok {
		t.Fatal("CronJob is not a known kind")
	}
	base := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "report"}}
	base.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"app": "report"}
	relabelled := base.DeepCopy()
	relabelled.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"app": "report", "v": "2"}
	if !WorkloadChanged(kind).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: relabelled}) {
		t.Error("the job template's Pod labels changed: filtered")
	}
	rescheduled := base.DeepCopy()
	rescheduled.Spec.Schedule = "*/5 * * * *"
	if WorkloadChanged(kind).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: rescheduled}) {
		t.Error("the schedule changed: reaches the map function")
	}
	unlabelled := base.DeepCopy()
	unlabelled.Spec.JobTemplate.Spec.Template.Labels = nil
	if _, err := kind.Selector(unlabelled); err == nil {
		t.Error("a CronJob whose Pods have no labels has a selector")
	}
}
