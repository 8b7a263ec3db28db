package verticalscaler

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/internal/apply"
)

// TemplateKind is a workload kind the controller knows: it is cached and watched, and has a Pod
// template, which the modes that write templates (Recreate, Auto) write to when the kind
// replaces its Pods on a template change.
type TemplateKind struct {
	// Group and Kind name the kind; every version of the group is read as the one below.
	Group, Kind string
	// New returns an empty object of the kind, of the version the controller reads.
	New func() client.Object
	// Template returns the Pod template of an object of the kind.
	Template func(client.Object) *corev1.PodTemplateSpec
	// Selector returns the label selector of the object's Pods.
	Selector func(client.Object) (*metav1.LabelSelector, error)
	// Replicas returns how many Pods the object wants; nil for the kinds whose Pods come and
	// go (a CronJob's, a Job's).
	Replicas func(client.Object) int32
	// RollsOnTemplateChange says whether a write to the template replaces the running Pods
	// (by the kind's own controller): Deployments, StatefulSets and DaemonSets roll, a
	// CronJob's next Job starts with it. A ReplicaSet or a Job does neither: its running Pods
	// are evicted instead.
	RollsOnTemplateChange bool
	// Apply returns the apply configuration of a Pod template for the object; nil when
	// RollsOnTemplateChange is false.
	Apply func(obj client.Object, template *corev1ac.PodTemplateSpecApplyConfiguration) apply.Object
	// Extract returns what fieldManager owns on the object, read from its managed fields, for
	// the kinds whose managed fields the cache keeps (ManagedFieldsKinds); nil for the others,
	// whose template is written whenever a request is off, as the write then changes it.
	Extract func(obj client.Object, fieldManager string) (runtime.ApplyConfiguration, error)
}

// Key returns the target key of the object of this kind named name.
func (k TemplateKind) Key(name string) string { return v1alpha1.TargetKey(k.Kind, k.Group, name) }

// specSelector is the Selector of the kinds with a spec.selector.
func specSelector(s *metav1.LabelSelector) (*metav1.LabelSelector, error) {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return nil, errors.New("it has no Pod selector")
	}
	return s, nil
}

// specReplicas is a spec.replicas, which the API server defaults to 1.
func specReplicas(replicas *int32) int32 {
	if replicas == nil {
		return 1
	}
	return *replicas
}

// TemplateKinds are the kinds with a Pod template the controller watches, in the order of the
// table's watches.
var TemplateKinds = []TemplateKind{
	{
		Group: "apps", Kind: "Deployment", New: func() client.Object { return &appsv1.Deployment{} },
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.Deployment).Spec.Template },
		Selector: func(o client.Object) (*metav1.LabelSelector, error) {
			return specSelector(o.(*appsv1.Deployment).Spec.Selector)
		},
		Replicas:              func(o client.Object) int32 { return specReplicas(o.(*appsv1.Deployment).Spec.Replicas) },
		RollsOnTemplateChange: true,
		Extract: func(o client.Object, m string) (runtime.ApplyConfiguration, error) {
			return appsv1ac.ExtractDeployment(o.(*appsv1.Deployment), m)
		},
		Apply: func(o client.Object, t *corev1ac.PodTemplateSpecApplyConfiguration) apply.Object {
			return appsv1ac.Deployment(o.GetName(), o.GetNamespace()).WithSpec(appsv1ac.DeploymentSpec().WithTemplate(t))
		},
	},
	{
		Group: "apps", Kind: "StatefulSet", New: func() client.Object { return &appsv1.StatefulSet{} },
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.StatefulSet).Spec.Template },
		Selector: func(o client.Object) (*metav1.LabelSelector, error) {
			return specSelector(o.(*appsv1.StatefulSet).Spec.Selector)
		},
		Replicas:              func(o client.Object) int32 { return specReplicas(o.(*appsv1.StatefulSet).Spec.Replicas) },
		RollsOnTemplateChange: true,
		Apply: func(o client.Object, t *corev1ac.PodTemplateSpecApplyConfiguration) apply.Object {
			return appsv1ac.StatefulSet(o.GetName(), o.GetNamespace()).WithSpec(appsv1ac.StatefulSetSpec().WithTemplate(t))
		},
	},
	{
		Group: "apps", Kind: "DaemonSet", New: func() client.Object { return &appsv1.DaemonSet{} },
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.DaemonSet).Spec.Template },
		Selector: func(o client.Object) (*metav1.LabelSelector, error) {
			return specSelector(o.(*appsv1.DaemonSet).Spec.Selector)
		},
		Replicas:              func(o client.Object) int32 { return o.(*appsv1.DaemonSet).Status.DesiredNumberScheduled },
		RollsOnTemplateChange: true,
		Apply: func(o client.Object, t *corev1ac.PodTemplateSpecApplyConfiguration) apply.Object {
			return appsv1ac.DaemonSet(o.GetName(), o.GetNamespace()).WithSpec(appsv1ac.DaemonSetSpec().WithTemplate(t))
		},
	},
	{
		Group: "apps", Kind: "ReplicaSet", New: func() client.Object { return &appsv1.ReplicaSet{} },
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*appsv1.ReplicaSet).Spec.Template },
		Selector: func(o client.Object) (*metav1.LabelSelector, error) {
			return specSelector(o.(*appsv1.ReplicaSet).Spec.Selector)
		},
		Replicas: func(o client.Object) int32 { return specReplicas(o.(*appsv1.ReplicaSet).Spec.Replicas) },
	},
	{
		Group: "batch", Kind: "CronJob", New: func() client.Object { return &batchv1.CronJob{} },
		Template: func(o client.Object) *corev1.PodTemplateSpec {
			return &o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template
		},
		// A CronJob has no selector: its Jobs' Pods carry the labels of its job template's Pod
		// template, as the Vertical Pod Autoscaler selects them.
		Selector: func(o client.Object) (*metav1.LabelSelector, error) {
			labels := o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template.Labels
			if len(labels) == 0 {
				return nil, errors.New("its job template's Pod template has no labels to select its Pods by")
			}
			return &metav1.LabelSelector{MatchLabels: labels}, nil
		},
		RollsOnTemplateChange: true,
		Apply: func(o client.Object, t *corev1ac.PodTemplateSpecApplyConfiguration) apply.Object {
			return batchv1ac.CronJob(o.GetName(), o.GetNamespace()).WithSpec(batchv1ac.CronJobSpec().
				WithJobTemplate(batchv1ac.JobTemplateSpec().WithSpec(batchv1ac.JobSpec().WithTemplate(t))))
		},
	},
	{
		// A Job's Pod template cannot change: its running Pods are evicted, and the Job
		// replaces them as it replaces a failed Pod.
		Group: "batch", Kind: "Job", New: func() client.Object { return &batchv1.Job{} },
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &o.(*batchv1.Job).Spec.Template },
		Selector: func(o client.Object) (*metav1.LabelSelector, error) {
			return specSelector(o.(*batchv1.Job).Spec.Selector)
		},
	},
}

// templateKind returns the known kind of group and kind, if it is one.
func templateKind(group, kind string) (TemplateKind, bool) {
	for _, k := range TemplateKinds {
		if k.Group == group && k.Kind == kind {
			return k, true
		}
	}
	return TemplateKind{}, false
}

// workload is the target of a VerticalScaler, as the controller found it.
type workload struct {
	// key is the target's key, Kind.group/name.
	key string
	// kind is the target's kind when it is a TemplateKind, and object the object read from the
	// cache; object is nil for a custom kind.
	kind   TemplateKind
	object client.Object
	// selector selects the workload's Pods.
	selector *metav1.LabelSelector
	// replicas is how many Pods the workload wants, when it says (knowsReplicas).
	replicas      int32
	knowsReplicas bool
}

// template returns the Pod template the workload makes its Pods from; nil for a custom kind,
// whose template the controller cannot know.
func (w *workload) template() *corev1.PodTemplateSpec {
	if w.object == nil {
		return nil
	}
	return w.kind.Template(w.object)
}

// targetProblem says why a VerticalScaler has no workload to size: the TargetFound reason and
// message.
type targetProblem struct {
	reason, message string
}

// findTarget finds the workload the VerticalScaler names. A known kind is read from the cache;
// any other must be served by the API server and have a scale subresource whose status has a
// label selector, read uncached. A workload that is missing or cannot be sized is a problem to
// report, not an error: only a failed read is.
func (r *Reconciler) findTarget(ctx context.Context, vs *v1alpha1.VerticalScaler) (*workload, *targetProblem, error) {
	ref := vs.Spec.Target()
	key := ref.Key()
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf("spec.targetRef.apiVersion %q is not group/version: %v", ref.APIVersion, err)}, nil
	}
	name := client.ObjectKey{Namespace: vs.Namespace, Name: ref.Name}
	if kind, ok := templateKind(gv.Group, ref.Kind); ok {
		obj := kind.New()
		if err := r.Client.Get(ctx, name, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, r.notInCache(key, vs.Namespace), nil
			}
			return nil, nil, fmt.Errorf("reading %s: %w", key, err)
		}
		selector, err := kind.Selector(obj)
		if err != nil {
			return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf("%s cannot be sized: %v", key, err)}, nil
		}
		w := &workload{key: key, kind: kind, object: obj, selector: selector}
		if kind.Replicas != nil {
			w.replicas, w.knowsReplicas = kind.Replicas(obj), true
		}
		return w, nil, nil
	}
	return r.findScalable(ctx, vs, gv.WithKind(ref.Kind), name, key)
}

// findScalable finds a workload of a kind the controller does not know through its scale
// subresource, as the Vertical Pod Autoscaler does: the subresource's status.selector selects
// its Pods.
func (r *Reconciler) findScalable(ctx context.Context, vs *v1alpha1.VerticalScaler, gvk schema.GroupVersionKind, name client.ObjectKey, key string) (*workload, *targetProblem, error) {
	mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf(
				"the API server serves no kind %s in %s; the verticalscaler sizes Deployments, StatefulSets, DaemonSets, ReplicaSets, CronJobs, Jobs, and custom workloads with a scale subresource", gvk.Kind, gvk.GroupVersion())}, nil
		}
		return nil, nil, fmt.Errorf("finding the resource of %s: %w", key, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(name.Namespace)
	obj.SetName(name.Name)
	scale := &unstructured.Unstructured{}
	scale.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
	// The subresource client reads from the API server, not the cache.
	if err := r.Client.SubResource("scale").Get(ctx, obj, scale); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			// The API server answers 404 both for a missing object and for a kind without the
			// subresource: discovery tells them apart.
			scalable, derr := r.servesScale(gvk.GroupVersion(), mapping.Resource.Resource)
			if derr != nil {
				return nil, nil, fmt.Errorf("finding whether %s has a scale subresource: %w", key, derr)
			}
			if scalable {
				return nil, notFound(key, vs.Namespace), nil
			}
			return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf(
				"%s cannot be sized: its kind has no scale subresource, which the verticalscaler reads the label selector of its Pods from", key)}, nil
		case apierrors.IsInternalError(err):
			// The API server cannot read the scale out of this object (its CRD's replicas path
			// is missing in it, for one): a fault of the object, which a retry does not mend;
			// the periodic resync looks again.
			return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf(
				"%s cannot be sized: the API server cannot read its scale subresource: %v", key, err)}, nil
		}
		return nil, nil, fmt.Errorf("reading the scale subresource of %s: %w", key, err)
	}
	selectorString, _, _ := unstructured.NestedString(scale.Object, "status", "selector")
	if selectorString == "" {
		return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf(
			"%s cannot be sized: its scale subresource has no label selector (the CRD's scale subresource needs a labelSelectorPath, and the workload must set it)", key)}, nil
	}
	selector, err := metav1.ParseToLabelSelector(selectorString)
	if err != nil {
		return nil, &targetProblem{v1alpha1.ReasonTargetUnsupported, fmt.Sprintf("%s cannot be sized: the label selector of its scale subresource, %q, does not parse: %v", key, selectorString, err)}, nil
	}
	w := &workload{key: key, selector: selector}
	if replicas, found, err := unstructured.NestedInt64(scale.Object, "spec", "replicas"); err == nil && found {
		w.replicas, w.knowsReplicas = int32(replicas), true
	}
	return w, nil, nil
}

// servesScale says whether the API server serves the scale subresource of resource in gv.
func (r *Reconciler) servesScale(gv schema.GroupVersion, resource string) (bool, error) {
	list, err := r.Discovery.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return false, err
	}
	for _, res := range list.APIResources {
		if res.Name == resource+"/scale" {
			return true, nil
		}
	}
	return false, nil
}

// notInCache is notFound for a kind the manager caches: with --watch-label-selector, the
// workload may exist outside this shard.
func (r *Reconciler) notInCache(key, namespace string) *targetProblem {
	if r.Shard == "" {
		return notFound(key, namespace)
	}
	return &targetProblem{v1alpha1.ReasonTargetNotFound, fmt.Sprintf(
		"%s does not exist in namespace %s, or does not match this shard's label selector %q: label it as its VerticalScaler", key, namespace, r.Shard)}
}

func notFound(key, namespace string) *targetProblem {
	return &targetProblem{v1alpha1.ReasonTargetNotFound, fmt.Sprintf("%s does not exist in namespace %s", key, namespace)}
}

// ManagedFieldsKinds are the kinds whose managed fields the controller reads back before it
// writes their Pod templates: Deployments, whose managed fields the cache keeps for myapp too.
// The cache strips those of the other kinds, which can be several KiB each.
func ManagedFieldsKinds() []client.Object {
	var out []client.Object
	for _, k := range TemplateKinds {
		if k.Extract != nil {
			out = append(out, k.New())
		}
	}
	return out
}

// TrimReplicaSet keeps of a ReplicaSet what the controller reads, when it alone watches
// ReplicaSets: every Deployment leaves its old ReplicaSets behind, so caching them whole costs
// memory for nothing. It keeps the metadata that names the object, the selector, and the Pod
// template's labels and containers' names, resources and restart policies.
func TrimReplicaSet(obj any) (any, error) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return obj, nil
	}
	trim := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, 0, len(cs))
		for _, c := range cs {
			out = append(out, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
		}
		return out
	}
	out := &appsv1.ReplicaSet{
		TypeMeta: rs.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Name, UID: rs.UID, ResourceVersion: rs.ResourceVersion,
			Generation: rs.Generation, DeletionTimestamp: rs.DeletionTimestamp},
		Spec: appsv1.ReplicaSetSpec{Replicas: rs.Spec.Replicas, Selector: rs.Spec.Selector},
	}
	out.Spec.Template.Labels = rs.Spec.Template.Labels
	out.Spec.Template.Spec.Containers = trim(rs.Spec.Template.Spec.Containers)
	out.Spec.Template.Spec.InitContainers = trim(rs.Spec.Template.Spec.InitContainers)
	return out, nil
}
