package configmapwatcher

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// Group names the configmapwatcher's controllers together: --controllers=configmapwatcher
// runs all four, and config/components/configmapwatcher deploys them.
const Group = "configmapwatcher"

// FieldManager is the field manager of every write of the configmapwatcher's controllers,
// whatever the kind: it owns the workload's ConfigStateAnnotation and its Pod template's
// ConfigHashAnnotation, and nothing else.
const FieldManager = "configmapwatcher"

// Kind adapts the reconciler to one workload kind: its Go types, and the apply configuration
// that carries the two annotations the controller owns. Where the kind keeps its Pod template
// is podrefs.PodTemplate's to say, so that the shared index reads the same one.
type Kind[T client.Object] struct {
	// Name is the kind, as Events and logs name it.
	Name string
	// ControllerName names the kind's controller (its table row).
	ControllerName string
	// New returns an empty object of the kind.
	New func() T
	// NewList returns an empty list of the kind.
	NewList func() client.ObjectList
	// skeleton returns a new object of the kind with obj's type and object metadata only.
	skeleton func(obj T) T
	// apply returns the apply configuration of obj with these metadata annotations and, unless
	// nil, these Pod template annotations.
	apply func(obj T, annotations, templateAnnotations map[string]string) runtime.ApplyConfiguration
}

// The four workload kinds.
var (
	// Deployments rolls Deployments.
	Deployments = Kind[*appsv1.Deployment]{
		Name: "Deployment", ControllerName: Group + "-deployments",
		New:     func() *appsv1.Deployment { return &appsv1.Deployment{} },
		NewList: func() client.ObjectList { return &appsv1.DeploymentList{} },
		skeleton: func(d *appsv1.Deployment) *appsv1.Deployment {
			return &appsv1.Deployment{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta}
		},
		apply: func(d *appsv1.Deployment, annotations, template map[string]string) runtime.ApplyConfiguration {
			ac := appsv1ac.Deployment(d.Name, d.Namespace).WithAnnotations(annotations)
			if template != nil {
				ac.WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(template)))
			}
			return ac
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
		apply: func(s *appsv1.StatefulSet, annotations, template map[string]string) runtime.ApplyConfiguration {
			ac := appsv1ac.StatefulSet(s.Name, s.Namespace).WithAnnotations(annotations)
			if template != nil {
				ac.WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(template)))
			}
			return ac
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
		apply: func(ds *appsv1.DaemonSet, annotations, template map[string]string) runtime.ApplyConfiguration {
			ac := appsv1ac.DaemonSet(ds.Name, ds.Namespace).WithAnnotations(annotations)
			if template != nil {
				ac.WithSpec(appsv1ac.DaemonSetSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(template)))
			}
			return ac
		},
	}
	// CronJobs puts the hash on the job template's Pod template: the next Job runs with the new
	// configuration, and no Job runs before its time.
	CronJobs = Kind[*batchv1.CronJob]{
		Name: "CronJob", ControllerName: Group + "-cronjobs",
		New:     func() *batchv1.CronJob { return &batchv1.CronJob{} },
		NewList: func() client.ObjectList { return &batchv1.CronJobList{} },
		skeleton: func(cj *batchv1.CronJob) *batchv1.CronJob {
			return &batchv1.CronJob{TypeMeta: cj.TypeMeta, ObjectMeta: cj.ObjectMeta}
		},
		apply: func(cj *batchv1.CronJob, annotations, template map[string]string) runtime.ApplyConfiguration {
			ac := batchv1ac.CronJob(cj.Name, cj.Namespace).WithAnnotations(annotations)
			if template != nil {
				ac.WithSpec(batchv1ac.CronJobSpec().WithJobTemplate(batchv1ac.JobTemplateSpec().WithSpec(
					batchv1ac.JobSpec().WithTemplate(corev1ac.PodTemplateSpec().WithAnnotations(template)))))
			}
			return ac
		},
	}
)

// lastApplied is kubectl's copy of the whole object as last applied client-side: often the
// largest annotation of a workload, and nothing this controller reads.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Trim keeps of a workload what this controller reads: its metadata without managed fields and
// without kubectl's last-applied copy and, if it carries an annotation that opts it in, its Pod
// template's annotations and the ConfigMap and Secret references of its Pod spec. The cache
// stores workloads so when this is the only selected controller that watches the kind: a real
// workload's spec and status are several KiB, of which the controller reads a few names.
func (k Kind[T]) Trim(obj any) (any, error) {
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
	if template := podrefs.PodTemplate(full); template != nil && mayOptIn(full) {
		kept := podrefs.PodTemplate(trimmed)
		kept.Annotations = template.Annotations
		kept.Spec = podrefs.ReferencesOnly(&template.Spec)
	}
	return trimmed, nil
}

// optInAnnotations are the annotations that can opt a workload in, on it or on its Pod
// template: ours, and Reloader's (read or not, depending on the flags).
var optInAnnotations = []string{
	v1alpha1.ReloadAnnotation,
	v1alpha1.ReloaderAutoAnnotation, v1alpha1.ReloaderConfigMapAutoAnnotation, v1alpha1.ReloaderSecretAutoAnnotation,
	v1alpha1.ReloaderConfigMapReloadAnnotation, v1alpha1.ReloaderSecretReloadAnnotation, v1alpha1.ReloaderSearchAnnotation,
}

// mayOptIn says whether obj carries an annotation that can opt it in, whatever its value:
// what a workload asked for is podrefs.Select's to say, in Reconcile, which also reports an
// annotation it cannot read.
func mayOptIn(obj client.Object) bool {
	template := podrefs.PodTemplate(obj)
	for _, key := range optInAnnotations {
		if _, ok := obj.GetAnnotations()[key]; ok {
			return true
		}
		if template != nil {
			if _, ok := template.Annotations[key]; ok {
				return true
			}
		}
	}
	return false
}

// Predicates filter the events of the workloads: those of workloads that carry an opt-in
// annotation (before or after the change), when their Pod template or their annotations changed
// other than by this controller's own record. Writing the record therefore reconciles nothing
// again; a roll does, since it changes the Pod template. The generation is not what tells: a
// Deployment's moves with its annotations too, the record's included (the API server copies a
// Deployment's annotations to its ReplicaSets), and a change of replicas is none of this
// controller's business.
func Predicates() []predicate.Predicate {
	return []predicate.Predicate{predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return mayOptIn(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !mayOptIn(e.ObjectOld) && !mayOptIn(e.ObjectNew) {
				return false
			}
			return !equality.Semantic.DeepEqual(podrefs.PodTemplate(e.ObjectOld), podrefs.PodTemplate(e.ObjectNew)) ||
				!sameAnnotationsBut(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations(), v1alpha1.ConfigStateAnnotation)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(e event.GenericEvent) bool { return mayOptIn(e.Object) },
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
