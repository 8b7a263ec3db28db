package podrefs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ref(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

// podSpecUsingEveryReference references ConfigMaps and Secrets in every way a Pod can.
func podSpecUsingEveryReference() corev1.PodSpec {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{
			Name:    "init",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("init-envfrom")}}},
		}, {
			// A native sidecar: an init container that runs as long as the Pod.
			Name: "sidecar", RestartPolicy: &always,
			Env: []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sidecar-secret"), Key: "token"}}}},
		}},
		Containers: []corev1.Container{{
			Name: "app",
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("envfrom")}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("secret-envfrom")}},
			},
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("keyref"), Key: "k"}}},
				{Name: "A2", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("keyref"), Key: "j"}}},
				{Name: "B", Value: "plain"},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
		}, {
			Name: "second",
			// envFrom wins over a key reference to the same ConfigMap: every key is used.
			Env: []corev1.EnvVar{{Name: "D", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("envfrom"), Key: "k"}}}},
		}},
		Volumes: []corev1.Volume{
			{Name: "v1", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("volume")}}},
			{Name: "v2", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("projected"),
					Items: []corev1.KeyToPath{{Key: "b.conf", Path: "b"}, {Key: "a.conf", Path: "a"}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: ref("projected-secret")}},
			}}}},
			{Name: "v3", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "v4", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
				Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}}}}},
		},
	}
}

func TestReferences(t *testing.T) {
	spec := podSpecUsingEveryReference()
	all := Use{AllKeys: true}
	want := map[Source]Use{
		{ConfigMap, "init-envfrom"}:  all,
		{ConfigMap, "envfrom"}:       all,
		{ConfigMap, "keyref"}:        {Keys: []string{"j", "k"}},
		{ConfigMap, "volume"}:        all,
		{ConfigMap, "projected"}:     {Keys: []string{"a.conf", "b.conf"}},
		{Secret, "sidecar-secret"}:   {Keys: []string{"token"}},
		{Secret, "secret-envfrom"}:   all,
		{Secret, "projected-secret"}: all,
		{Secret, "tls"}:              {Keys: []string{"tls.crt"}},
	}
	if diff := cmp.Diff(want, References(&spec)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := References(&corev1.PodSpec{}); len(got) != 0 {
		t.Errorf("empty Pod spec references %v", got)
	}
	if diff := cmp.Diff([]string{"envfrom", "init-envfrom", "keyref", "projected", "volume"}, ConfigMaps(&spec)); diff != "" {
		t.Errorf("ConfigMaps (-want +got):\n%s", diff)
	}
}

// TestReferencesOnly: the trimmed Pod spec references the same sources and keys, names the
// same carrier of every source, keeps Reloader's variables, and keeps nothing else.
func TestReferencesOnly(t *testing.T) {
	spec := podSpecUsingEveryReference()
	spec.Containers[0].Image = "nginx:1.27"
	spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_VOLUME_CONFIGMAP", Value: "abc"})
	spec.Containers = append(spec.Containers, corev1.Container{Name: "plain", Image: "envoy:1",
		VolumeMounts: []corev1.VolumeMount{{Name: "v3", MountPath: "/tmp"}, {Name: "v4", MountPath: "/tls"}}})
	spec.NodeSelector = map[string]string{"zone": "a"}
	trimmed := ReferencesOnly(&spec)
	if diff := cmp.Diff(References(&spec), References(&trimmed)); diff != "" {
		t.Errorf("references (-original +trimmed):\n%s", diff)
	}
	for src := range References(&spec) {
		for _, named := range []bool{true, false} {
			if want, got := Carrier(&spec, src, named), Carrier(&trimmed, src, named); got != want {
				t.Errorf("Carrier(%s, named %v): %q trimmed, %q in full", src, named, got, want)
			}
		}
	}
	want := []corev1.Container{
		{Name: "app", EnvFrom: spec.Containers[0].EnvFrom, Env: []corev1.EnvVar{spec.Containers[0].Env[0], spec.Containers[0].Env[1],
			{Name: "STAKATER_VOLUME_CONFIGMAP", Value: "abc"}}},
		{Name: "second", Env: spec.Containers[1].Env},
		{Name: "plain", VolumeMounts: []corev1.VolumeMount{{Name: "v4"}}},
	}
	if diff := cmp.Diff(want, trimmed.Containers); diff != "" {
		t.Errorf("trimmed containers (-want +got):\n%s", diff)
	}
	if trimmed.NodeSelector != nil || len(trimmed.Volumes) != 3 || trimmed.Volumes[1].Projected.Sources[0].ConfigMap.Items[0].Path != "" {
		t.Errorf("trimmed Pod spec keeps more than the references:\n%+v", trimmed)
	}
}

// TestCarrier: the container Reloader's env-vars strategy writes a source's variable in.
func TestCarrier(t *testing.T) {
	spec := podSpecUsingEveryReference()
	spec.Containers = append(spec.Containers, corev1.Container{Name: "mounter", VolumeMounts: []corev1.VolumeMount{{Name: "v1"}, {Name: "v2"}}})
	spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v4"}}
	cm := func(name string) Source { return Source{Kind: ConfigMap, Name: name} }
	secret := func(name string) Source { return Source{Kind: Secret, Name: name} }
	for _, tc := range []struct {
		src   Source
		named bool
		want  string
	}{
		{cm("volume"), false, "mounter"},               // the container that mounts it
		{cm("projected"), false, "mounter"},            // through a projection
		{secret("projected-secret"), false, "mounter"}, // the same volume, another projection
		{cm("envfrom"), false, "app"},                  // the first that takes it: envFrom
		{cm("keyref"), false, "app"},                   // a key reference
		{secret("tls"), false, "app"},                  // only an init container mounts it: the first container
		{cm("init-envfrom"), false, "app"},             // only an init container takes it
		{secret("sidecar-secret"), false, "app"},       // a native sidecar is an init container
		{cm("unused"), true, "app"},                    // named in an annotation, used by none
		{cm("unused"), false, ""},                      // rolled on because referenced: never unused
		{secret("volume"), false, ""},                  // a Secret is not the ConfigMap of that name
	} {
		if got := Carrier(&spec, tc.src, tc.named); got != tc.want {
			t.Errorf("Carrier(%s, named %v) = %q, want %q", tc.src, tc.named, got, tc.want)
		}
	}
	if got := Carrier(&corev1.PodSpec{}, cm("x"), true); got != "" {
		t.Errorf("Carrier of a Pod spec without containers = %q, want none", got)
	}
}

func TestPodTemplate(t *testing.T) {
	d, s, ds, cj := &appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}, &batchv1.CronJob{}
	for _, tc := range []struct {
		obj  any
		want *corev1.PodTemplateSpec
	}{
		{d, &d.Spec.Template},
		{s, &s.Spec.Template},
		{ds, &ds.Spec.Template},
		{cj, &cj.Spec.JobTemplate.Spec.Template},
		{&corev1.Pod{}, nil},
	} {
		if got := PodTemplate(tc.obj); got != tc.want {
			t.Errorf("PodTemplate(%T) = %p, want %p", tc.obj, got, tc.want)
		}
	}
}
