package indexers

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// recordingIndexer records the indexes registered with it.
type recordingIndexer struct {
	registered []string
	fail       error
}

func (r *recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, _ client.IndexerFunc) error {
	r.registered = append(r.registered, Index{Object: obj, Field: field}.String())
	return r.fail
}

// never is a reading without --auto-reload-all.
func never() podrefs.Reading { return podrefs.Reading{} }

var deployments = WorkloadsBySource(&appsv1.Deployment{}, never)

func rollout() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(podrefs.RolloutKind)
	return u
}

func TestRegisterEachIndexOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		indexes []Index
		want    []string
	}{
		{name: "none", indexes: nil, want: nil},
		{name: "one", indexes: []Index{VerticalScalerByTarget}, want: []string{"VerticalScaler:spec.targetRef"}},
		{name: "same index from two controllers",
			indexes: []Index{deployments, VerticalScalerByTarget, deployments, WorkloadsBySource(&batchv1.CronJob{}, never)},
			want:    []string{"Deployment:spec.template.sources", "VerticalScaler:spec.targetRef", "CronJob:spec.template.sources"}},
		{name: "an unstructured kind", indexes: []Index{WorkloadsBySource(rollout(), never)}, want: []string{"Rollout:spec.template.sources"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recordingIndexer{}
			if err := Register(context.Background(), r, tc.indexes...); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, r.registered); diff != "" {
				t.Errorf("registered (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterNamesTheFailingIndex(t *testing.T) {
	r := &recordingIndexer{fail: errors.New("boom")}
	err := Register(context.Background(), r, VerticalScalerByTarget)
	if err == nil || err.Error() != "registering index VerticalScaler:spec.targetRef: boom" {
		t.Errorf("error = %v", err)
	}
}

func TestVerticalScalerTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"deploymentName", &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web"}}, []string{"Deployment.apps/web"}},
		{"targetRef", &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{
			TargetRef: &v1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}}}, []string{"StatefulSet.apps/db"}},
		{"custom kind", &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{
			TargetRef: &v1alpha1.TargetReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}}}, []string{"Rollout.argoproj.io/web"}},
		{"no name", &v1alpha1.VerticalScaler{}, nil},
		{"wrong kind", &appsv1.Deployment{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, VerticalScalerTarget(tc.obj)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestWorkloadSources: the index reads each workload kind's own annotations and Pod template
// (what they mean is podrefs' to say and test), and nothing of other kinds.
func TestWorkloadSources(t *testing.T) {
	volume := []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}}
	optedIn := metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}}
	d := &appsv1.Deployment{ObjectMeta: optedIn}
	d.Spec.Template.Spec.Volumes = volume
	s := &appsv1.StatefulSet{ObjectMeta: optedIn}
	s.Spec.Template.Spec.Volumes = volume
	ds := &appsv1.DaemonSet{}
	ds.Spec.Template.Annotations = map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}
	ds.Spec.Template.Spec.Volumes = volume
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.ReloaderConfigMapReloadAnnotation: "app-.*"}}}
	job := &batchv1.Job{ObjectMeta: optedIn}
	job.Spec.Template.Spec.Volumes = volume
	r := rollout()
	r.SetAnnotations(optedIn.Annotations)
	if err := podrefs.SetRolloutTemplate(r, &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: volume}}); err != nil {
		t.Fatal(err)
	}
	plain := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: volume}}}}
	optedOut := plain.DeepCopy()
	optedOut.Annotations = map[string]string{v1alpha1.ReloaderAutoAnnotation: "false"}
	for _, tc := range []struct {
		obj           client.Object
		autoReloadAll bool
		want          []string
	}{
		{d, false, []string{"Secret/tls"}},
		{s, false, []string{"Secret/tls"}},
		{ds, false, []string{"Secret/tls"}},
		{cj, false, []string{"ConfigMap/*"}},
		{job, false, []string{"Secret/tls"}},
		{r, false, []string{"Secret/tls"}},
		{plain, false, nil},
		{plain, true, []string{"Secret/tls"}},
		{optedOut, true, nil},
		{&corev1.ConfigMap{ObjectMeta: optedIn}, true, nil},
	} {
		if diff := cmp.Diff(tc.want, WorkloadSources(tc.obj, podrefs.Reading{AutoReloadAll: tc.autoReloadAll})); diff != "" {
			t.Errorf("%T %v, auto-reload-all %v (-want +got):\n%s", tc.obj, tc.obj.GetAnnotations(), tc.autoReloadAll, diff)
		}
	}
}
