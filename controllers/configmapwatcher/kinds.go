package configmapwatcher

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// Group names the configmapwatcher's controllers together: --controllers=configmapwatcher
// runs all of them, and config/components/configmapwatcher deploys them.
const Group = "configmapwatcher"

// FieldManager is the field manager of every write of the configmapwatcher's controllers,
// whatever the kind: it owns the workload's ConfigStateAnnotation and its Pod template's
// ConfigHashAnnotation (a Rollout's spec.restartAt instead, with Reloader's restart strategy),
// and nothing else.
const FieldManager = "configmapwatcher"

// Kind adapts the reconciler to one workload kind: its Go types, and the apply configuration
// that carries what the controller owns. Where the kind keeps its Pod template is
// podrefs.PodTemplate's to say, so that the shared index reads the same one.
type Kind[T client.Object] struct {
	// Name is the kind, as Events, logs and metrics name it.
	Name string
	// ControllerName names the kind's controller (its table row).
	ControllerName string
	// New returns an empty object of the kind.
	New func() T
	// NewList returns an empty list of the kind.
	NewList func() client.ObjectList
	// skeleton returns a new object of the kind with obj's type and object metadata, and what
	// else of its spec the controller reads (a Deployment's spec.paused).
	skeleton func(obj T) T
	// keepTemplate puts template into obj, a skeleton.
	keepTemplate func(obj T, template corev1.PodTemplateSpec)
	// apply returns the apply configuration of obj carrying w.
	apply func(obj T, w owned) runtime.ApplyConfiguration
	// recreates: the kind's Pod template cannot change (a Job's), so a roll deletes the object
	// and creates it again (jobs.go).
	recreates bool
	// leftAlone says whether the controller leaves obj to another (a Job a CronJob controls is
	// the CronJob's).
	leftAlone func(obj T) bool
}

// owned is what the controller writes to a workload: the metadata annotations, the Pod
// template's annotations (nil: none) and Reloader's variables of its containers (by container,
// then name), and, for a Rollout, spec.restartAt ("": none).
type owned struct {
	annotations map[string]string
	template    map[string]string
	env         map[string]map[string]string
	restartAt   string
}

// applied returns the apply configuration of obj, of kind gvk, carrying w: the Pod template's
// annotations go under templateAt (nothing: the kind's template cannot change). It is an
// unstructured object, not the kind's typed apply configuration: encoding/json makes, and keeps
// for the life of the process, an encoder for every type a typed one reaches (the whole Pod
// spec, about 0.4 MB of heap: docs/performance.md) to write three fields.
func applied(gvk schema.GroupVersionKind, obj client.Object, w owned, templateAt ...string) runtime.ApplyConfiguration {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	// The version the decision was made from: the API server refuses the write (409) if the
	// workload changed since, so that a decision made from a stale cache is made again.
	u.SetResourceVersion(obj.GetResourceVersion())
	u.SetAnnotations(w.annotations)
	// The Set calls cannot fail: they make every map on the path, in an object made here.
	if w.template != nil && templateAt != nil {
		_ = unstructured.SetNestedStringMap(u.Object, w.template, append(slices.Clone(templateAt), "metadata", "annotations")...)
	}
	if len(w.env) > 0 && templateAt != nil {
		// containers and env are lists keyed by name: only these entries are owned.
		var containers []any
		for _, name := range slices.Sorted(maps.Keys(w.env)) {
			var env []any
			for _, variable := range slices.Sorted(maps.Keys(w.env[name])) {
				env = append(env, map[string]any{"name": variable, "value": w.env[name][variable]})
			}
			containers = append(containers, map[string]any{"name": name, "env": env})
		}
		_ = unstructured.SetNestedSlice(u.Object, containers, append(slices.Clone(templateAt), "spec", "containers")...)
	}
	if w.restartAt != "" {
		_ = unstructured.SetNestedField(u.Object, w.restartAt, "spec", "restartAt")
	}
	return client.ApplyConfigurationFromUnstructured(u)
}

// The workload kinds.
var (
	// Deployments rolls Deployments.
	Deployments = Kind[*appsv1.Deployment]{
		Name: "Deployment", ControllerName: Group + "-deployments",
		New:     func() *appsv1.Deployment { return &appsv1.Deployment{} },
		NewList: func() client.ObjectList { return &appsv1.DeploymentList{} },
		skeleton: func(d *appsv1.Deployment) *appsv1.Deployment {
			// spec.paused, for pause-period.
			return &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Spec: appsv1.DeploymentSpec{Paused: d.Spec.Paused}}
		},
		keepTemplate: func(d *appsv1.Deployment, t corev1.PodTemplateSpec) { d.Spec.Template = t },
		apply: func(d *appsv1.Deployment, w owned) runtime.ApplyConfiguration {
			return applied(appsv1.SchemeGroupVersion.WithKind("Deployment"), d, w, "spec", "template")
		},
	}
	// StatefulSets rolls StatefulSets.
	StatefulSets = Kind[*appsv1.StatefulSet]{
		Name: "StatefulSet", ControllerName: Group + "-statefulsets",
		New:     func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
		NewList: func() client.ObjectList { return &appsv1.StatefulSetList{} },
		skeleton: func(s *appsv1.StatefulSet) *appsv1.StatefulSet {
			return &appsv1.StatefulSet{TypeMeta: s.TypeMeta, ObjectMeta: s.ObjectMeta}
		},
		keepTemplate: func(s *appsv1.StatefulSet, t corev1.PodTemplateSpec) { s.Spec.Template = t },
		apply: func(s *appsv1.StatefulSet, w owned) runtime.ApplyConfiguration {
			return applied(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), s, w, "spec", "template")
		},
	}
	// DaemonSets rolls DaemonSets.
	DaemonSets = Kind[*appsv1.DaemonSet]{
		Name: "DaemonSet", ControllerName: Group + "-daemonsets",
		New:     func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
		NewList: func() client.ObjectList { return &appsv1.DaemonSetList{} },
		skeleton: func(ds *appsv1.DaemonSet) *appsv1.DaemonSet {
			return &appsv1.DaemonSet{TypeMeta: ds.TypeMeta, ObjectMeta: ds.ObjectMeta}
		},
		keepTemplate: func(ds *appsv1.DaemonSet, t corev1.PodTemplateSpec) { ds.Spec.Template = t },
		apply: func(ds *appsv1.DaemonSet, w owned) runtime.ApplyConfiguration {
			return applied(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), ds, w, "spec", "template")
		},
	}
	// CronJobs puts the hash on the job template's Pod template: the next Job runs with the new
	// configuration. A CronJob may also run a Job at once (v1alpha1.RunJobOnChangeAnnotation).
	CronJobs = Kind[*batchv1.CronJob]{
		Name: "CronJob", ControllerName: Group + "-cronjobs",
		New:     func() *batchv1.CronJob { return &batchv1.CronJob{} },
		NewList: func() client.ObjectList { return &batchv1.CronJobList{} },
		skeleton: func(cj *batchv1.CronJob) *batchv1.CronJob {
			return &batchv1.CronJob{TypeMeta: cj.TypeMeta, ObjectMeta: cj.ObjectMeta}
		},
		keepTemplate: func(cj *batchv1.CronJob, t corev1.PodTemplateSpec) { cj.Spec.JobTemplate.Spec.Template = t },
		apply: func(cj *batchv1.CronJob, w owned) runtime.ApplyConfiguration {
			return applied(batchv1.SchemeGroupVersion.WithKind("CronJob"), cj, w, "spec", "jobTemplate", "spec", "template")
		},
	}
	// Jobs re-creates a Job whose data changed, as Reloader does: a Job's Pod template cannot
	// change. A Job a CronJob controls is left to the CronJob, whose next Job takes the new
	// data.
	Jobs = Kind[*batchv1.Job]{
		Name: "Job", ControllerName: Group + "-jobs",
		New:     func() *batchv1.Job { return &batchv1.Job{} },
		NewList: func() client.ObjectList { return &batchv1.JobList{} },
		skeleton: func(j *batchv1.Job) *batchv1.Job {
			return &batchv1.Job{TypeMeta: j.TypeMeta, ObjectMeta: j.ObjectMeta}
		},
		keepTemplate: func(j *batchv1.Job, t corev1.PodTemplateSpec) { j.Spec.Template = t },
		apply: func(j *batchv1.Job, w owned) runtime.ApplyConfiguration {
			// Only the record: the Pod template is immutable, and a roll re-creates the Job.
			return applied(batchv1.SchemeGroupVersion.WithKind("Job"), j, w)
		},
		recreates: true,
		leftAlone: func(j *batchv1.Job) bool {
			owner := metav1.GetControllerOf(j)
			return owner != nil && owner.Kind == "CronJob"
		},
	}
	// Rollouts rolls Argo Rollouts, read and written as unstructured objects: with Reloader's
	// annotation reloader.stakater.com/rollout-strategy: "restart" through spec.restartAt (Argo
	// restarts the Pods in place), otherwise through the Pod template's annotation (a new
	// revision, with the Rollout's canary or blue-green steps).
	Rollouts = Kind[*unstructured.Unstructured]{
		Name: "Rollout", ControllerName: Group + "-rollouts",
		New: func() *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(podrefs.RolloutKind)
			return u
		},
		NewList: func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(podrefs.RolloutKind.GroupVersion().WithKind(podrefs.RolloutKind.Kind + "List"))
			return l
		},
		skeleton: func(r *unstructured.Unstructured) *unstructured.Unstructured {
			out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": r.GetAPIVersion(), "kind": r.GetKind()}}
			if metadata, ok := r.Object["metadata"].(map[string]any); ok {
				// A copy: the trim changes what it keeps, never the object it is given.
				out.Object["metadata"] = runtime.DeepCopyJSON(metadata)
			}
			if restartAt, found, _ := unstructured.NestedString(r.Object, "spec", "restartAt"); found {
				_ = unstructured.SetNestedField(out.Object, restartAt, "spec", "restartAt")
			}
			if workloadRef, found, _ := unstructured.NestedMap(r.Object, "spec", "workloadRef"); found {
				_ = unstructured.SetNestedMap(out.Object, workloadRef, "spec", "workloadRef")
			}
			return out
		},
		keepTemplate: func(r *unstructured.Unstructured, t corev1.PodTemplateSpec) { _ = podrefs.SetRolloutTemplate(r, &t) },
		apply: func(r *unstructured.Unstructured, w owned) runtime.ApplyConfiguration {
			return applied(podrefs.RolloutKind, r, w, "spec", "template")
		},
		// A Rollout whose Pods come from a Deployment (spec.workloadRef) has no Pod template of
		// its own to change: the Deployment is the one to annotate.
		leftAlone: func(r *unstructured.Unstructured) bool {
			_, found, _ := unstructured.NestedMap(r.Object, "spec", "workloadRef")
			return found
		},
	}
)

// restartAtOf returns a Rollout's spec.restartAt, "" for none or another kind.
func restartAtOf(obj client.Object) string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	restartAt, _, _ := unstructured.NestedString(u.Object, "spec", "restartAt")
	return restartAt
}

// lastApplied is kubectl's copy of the whole object as last applied client-side: often the
// largest annotation of a workload, and nothing this controller reads.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Trim returns the cache transform that keeps of a workload what this controller reads: its
// metadata without managed fields and without kubectl's last-applied copy and, if it may opt
// in (mayOptIn, as o says), its Pod template's annotations and the ConfigMap and Secret
// references of its Pod spec. The cache stores workloads so when this is the only selected
// controller that watches the kind: a real workload's spec and status are several KiB, of
// which the controller reads a few names. o is read when an object is trimmed, once the flags
// are parsed.
func (k Kind[T]) Trim(o *Options) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		full, ok := obj.(T)
		if !ok {
			return obj, nil
		}
		trimmed := k.skeleton(full)
		trimmed.SetManagedFields(nil)
		if _, ok := trimmed.GetAnnotations()[lastApplied]; ok {
			annotations := make(map[string]string, len(trimmed.GetAnnotations()))
			for key, value := range trimmed.GetAnnotations() {
				if key != lastApplied {
					annotations[key] = value
				}
			}
			trimmed.SetAnnotations(annotations)
		}
		if template := podrefs.PodTemplate(full); template != nil && mayOptIn(full, o.Reading()) && !k.left(full) {
			k.keepTemplate(trimmed, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: template.Annotations},
				Spec: podrefs.ReferencesOnly(&template.Spec)})
		}
		return trimmed, nil
	}
}

// left says whether the controller leaves obj to another.
func (k Kind[T]) left(obj T) bool { return k.leftAlone != nil && k.leftAlone(obj) }

// mayOptIn says whether obj may roll on something, whatever its annotations' values: with
// --auto-reload-all every workload may; otherwise one that carries an annotation that can opt it
// in (ours, or Reloader's under the names r reads them), or any of Reloader's (so that the
// start-up report of Reloader's annotation forms sees those of the Pod template). What a
// workload asked for is podrefs.Select's to say, in Reconcile, which also reports an annotation
// it cannot read.
func mayOptIn(obj client.Object, r podrefs.Reading) bool {
	if r.AutoReloadAll {
		return true
	}
	keys := append(r.Names.OptIn(), v1alpha1.ReloadAnnotation)
	template := podrefs.PodTemplate(obj)
	for _, annotations := range []map[string]string{obj.GetAnnotations(), templateAnnotations(template)} {
		for _, key := range keys {
			if _, ok := annotations[key]; ok {
				return true
			}
		}
		for key := range annotations {
			if isReloaderAnnotation(key) {
				return true
			}
		}
	}
	return false
}

func templateAnnotations(template *corev1.PodTemplateSpec) map[string]string {
	if template == nil {
		return nil
	}
	return template.Annotations
}

// Predicates filter the events of the workloads: those of workloads in the configmapwatcher's
// namespaces that may opt in (before or after the change, as o says), when their Pod template
// or their annotations changed other than by this controller's own record. Writing the record
// therefore reconciles nothing again; a roll does, since it changes the Pod template. The
// generation is not what tells: a Deployment's moves with its annotations too, the record's
// included, and a change of replicas is none of this controller's business. o is read at each
// event, once the flags are parsed.
func Predicates(o *Options) []predicate.Predicate {
	scope := func(obj client.Object) bool { return o.Scope().Namespace(obj.GetNamespace()) }
	return []predicate.Predicate{predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return scope(e.Object) && mayOptIn(e.Object, o.Reading()) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !scope(e.ObjectNew) || !mayOptIn(e.ObjectOld, o.Reading()) && !mayOptIn(e.ObjectNew, o.Reading()) {
				return false
			}
			return !equality.Semantic.DeepEqual(podrefs.PodTemplate(e.ObjectOld), podrefs.PodTemplate(e.ObjectNew)) ||
				!sameAnnotationsBut(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations(), v1alpha1.ConfigStateAnnotation)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return scope(e.Object) && mayOptIn(e.Object, o.Reading()) },
	}}
}

// sameAnnotationsBut says whether a and b are equal but for the key ignored.
func sameAnnotationsBut(a, b map[string]string, ignored string) bool {
	count := 0
	for key, value := range a {
		if key == ignored {
			continue
		}
		if other, ok := b[key]; !ok || other != value {
			return false
		}
		count++
	}
	for key := range b {
		if key != ignored {
			count--
		}
	}
	return count == 0
}
