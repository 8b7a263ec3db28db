// Package podrefs computes which ConfigMaps a workload's Pod template uses and which of them it
// asked to be rolled on. It is the one place that walks a Pod spec's references, a leaf that
// both the shared field index (package indexers) and the configmapwatcher use, so that the index
// and the controller can never disagree about what a workload uses.
package podrefs

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// ReloadConfigMaps returns, sorted and without duplicates, the ConfigMaps a workload with these
// annotations and this Pod spec reloads on: every referenced ConfigMap when ReloadAnnotation is
// "true", the listed names when it is a comma-separated list, and none when it is absent.
func ReloadConfigMaps(annotations map[string]string, spec *corev1.PodSpec) []string {
	value, ok := annotations[v1alpha1.ReloadAnnotation]
	if !ok {
		return nil
	}
	if strings.TrimSpace(value) == "true" {
		return ConfigMaps(spec)
	}
	var names []string
	for _, name := range strings.Split(value, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return sortedUnique(names)
}

// ConfigMaps returns, sorted and without duplicates, the ConfigMaps a Pod spec
// references: envFrom and env valueFrom of containers and init containers, configMap volumes and
// projected volume sources.
func ConfigMaps(spec *corev1.PodSpec) []string {
	var names []string
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			for _, from := range containers[i].EnvFrom {
				if from.ConfigMapRef != nil {
					names = append(names, from.ConfigMapRef.Name)
				}
			}
			for _, env := range containers[i].Env {
				if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil {
					names = append(names, env.ValueFrom.ConfigMapKeyRef.Name)
				}
			}
		}
	}
	for _, volume := range spec.Volumes {
		if volume.ConfigMap != nil {
			names = append(names, volume.ConfigMap.Name)
		}
		if volume.Projected != nil {
			for _, source := range volume.Projected.Sources {
				if source.ConfigMap != nil {
					names = append(names, source.ConfigMap.Name)
				}
			}
		}
	}
	return sortedUnique(names)
}

// ConfigMapReferencesOnly returns a Pod spec that keeps of spec only what ConfigMaps
// reads: the names of the containers, init containers and volumes that reference ConfigMaps,
// with those references. ConfigMaps gives the same names for both; a cache can store
// the smaller one when nothing else reads the Pod spec.
func ConfigMapReferencesOnly(spec *corev1.PodSpec) corev1.PodSpec {
	var out corev1.PodSpec
	out.InitContainers = containerReferences(spec.InitContainers)
	out.Containers = containerReferences(spec.Containers)
	for _, volume := range spec.Volumes {
		kept := corev1.Volume{Name: volume.Name}
		if volume.ConfigMap != nil {
			kept.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: volume.ConfigMap.LocalObjectReference}
		}
		if volume.Projected != nil {
			var sources []corev1.VolumeProjection
			for _, source := range volume.Projected.Sources {
				if source.ConfigMap != nil {
					sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: source.ConfigMap.LocalObjectReference}})
				}
			}
			if sources != nil {
				kept.Projected = &corev1.ProjectedVolumeSource{Sources: sources}
			}
		}
		if kept.ConfigMap != nil || kept.Projected != nil {
			out.Volumes = append(out.Volumes, kept)
		}
	}
	return out
}

// containerReferences keeps, of each container that references a ConfigMap, its name and those
// references.
func containerReferences(containers []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for i := range containers {
		kept := corev1.Container{Name: containers[i].Name}
		for _, from := range containers[i].EnvFrom {
			if from.ConfigMapRef != nil {
				kept.EnvFrom = append(kept.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: from.ConfigMapRef.LocalObjectReference}})
			}
		}
		for _, env := range containers[i].Env {
			if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil {
				kept.Env = append(kept.Env, corev1.EnvVar{Name: env.Name, ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: env.ValueFrom.ConfigMapKeyRef.LocalObjectReference}}})
			}
		}
		if kept.EnvFrom != nil || kept.Env != nil {
			out = append(out, kept)
		}
	}
	return out
}

func sortedUnique(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	out := names[:1]
	for _, name := range names[1:] {
		if name != out[len(out)-1] && name != "" {
			out = append(out, name)
		}
	}
	if out[0] == "" {
		out = out[1:]
	}
	return out
}
