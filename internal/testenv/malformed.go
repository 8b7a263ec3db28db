package testenv

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// Malformed is one object of the bad-input tests, malformed or its well-formed twin: what it
// is, what must say what is wrong with it, and how often it changed.
type Malformed struct {
	// Object is the malformed object; Blocker, when set, is created before it: the Deployment
	// that takes a MyApp's name, or the one a VerticalScaler sizes (each its own: a workload
	// named by several VerticalScalers is sized by the oldest only, and the others are refused
	// for that).
	Object, Blocker client.Object
	// Kind is Object's kind.
	Kind string
	// Reason is the reason of the warning Event that says what is wrong; empty for a
	// well-formed twin, which gets none.
	Reason string
	// Controller reconciles it, and Group is that controller's Lease group.
	Controller, Group string
	// Changes counts its creation and every change since.
	Changes int
}

// MalformedObjects returns n malformed objects of ns, a quarter of each kind: a Deployment whose
// reload annotation cannot be read, one whose ConfigMap is missing, a MyApp whose Deployment's
// name is taken by a Deployment it does not control, and a VerticalScaler whose policy names a
// container that its Deployment, of its name, does not have. Their Deployments run no replicas.
func MalformedObjects(ns string, n int) []*Malformed {
	var out []*Malformed
	for i := range n / 4 {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i)}
		}
		app := &v1alpha1.MyApp{ObjectMeta: meta("taken"), Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		out = append(out,
			&Malformed{Object: idleDeployment(meta("bad-annotation"), map[string]string{v1alpha1.ReloadAnnotation: "secret/"}, ""),
				Kind: "Deployment", Reason: v1alpha1.ReasonInvalidReloadAnnotation, Controller: "configmapwatcher-deployments", Group: "configmapwatcher"},
			&Malformed{Object: idleDeployment(meta("missing-source"), map[string]string{v1alpha1.ReloadAnnotation: "true"}, fmt.Sprintf("absent-%d", i)),
				Kind: "Deployment", Reason: v1alpha1.ReasonConfigMapMissing, Controller: "configmapwatcher-deployments", Group: "configmapwatcher"},
			&Malformed{Object: app, Blocker: idleDeployment(meta("taken"), nil, ""),
				Kind: "MyApp", Reason: v1alpha1.ReasonDeploymentConflict, Controller: "myapp", Group: "myapp"},
			&Malformed{Object: &v1alpha1.VerticalScaler{ObjectMeta: meta("ghost-container"), Spec: v1alpha1.VerticalScalerSpec{
				DeploymentName: meta("ghost-container").Name, UpdateMode: v1alpha1.UpdateModeOff,
				ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "ghost"}}}},
				Blocker: idleDeployment(meta("ghost-container"), nil, ""),
				Kind:    "VerticalScaler", Reason: v1alpha1.ReasonContainerNotFound, Controller: "verticalscaler", Group: "verticalscaler"},
		)
	}
	return out
}

// WellFormedTwins returns the well-formed twins of MalformedObjects(ns, n), of the same kinds
// and names, changed the same way by Change: a Deployment with a readable reload annotation, one
// whose ConfigMap exists (CreateSources creates them), a MyApp whose name is free, a
// VerticalScaler whose policy names its Deployment's container "app". A run with them
// against a run with the malformed objects tells what being malformed costs, the work of the
// same number of objects and changes being the same.
func WellFormedTwins(ns string, n int) []*Malformed {
	var out []*Malformed
	for i := range n / 4 {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i)}
		}
		out = append(out,
			&Malformed{Object: idleDeployment(meta("bad-annotation"), map[string]string{v1alpha1.ReloadAnnotation: twinConfigMaps[0]}, ""),
				Kind: "Deployment", Controller: "configmapwatcher-deployments", Group: "configmapwatcher"},
			&Malformed{Object: idleDeployment(meta("missing-source"), map[string]string{v1alpha1.ReloadAnnotation: "true"}, twinConfigMaps[0]),
				Kind: "Deployment", Controller: "configmapwatcher-deployments", Group: "configmapwatcher"},
			&Malformed{Object: &v1alpha1.MyApp{ObjectMeta: meta("taken"), Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}},
				Kind: "MyApp", Controller: "myapp", Group: "myapp"},
			&Malformed{Object: &v1alpha1.VerticalScaler{ObjectMeta: meta("ghost-container"), Spec: v1alpha1.VerticalScalerSpec{
				DeploymentName: meta("ghost-container").Name, UpdateMode: v1alpha1.UpdateModeOff,
				ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "app"}}}},
				Blocker: idleDeployment(meta("ghost-container"), nil, ""),
				Kind:    "VerticalScaler", Controller: "verticalscaler", Group: "verticalscaler"},
		)
	}
	return out
}

// twinConfigMaps are the ConfigMaps the well-formed twins name, in turn.
var twinConfigMaps = [2]string{"twin-a", "twin-b"}

// CreateTwinSources creates the ConfigMaps the well-formed twins of ns take.
func CreateTwinSources(ctx context.Context, c client.Client, ns string) error {
	for _, name := range twinConfigMaps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"X": "1"}}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
	}
	return nil
}

// idleDeployment is a Deployment of no replicas with annotations, taking key X of ConfigMap
// configMap when one is named.
func idleDeployment(meta metav1.ObjectMeta, annotations map[string]string, configMap string) *appsv1.Deployment {
	meta.Annotations = annotations
	labels := map[string]string{"malformed": meta.Name}
	container := corev1.Container{Name: "app", Image: "registry.example.com/app:v1"}
	if configMap != "" {
		container.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: "X"}}}}
	}
	return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Replicas: new(int32(0)),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
	}}
}

// Create creates the object, after its blocker (a MyApp's or a VerticalScaler's Deployment).
func (m *Malformed) Create(ctx context.Context, c client.Client) error {
	if m.Blocker != nil {
		if err := c.Create(ctx, m.Blocker); err != nil {
			return fmt.Errorf("creating the Deployment of %s %s: %w", m.Kind, m.Object.GetName(), err)
		}
	}
	if err := c.Create(ctx, m.Object); err != nil {
		return fmt.Errorf("creating malformed %s %s: %w", m.Kind, m.Object.GetName(), err)
	}
	m.Changes = 1
	return nil
}

// Change reads the object and changes it so that it stays what it is, in another way each time:
// for a malformed one, the other unreadable annotation, the other missing ConfigMap, the other
// image (the name stays taken), the other missing container; for a twin, the other ConfigMap
// named or taken, the other image, the other container name ("app" or the default policy's).
func (m *Malformed) Change(ctx context.Context, c client.Client) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(m.Object), m.Object); err != nil {
		return err
	}
	other := func(s, a, b string) string {
		if s == a {
			return b
		}
		return a
	}
	twin := m.Reason == ""
	switch obj := m.Object.(type) {
	case *appsv1.Deployment:
		containers := obj.Spec.Template.Spec.Containers
		switch {
		case len(containers[0].Env) > 0 && twin:
			ref := containers[0].Env[0].ValueFrom.ConfigMapKeyRef
			ref.Name = other(ref.Name, twinConfigMaps[0], twinConfigMaps[1])
		case len(containers[0].Env) > 0:
			ref := containers[0].Env[0].ValueFrom.ConfigMapKeyRef
			ref.Name = other(ref.Name, obj.Name+"-absent-a", obj.Name+"-absent-b")
		case twin:
			obj.Annotations[v1alpha1.ReloadAnnotation] = other(obj.Annotations[v1alpha1.ReloadAnnotation], twinConfigMaps[0], twinConfigMaps[1])
		default:
			obj.Annotations[v1alpha1.ReloadAnnotation] = other(obj.Annotations[v1alpha1.ReloadAnnotation], "secret/", "configmap/")
		}
	case *v1alpha1.MyApp:
		obj.Spec.Image = other(obj.Spec.Image, "nginx:1.27", "nginx:1.28")
	case *v1alpha1.VerticalScaler:
		policy := &obj.Spec.ContainerPolicies[0]
		if twin {
			policy.ContainerName = other(policy.ContainerName, "app", v1alpha1.DefaultContainerPolicyName)
		} else {
			policy.ContainerName = other(policy.ContainerName, "ghost", "ghost-b")
		}
	}
	if err := c.Update(ctx, m.Object); err != nil {
		return fmt.Errorf("changing malformed %s %s: %w", m.Kind, m.Object.GetName(), err)
	}
	m.Changes++
	return nil
}

// Warnings counts the warning Events of ns per object and reason ("Kind/name reason"): how many
// times each was emitted, a series counting as many times as its count.
func Warnings(ctx context.Context, c client.Reader, ns string) (map[string]int, error) {
	var events eventsv1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		out[e.Regarding.Kind+"/"+e.Regarding.Name+" "+e.Reason] += n
	}
	return out, nil
}

// WarningKey is the key of Warnings for m.
func (m *Malformed) WarningKey() string {
	return m.Kind + "/" + m.Object.GetName() + " " + m.Reason
}
