// Package podrefs says which ConfigMaps and Secrets (and, when asked to, SecretProviderClasses of
// the Secrets Store CSI driver) a workload's Pod template uses, and which of their keys, and what the workload asked to be rolled on: our annotation and, when asked to,
// Stakater Reloader's. It is the one place that walks a Pod spec's references and reads those
// annotations, a leaf that both the shared field index (package indexers) and the
// configmapwatcher use, so that the index and the controller can never disagree.
package podrefs

import (
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/example/switchboard/apis/v1alpha1"
)

// SourceKind is a kind of object a Pod takes configuration from.
type SourceKind string

// The kinds of sources.
const (
	ConfigMap SourceKind = "ConfigMap"
	Secret    SourceKind = "Secret"
	// SecretProviderClass is a SecretProviderClass of the Secrets Store CSI driver, mounted
	// through a CSI volume: counted only with Reading.CSI (Reloader's --enable-csi-integration).
	// Its data is not in it but in the driver's SecretProviderClassPodStatus objects, one per
	// Pod that mounts it, which give the version of each secret object mounted.
	SecretProviderClass SourceKind = "SecretProviderClass"
)

// SourceKinds lists the kinds of sources that are ConfigMaps and Secrets (read and watched
// alike), in the order they are reported; SecretProviderClass is apart.
var SourceKinds = []SourceKind{ConfigMap, Secret}

// SecretProviderClassAttribute is the CSI volume attribute that names the SecretProviderClass
// a volume mounts, as the Secrets Store CSI driver and Reloader read it.
const SecretProviderClassAttribute = "secretProviderClass"

// providerClassOf returns the SecretProviderClass a volume mounts; "" for none.
func providerClassOf(volume corev1.Volume) string {
	if volume.CSI == nil {
		return ""
	}
	return volume.CSI.VolumeAttributes[SecretProviderClassAttribute]
}

// Source names a ConfigMap or a Secret of the workload's namespace.
type Source struct {
	Kind SourceKind
	Name string
}

// String is how Events and logs name the source: "ConfigMap app-config".
func (s Source) String() string { return string(s.Kind) + " " + s.Name }

// Key is the source's key in the index and in the configmapwatcher's record: "ConfigMap/NAME".
func (s Source) Key() string { return string(s.Kind) + "/" + s.Name }

// Wildcard is the index value of the workloads that roll on every source of kind whose name
// matches one of their regular expressions: the map function filters them by name.
func Wildcard(kind SourceKind) string { return string(kind) + "/*" }

// Use says which keys of a source a Pod template uses.
type Use struct {
	// AllKeys: an envFrom, or a volume or projection without items, takes every key.
	AllKeys bool
	// Keys are the keys taken by name (env valueFrom key references, volume and projection
	// items), sorted and unique; nil when AllKeys.
	Keys []string
}

// with returns u widened by v.
func (u Use) with(v Use) Use {
	if u.AllKeys || v.AllKeys {
		return Use{AllKeys: true}
	}
	keys := append(slices.Clone(u.Keys), v.Keys...)
	slices.Sort(keys)
	return Use{Keys: slices.Compact(keys)}
}

// References returns, per ConfigMap and Secret a Pod spec references, which of its keys it
// uses: through envFrom and env valueFrom of init containers (native sidecars included) and
// containers, and through volumes and projected volumes; and each SecretProviderClass a CSI
// volume mounts, whole (its objects are what the driver mounted).
func References(spec *corev1.PodSpec) map[Source]Use {
	refs := map[Source]Use{}
	add := func(kind SourceKind, name string, use Use) {
		if name == "" {
			return
		}
		src := Source{Kind: kind, Name: name}
		if prev, ok := refs[src]; ok {
			use = prev.with(use)
		}
		refs[src] = use
	}
	all := Use{AllKeys: true}
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			for _, from := range containers[i].EnvFrom {
				if from.ConfigMapRef != nil {
					add(ConfigMap, from.ConfigMapRef.Name, all)
				}
				if from.SecretRef != nil {
					add(Secret, from.SecretRef.Name, all)
				}
			}
			for _, env := range containers[i].Env {
				switch {
				case env.ValueFrom == nil:
				case env.ValueFrom.ConfigMapKeyRef != nil:
					add(ConfigMap, env.ValueFrom.ConfigMapKeyRef.Name, Use{Keys: []string{env.ValueFrom.ConfigMapKeyRef.Key}})
				case env.ValueFrom.SecretKeyRef != nil:
					add(Secret, env.ValueFrom.SecretKeyRef.Name, Use{Keys: []string{env.ValueFrom.SecretKeyRef.Key}})
				}
			}
		}
	}
	for _, volume := range spec.Volumes {
		add(SecretProviderClass, providerClassOf(volume), all)
		if volume.ConfigMap != nil {
			add(ConfigMap, volume.ConfigMap.Name, itemsUse(volume.ConfigMap.Items))
		}
		if volume.Secret != nil {
			add(Secret, volume.Secret.SecretName, itemsUse(volume.Secret.Items))
		}
		if volume.Projected == nil {
			continue
		}
		for _, source := range volume.Projected.Sources {
			if source.ConfigMap != nil {
				add(ConfigMap, source.ConfigMap.Name, itemsUse(source.ConfigMap.Items))
			}
			if source.Secret != nil {
				add(Secret, source.Secret.Name, itemsUse(source.Secret.Items))
			}
		}
	}
	return refs
}

// itemsUse is what a volume or projection with these items takes: every key without items.
func itemsUse(items []corev1.KeyToPath) Use {
	if len(items) == 0 {
		return Use{AllKeys: true}
	}
	keys := make([]string, 0, len(items))
	for _, item := range items {
		keys = append(keys, item.Key)
	}
	slices.Sort(keys)
	return Use{Keys: slices.Compact(keys)}
}

// ConfigMaps returns, sorted and without duplicates, the ConfigMaps a Pod spec references.
func ConfigMaps(spec *corev1.PodSpec) []string {
	var names []string
	for src := range References(spec) {
		if src.Kind == ConfigMap {
			names = append(names, src.Name)
		}
	}
	sort.Strings(names)
	return names
}

// RolloutKind is Argo Rollouts' Rollout, which the configmapwatcher reads and writes as
// unstructured objects: Switchboard does not depend on Argo Rollouts' Go module.
var RolloutKind = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// PodTemplate returns the Pod template of a workload: a Deployment's, StatefulSet's, DaemonSet's
// or Job's, a CronJob's job template's, or an Argo Rollout's spec.template; nil for any other
// object. For every kind but the Rollout it points into the object. A Rollout is unstructured,
// so its template is decoded into a copy (SetRolloutTemplate writes one back); a Rollout whose
// template cannot be decoded has an empty one.
func PodTemplate(obj any) *corev1.PodTemplateSpec {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.StatefulSet:
		return &w.Spec.Template
	case *appsv1.DaemonSet:
		return &w.Spec.Template
	case *batchv1.CronJob:
		return &w.Spec.JobTemplate.Spec.Template
	case *batchv1.Job:
		return &w.Spec.Template
	case *unstructured.Unstructured:
		if w.GroupVersionKind() != RolloutKind {
			return nil
		}
		template := &corev1.PodTemplateSpec{}
		if raw, found, err := unstructured.NestedMap(w.Object, "spec", "template"); err == nil && found {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, template); err != nil {
				return &corev1.PodTemplateSpec{}
			}
		}
		return template
	}
	return nil
}

// SetRolloutTemplate writes template into a Rollout's spec.template.
func SetRolloutTemplate(rollout *unstructured.Unstructured, template *corev1.PodTemplateSpec) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(template)
	if err != nil {
		return err
	}
	// The converter writes an empty creationTimestamp as null, which the Rollout's schema
	// does not take.
	if metadata, ok := raw["metadata"].(map[string]any); ok {
		delete(metadata, "creationTimestamp")
	}
	return unstructured.SetNestedMap(rollout.Object, raw, "spec", "template")
}

// ReferencesOnly returns a Pod spec that keeps of spec only what References and Carrier read:
// the names of every container, in order, and of the volumes that reference ConfigMaps or
// Secrets, with those references, the keys they take and the containers' mounts of them (and
// of the CSI volumes that mount a SecretProviderClass, with its name only); and
// Reloader's environment variables (v1alpha1.ReloaderEnvVarPrefix), which the configmapwatcher
// writes. References and Carrier give the same answers for both; a cache can store the smaller
// one when nothing else reads the Pod spec.
func ReferencesOnly(spec *corev1.PodSpec) corev1.PodSpec {
	var out corev1.PodSpec
	for _, volume := range spec.Volumes {
		kept := corev1.Volume{Name: volume.Name}
		if volume.ConfigMap != nil {
			kept.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: volume.ConfigMap.LocalObjectReference,
				Items: keysOnly(volume.ConfigMap.Items)}
		}
		if volume.Secret != nil {
			kept.Secret = &corev1.SecretVolumeSource{SecretName: volume.Secret.SecretName, Items: keysOnly(volume.Secret.Items)}
		}
		if name := providerClassOf(volume); name != "" {
			kept.CSI = &corev1.CSIVolumeSource{Driver: volume.CSI.Driver, VolumeAttributes: map[string]string{SecretProviderClassAttribute: name}}
		}
		if volume.Projected != nil {
			var sources []corev1.VolumeProjection
			for _, source := range volume.Projected.Sources {
				switch {
				case source.ConfigMap != nil:
					sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
						LocalObjectReference: source.ConfigMap.LocalObjectReference, Items: keysOnly(source.ConfigMap.Items)}})
				case source.Secret != nil:
					sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
						LocalObjectReference: source.Secret.LocalObjectReference, Items: keysOnly(source.Secret.Items)}})
				}
			}
			if sources != nil {
				kept.Projected = &corev1.ProjectedVolumeSource{Sources: sources}
			}
		}
		if kept.ConfigMap != nil || kept.Secret != nil || kept.Projected != nil || kept.CSI != nil {
			out.Volumes = append(out.Volumes, kept)
		}
	}
	sourceVolumes := map[string]bool{}
	for _, volume := range out.Volumes {
		sourceVolumes[volume.Name] = true
	}
	out.InitContainers = containerReferences(spec.InitContainers, sourceVolumes)
	out.Containers = containerReferences(spec.Containers, sourceVolumes)
	return out
}

// keysOnly keeps the keys of items, without their paths and modes.
func keysOnly(items []corev1.KeyToPath) []corev1.KeyToPath {
	var out []corev1.KeyToPath
	for _, item := range items {
		out = append(out, corev1.KeyToPath{Key: item.Key})
	}
	return out
}

// containerReferences keeps, of each container, its name, its references to ConfigMaps and
// Secrets, its mounts of the volumes sourceVolumes names, and Reloader's environment variables.
func containerReferences(containers []corev1.Container, sourceVolumes map[string]bool) []corev1.Container {
	var out []corev1.Container
	for i := range containers {
		kept := corev1.Container{Name: containers[i].Name}
		for _, from := range containers[i].EnvFrom {
			switch {
			case from.ConfigMapRef != nil:
				kept.EnvFrom = append(kept.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: from.ConfigMapRef.LocalObjectReference}})
			case from.SecretRef != nil:
				kept.EnvFrom = append(kept.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
					LocalObjectReference: from.SecretRef.LocalObjectReference}})
			}
		}
		for _, env := range containers[i].Env {
			switch {
			case env.ValueFrom == nil && strings.HasPrefix(env.Name, v1alpha1.ReloaderEnvVarPrefix):
				kept.Env = append(kept.Env, corev1.EnvVar{Name: env.Name, Value: env.Value})
			case env.ValueFrom == nil:
			case env.ValueFrom.ConfigMapKeyRef != nil:
				ref := env.ValueFrom.ConfigMapKeyRef
				kept.Env = append(kept.Env, corev1.EnvVar{Name: env.Name, ValueFrom: &corev1.EnvVarSource{
					ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref.LocalObjectReference, Key: ref.Key}}})
			case env.ValueFrom.SecretKeyRef != nil:
				ref := env.ValueFrom.SecretKeyRef
				kept.Env = append(kept.Env, corev1.EnvVar{Name: env.Name, ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref.LocalObjectReference, Key: ref.Key}}})
			}
		}
		for _, mount := range containers[i].VolumeMounts {
			if sourceVolumes[mount.Name] {
				kept.VolumeMounts = append(kept.VolumeMounts, corev1.VolumeMount{Name: mount.Name})
			}
		}
		out = append(out, kept)
	}
	return out
}

// Carrier returns the container that Reloader's env-vars strategy puts the variable of src in,
// and whose name its last-reloaded-from annotation gives, as Reloader v1.4.21 chooses it: the
// first container that mounts a volume of src; else the first that takes it through env or
// envFrom; else, when only init containers use src, or when the workload names src in an
// annotation without using it (named), the first container. "" when there is none: a source
// rolled on because it is referenced (auto) always has one.
func Carrier(spec *corev1.PodSpec, src Source, named bool) string {
	volumes := map[string]bool{}
	for _, volume := range spec.Volumes {
		if volumeUses(volume, src) {
			volumes[volume.Name] = true
		}
	}
	mounts := func(c *corev1.Container) bool {
		for _, mount := range c.VolumeMounts {
			if volumes[mount.Name] {
				return true
			}
		}
		return false
	}
	takes := func(c *corev1.Container) bool { return containerTakes(c, src) }
	first := ""
	if len(spec.Containers) > 0 {
		first = spec.Containers[0].Name
	}
	for _, uses := range []func(*corev1.Container) bool{mounts, takes} {
		for i := range spec.Containers {
			if uses(&spec.Containers[i]) {
				return spec.Containers[i].Name
			}
		}
		for i := range spec.InitContainers {
			if uses(&spec.InitContainers[i]) {
				return first
			}
		}
	}
	if named {
		return first
	}
	return ""
}

// volumeUses says whether a volume, or one of its projections, is src.
func volumeUses(volume corev1.Volume, src Source) bool {
	switch {
	case src.Kind == ConfigMap && volume.ConfigMap != nil && volume.ConfigMap.Name == src.Name,
		src.Kind == Secret && volume.Secret != nil && volume.Secret.SecretName == src.Name,
		src.Kind == SecretProviderClass && providerClassOf(volume) == src.Name:
		return true
	case volume.Projected == nil:
		return false
	}
	for _, p := range volume.Projected.Sources {
		if src.Kind == ConfigMap && p.ConfigMap != nil && p.ConfigMap.Name == src.Name ||
			src.Kind == Secret && p.Secret != nil && p.Secret.Name == src.Name {
			return true
		}
	}
	return false
}

// containerTakes says whether a container takes src through env valueFrom or envFrom.
func containerTakes(c *corev1.Container, src Source) bool {
	for _, env := range c.Env {
		switch {
		case env.ValueFrom == nil:
		case src.Kind == ConfigMap && env.ValueFrom.ConfigMapKeyRef != nil && env.ValueFrom.ConfigMapKeyRef.Name == src.Name,
			src.Kind == Secret && env.ValueFrom.SecretKeyRef != nil && env.ValueFrom.SecretKeyRef.Name == src.Name:
			return true
		}
	}
	for _, from := range c.EnvFrom {
		if src.Kind == ConfigMap && from.ConfigMapRef != nil && from.ConfigMapRef.Name == src.Name ||
			src.Kind == Secret && from.SecretRef != nil && from.SecretRef.Name == src.Name {
			return true
		}
	}
	return false
}
