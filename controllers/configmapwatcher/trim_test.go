package configmapwatcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

func TestTrimDeployment(t *testing.T) {
	replicas := int32(3)
	full := func(annotations map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2, Annotations: annotations,
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"},
						Annotations: map[string]string{v1alpha1.ConfigHashAnnotation: "abc"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}},
				},
			},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 3},
		}
	}
	optedIn := map[string]string{v1alpha1.ReloadAnnotation: "true"}
	want := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2, Annotations: optedIn}}
	want.Spec.Template.Annotations = map[string]string{v1alpha1.ConfigHashAnnotation: "abc"}
	want.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{
		ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}
	notOptedIn := map[string]string{"team": "blue"}
	for _, tc := range []struct {
		name string
		in   any
		want any
	}{
		{"opted in: metadata, template annotations, references", full(optedIn), want},
		{"not opted in: metadata only", full(notOptedIn),
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2, Annotations: notOptedIn}}},
		{"other types pass through", &corev1.ConfigMap{}, &corev1.ConfigMap{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TrimDeployment(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
