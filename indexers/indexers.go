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

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
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
	// VerticalScalerTargetField indexes VerticalScalers by the workload they name (spec.targetRef,
	// or spec.deploymentName), as Kind.group/name: v1alpha1.TargetReference.Key.
	VerticalScalerTargetField = "spec.targetRef"
	// WorkloadSourcesField indexes opted-in workloads by the ConfigMaps and Secrets they may
	// roll on, as "ConfigMap/NAME" and "Secret/NAME", and under "ConfigMap/*" and "Secret/*"
	// when names of that kind count through a regular expression (see podrefs.Selection).
	WorkloadSourcesField = "spec.template.sources"
)

// The shared indexes.
var (
	// VerticalScalerByTarget finds the VerticalScalers that name a workload.
	VerticalScalerByTarget = Index{
		Object:  &v1alpha1.VerticalScaler{},
		Field:   VerticalScalerTargetField,
		Extract: VerticalScalerTarget,
	}
	// DeploymentBySource finds the opted-in Deployments that may roll on a ConfigMap or Secret.
	DeploymentBySource = Index{Object: &appsv1.Deployment{}, Field: WorkloadSourcesField, Extract: WorkloadSources}
	// StatefulSetBySource finds the opted-in StatefulSets that may roll on a ConfigMap or Secret.
	StatefulSetBySource = Index{Object: &appsv1.StatefulSet{}, Field: WorkloadSourcesField, Extract: WorkloadSources}
	// DaemonSetBySource finds the opted-in DaemonSets that may roll on a ConfigMap or Secret.
	DaemonSetBySource = Index{Object: &appsv1.DaemonSet{}, Field: WorkloadSourcesField, Extract: WorkloadSources}
	// CronJobBySource finds the opted-in CronJobs that may roll on a ConfigMap or Secret.
	CronJobBySource = Index{Object: &batchv1.CronJob{}, Field: WorkloadSourcesField, Extract: WorkloadSources}
)

// VerticalScalerTarget returns the key of the workload a VerticalScaler names, if any.
func VerticalScalerTarget(obj client.Object) []string {
	vs, ok := obj.(*v1alpha1.VerticalScaler)
	if !ok {
		return nil
	}
	target := vs.Spec.Target()
	if target.Name == "" {
		return nil
	}
	return []string{target.Key()}
}

// WorkloadSources returns the values a workload (Deployment, StatefulSet, DaemonSet, CronJob)
// is indexed under: podrefs.Selection.IndexValues of its annotations and Pod template, with
// Reloader's annotations read whatever --reloader-annotations says (a few more entries when it
// is off cost a reconcile that finds nothing to do, and keep the index independent of flags).
// An annotation that cannot be read indexes what can; the controller reports the rest. Nothing
// for a workload that did not opt in, or for other kinds.
func WorkloadSources(obj client.Object) []string {
	template := podrefs.PodTemplate(obj)
	if template == nil {
		return nil
	}
	selection, _ := podrefs.Select(obj.GetAnnotations(), template.Annotations, true)
	return selection.IndexValues(podrefs.References(&template.Spec))
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
