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

// String names the index by kind and field, as --list-controllers prints it: the set kind of
// an unstructured object, else the Go type's name.
func (i Index) String() string {
	if kind := i.Object.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind + ":" + i.Field
	}
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

// VerticalScalerByTarget finds the VerticalScalers that name a workload.
var VerticalScalerByTarget = Index{
	Object:  &v1alpha1.VerticalScaler{},
	Field:   VerticalScalerTargetField,
	Extract: VerticalScalerTarget,
}

// WorkloadsBySource is the index of the opted-in workloads of obj's kind (a Deployment,
// StatefulSet, DaemonSet, CronJob, Job, or an Argo Rollout as an unstructured object with its
// kind set) by the ConfigMaps and Secrets they may roll on. reading says, when the index is
// read (once the flags are parsed), how the workloads' annotations are read: whether every
// workload that says nothing rolls on what it references (--auto-reload-all), and under which
// names Reloader's annotations are.
func WorkloadsBySource(obj client.Object, reading func() podrefs.Reading) Index {
	return Index{Object: obj, Field: WorkloadSourcesField, Extract: func(o client.Object) []string {
		return WorkloadSources(o, reading())
	}}
}

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

// WorkloadSources returns the values a workload (a kind podrefs.PodTemplate knows) is indexed
// under: podrefs.Selection.IndexValues of its annotations and Pod template, with Reloader's
// annotations read whatever --reloader-annotations says (a few more entries when it is off cost
// a reconcile that finds nothing to do), otherwise as reading says. An annotation that cannot
// be read indexes what can; the controller reports the rest. Nothing for a workload that did
// not opt in, or for other kinds.
func WorkloadSources(obj client.Object, reading podrefs.Reading) []string {
	template := podrefs.PodTemplate(obj)
	if template == nil {
		return nil
	}
	reading.Reloader = true
	selection, _ := podrefs.Select(obj.GetAnnotations(), template.Annotations, reading)
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
