package indexers

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
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

func TestRegisterEachIndexOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		indexes []Index
		want    []string
	}{
		{name: "none", indexes: nil, want: nil},
		{name: "one", indexes: []Index{VerticalScalerByDeploymentName}, want: []string{"VerticalScaler:spec.deploymentName"}},
		{name: "same index from two controllers",
			indexes: []Index{DeploymentByConfigMap, VerticalScalerByDeploymentName, DeploymentByConfigMap},
			want:    []string{"Deployment:spec.template.configMaps", "VerticalScaler:spec.deploymentName"}},
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
	err := Register(context.Background(), r, VerticalScalerByDeploymentName)
	if err == nil || err.Error() != "registering index VerticalScaler:spec.deploymentName: boom" {
		t.Errorf("error = %v", err)
	}
}

func TestVerticalScalerDeploymentName(t *testing.T) {
	vs := &v1alpha1.VerticalScaler{Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web"}}
	if diff := cmp.Diff([]string{"web"}, VerticalScalerDeploymentName(vs)); diff != "" {
		t.Error(diff)
	}
	if got := VerticalScalerDeploymentName(&v1alpha1.VerticalScaler{}); got != nil {
		t.Errorf("empty name indexed as %v", got)
	}
	if got := VerticalScalerDeploymentName(&appsv1.Deployment{}); got != nil {
		t.Errorf("wrong kind indexed as %v", got)
	}
}

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

func TestReferencedConfigMaps(t *testing.T) {
	spec := podSpecUsingEveryReference()
	want := []string{"envfrom", "init-envfrom", "keyref", "projected", "volume"}
	if diff := cmp.Diff(want, ReferencedConfigMaps(&spec)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := ReferencedConfigMaps(&corev1.PodSpec{}); got != nil {
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
	if diff := cmp.Diff(ReferencedConfigMaps(&spec), ReferencedConfigMaps(&trimmed)); diff != "" {
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

func TestDeploymentConfigMaps(t *testing.T) {
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
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			d.Spec.Template.Spec = spec
			if diff := cmp.Diff(tc.want, DeploymentConfigMaps(d)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
