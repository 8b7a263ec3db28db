package podrefs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/example/switchboard/apis/v1alpha1"
)

// podSpecUsingEveryReference references a ConfigMap in every way a Pod can.
func podSpecUsingEveryReference() corev1.PodSpec {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("init-envfrom")}}},
		}},
		Containers: []corev1.Container{{
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("envfrom")}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("a-secret")}},
			},
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("keyref"), Key: "k"}}},
				{Name: "B", Value: "plain"},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
		}, {
			Env: []corev1.EnvVar{{Name: "D", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("envfrom"), Key: "k"}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "v1", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("volume")}}},
			{Name: "v2", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("projected")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: ref("a-secret")}},
			}}}},
			{Name: "v3", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}

func TestConfigMaps(t *testing.T) {
	spec := podSpecUsingEveryReference()
	want := []string{"envfrom", "init-envfrom", "keyref", "projected", "volume"}
	if diff := cmp.Diff(want, ConfigMaps(&spec)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := ConfigMaps(&corev1.PodSpec{}); got != nil {
		t.Errorf("empty Pod spec references %v", got)
	}
}

// TestConfigMapReferencesOnly: the trimmed Pod spec references the same ConfigMaps and keeps
// nothing else.
func TestConfigMapReferencesOnly(t *testing.T) {
	spec := podSpecUsingEveryReference()
	spec.Containers[0].Image = "nginx:1.27"
	spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "envoy:1"})
	spec.NodeSelector = map[string]string{"zone": "a"}
	trimmed := ConfigMapReferencesOnly(&spec)
	if diff := cmp.Diff(ConfigMaps(&spec), ConfigMaps(&trimmed)); diff != "" {
		t.Errorf("referenced ConfigMaps (-original +trimmed):\n%s", diff)
	}
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	want := corev1.PodSpec{
		InitContainers: []corev1.Container{{
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("init-envfrom")}}},
		}},
		Containers: []corev1.Container{{
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("envfrom")}}},
			Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("keyref")}}}},
		}, {
			Env: []corev1.EnvVar{{Name: "D", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("envfrom")}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "v1", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("volume")}}},
			{Name: "v2", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("projected")}},
			}}}},
		},
	}
	if diff := cmp.Diff(want, trimmed); diff != "" {
		t.Errorf("trimmed Pod spec (-want +got):\n%s", diff)
	}
}

func TestReloadConfigMaps(t *testing.T) {
	spec := podSpecUsingEveryReference()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        []string
	}{
		{name: "not opted in", annotations: nil, want: nil},
		{name: "other annotation", annotations: map[string]string{"x": "true"}, want: nil},
		{name: "every referenced ConfigMap", annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"},
			want: []string{"envfrom", "init-envfrom", "keyref", "projected", "volume"}},
		{name: "listed names", annotations: map[string]string{v1alpha1.ReloadAnnotation: " volume, extra ,,volume"},
			want: []string{"extra", "volume"}},
		{name: "empty list", annotations: map[string]string{v1alpha1.ReloadAnnotation: ""}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ReloadConfigMaps(tc.annotations, &spec)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
