// Package indexers holds the field indexes that controllers share: one exported field key and one
// extract function per index, and Register, the one place that adds the indexes the enabled
// controllers need to a manager's cache, each once.
//
// Map functions query these indexes with client.MatchingFields on the cache, which is an
// in-memory lookup: no API call, so a map function cannot fail on I/O.
package indexers

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// Index is one field index over one kind.
type Index struct {
	// Object is an instance of the indexed kind.
	Object client.Object
	// Field is the key to query with client.MatchingFields.
	Field string
	// Extract returns the values an object is indexed under.
	Extract client.IndexerFunc
}

// String names the index by kind and field, as --list-controllers prints it.
func (i Index) String() string {
	return reflect.TypeOf(i.Object).Elem().Name() + ":" + i.Field
}

// Field keys. They look like field paths so that a reader knows where the value comes from, but
// they are only names: the API server knows nothing of them.
const (
	// VerticalScalerDeploymentNameField indexes VerticalScalers by spec.deploymentName.
	VerticalScalerDeploymentNameField = "spec.deploymentName"
	// DeploymentConfigMapsField indexes opted-in Deployments by the ConfigMaps they reload on.
	DeploymentConfigMapsField = "spec.template.configMaps"
)

// The shared indexes.
var (
	// VerticalScalerByDeploymentName finds the VerticalScalers that name a Deployment.
	VerticalScalerByDeploymentName = Index{
		Object:  &v1alpha1.VerticalScaler{},
		Field:   VerticalScalerDeploymentNameField,
		Extract: VerticalScalerDeploymentName,
	}
	// DeploymentByConfigMap finds the opted-in Deployments that reload on a ConfigMap.
	DeploymentByConfigMap = Index{
		Object:  &appsv1.Deployment{},
		Field:   DeploymentConfigMapsField,
		Extract: DeploymentConfigMaps,
	}
)

// VerticalScalerDeploymentName returns the Deployment a VerticalScaler names, if any.
func VerticalScalerDeploymentName(obj client.Object) []string {
	vs, ok := obj.(*v1alpha1.VerticalScaler)
	if !ok || vs.Spec.DeploymentName == "" {
		return nil
	}
	return []string{vs.Spec.DeploymentName}
}

// DeploymentConfigMaps returns the ConfigMaps an opted-in Deployment reloads on (see
// ReloadConfigMaps), and nothing for a Deployment that did not opt in.
func DeploymentConfigMaps(obj client.Object) []string {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil
	}
	return ReloadConfigMaps(d.Annotations, &d.Spec.Template.Spec)
}

// ReloadConfigMaps returns, sorted and without duplicates, the ConfigMaps a workload with these
// annotations and this Pod spec reloads on: every referenced ConfigMap when ReloadAnnotation is
// "true", the listed names when it is a comma-separated list, and none when it is absent.
func ReloadConfigMaps(annotations map[string]string, spec *corev1.PodSpec) []string {
	value, ok := annotations[v1alpha1.ReloadAnnotation]
	if !ok {
		return nil
	}
	if strings.TrimSpace(value) == "true" {
		return ReferencedConfigMaps(spec)
	}
	var names []string
	for _, name := range strings.Split(value, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return sortedUnique(names)
}

// ReferencedConfigMaps returns, sorted and without duplicates, the ConfigMaps a Pod spec
// references: envFrom and env valueFrom of containers and init containers, configMap volumes and
// projected volume sources.
func ReferencedConfigMaps(spec *corev1.PodSpec) []string {
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

// ConfigMapReferencesOnly returns a Pod spec that keeps of spec only what ReferencedConfigMaps
// reads: the names of the containers, init containers and volumes that reference ConfigMaps,
// with those references. ReferencedConfigMaps gives the same names for both; a cache can store
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

// Register adds each of the given indexes to the field indexer once, however many times it is
// listed: several controllers may need the same index. Indexes nobody asked for are not
// registered, so the cache does not pay for them.
func Register(ctx context.Context, indexer client.FieldIndexer, indexes ...Index) error {
	seen := map[string]bool{}
	for _, index := range indexes {
		if seen[index.String()] {
			continue
		}
		seen[index.String()] = true
		if err := indexer.IndexField(ctx, index.Object, index.Field, index.Extract); err != nil {
			return fmt.Errorf("registering index %s: %w", index, err)
		}
	}
	return nil
}
