package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/faultproxy"
	"github.com/example/switchboard/test/reliability/churn"
)

// badObject is one malformed object: what it is, what must say so, and how often it changed.
type badObject struct {
	obj client.Object
	// reason is the warning Event's reason, or, for a VerticalScaler, of its Ready condition.
	reason string
	// controller reconciles it; group is that controller's Lease group.
	controller, group string
	// changes counts its creation and every change since.
	changes int
}

// badInput is the malformed objects mixed into the churn, in equal shares: a Deployment whose
// reload annotation cannot be read, one whose ConfigMap is missing, a MyApp whose Deployment's
// name is taken by a Deployment it does not control, and a VerticalScaler whose policy names a
// container its Deployment does not have.
type badInput struct {
	c       client.Client
	ns      string
	mu      sync.Mutex
	objects []*badObject
}

func newBadInput(c client.Client, ns string, n int) *badInput {
	b := &badInput{c: c, ns: ns}
	for i := range n / 4 {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i)}
		}
		annotated := idle(meta("bad-annotation"), map[string]string{v1alpha1.ReloadAnnotation: "secret/"}, "")
		missing := idle(meta("missing-source"), map[string]string{v1alpha1.ReloadAnnotation: "true"}, fmt.Sprintf("absent-%d", i))
		app := &v1alpha1.MyApp{ObjectMeta: meta("taken"), Spec: v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: 1, Port: 8080}}
		scaler := &v1alpha1.VerticalScaler{ObjectMeta: meta("ghost-container"), Spec: v1alpha1.VerticalScalerSpec{
			DeploymentName: churn.ReaderName(0), UpdateMode: v1alpha1.UpdateModeOff,
			ContainerPolicies: []v1alpha1.ContainerPolicy{{ContainerName: "ghost"}}}}
		b.objects = append(b.objects,
			&badObject{obj: annotated, reason: v1alpha1.ReasonInvalidReloadAnnotation, controller: "configmapwatcher-deployments", group: "configmapwatcher"},
			&badObject{obj: missing, reason: v1alpha1.ReasonConfigMapMissing, controller: "configmapwatcher-deployments", group: "configmapwatcher"},
			&badObject{obj: app, reason: v1alpha1.ReasonDeploymentConflict, controller: "myapp", group: "myapp"},
			&badObject{obj: scaler, reason: v1alpha1.ReasonContainerNotFound, controller: "verticalscaler", group: "verticalscaler"},
		)
	}
	return b
}

// idle is a Deployment of no replicas with annotations, taking key X of ConfigMap configMap
// when one is named.
func idle(meta metav1.ObjectMeta, annotations map[string]string, configMap string) *appsv1.Deployment {
	meta.Annotations = annotations
	labels := map[string]string{"bad": meta.Name}
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

// create creates the malformed objects; a taken MyApp's Deployment first, by someone else.
func (b *badInput) create(ctx context.Context) error {
	for _, o := range b.objects {
		if o.reason == v1alpha1.ReasonDeploymentConflict {
			if err := b.c.Create(ctx, idle(*o.obj.(*v1alpha1.MyApp).ObjectMeta.DeepCopy(), nil, "")); err != nil {
				return fmt.Errorf("creating the Deployment that takes %s: %w", o.obj.GetName(), err)
			}
		}
		if err := b.c.Create(ctx, o.obj); err != nil {
			return fmt.Errorf("creating malformed %s: %w", o.obj.GetName(), err)
		}
		o.changes = 1
	}
	return nil
}

// change changes each malformed object once, keeping it malformed in another way: another
// unreadable annotation, another missing ConfigMap, another image, another missing container.
func (b *badInput) change(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, o := range b.objects {
		if err := b.c.Get(ctx, client.ObjectKeyFromObject(o.obj), o.obj); err != nil {
			return err
		}
		switch obj := o.obj.(type) {
		case *appsv1.Deployment:
			if o.reason == v1alpha1.ReasonInvalidReloadAnnotation {
				obj.Annotations[v1alpha1.ReloadAnnotation] = "configmap/"
			} else {
				obj.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name += "-b"
			}
		case *v1alpha1.MyApp:
			obj.Spec.Image = "nginx:1.28"
		case *v1alpha1.VerticalScaler:
			obj.Spec.ContainerPolicies[0].ContainerName = "ghost-b"
		}
		if err := b.c.Update(ctx, o.obj); err != nil {
			return fmt.Errorf("changing malformed %s: %w", o.obj.GetName(), err)
		}
		o.changes++
	}
	return nil
}

// badFigures is what the report says of the malformed objects.
type badFigures struct {
	objects, changes        int
	events, mostEvents      int
	reconciles, mostRecons  int
	withoutEvent, withEvent int
}

// check checks what the malformed objects got: each a warning Event of its reason (a
// VerticalScaler, its Ready condition), and no more of them, nor reconciles, than its changes and
// the terms of leading its controller allow. A MyApp whose Deployment is taken is looked at again
// every conflictRetry (a minute), which the bound counts.
func (b *badInput) check(ctx context.Context, reconciles []Reconcile, rs *replicas) ([]Violation, badFigures) {
	b.mu.Lock()
	defer b.mu.Unlock()
	figures := badFigures{objects: len(b.objects)}
	if len(b.objects) == 0 {
		return nil, figures
	}
	var events eventsv1.EventList
	if err := b.c.List(ctx, &events, client.InNamespace(b.ns)); err != nil {
		return []Violation{{InvariantEventsOnce, err.Error()}}, figures
	}
	emitted := map[string]int{} // "Kind/name reason" -> emissions
	for _, e := range events.Items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		emitted[e.Regarding.Kind+"/"+e.Regarding.Name+" "+e.Reason] += n
	}
	recons := map[string]int{}
	for _, r := range reconciles {
		recons[r.Controller+" "+r.Object] += 1
	}
	terms := termsPerGroup(rs.writes())
	run := time.Since(rs.began())
	var out []Violation
	for _, o := range b.objects {
		figures.changes += o.changes
		kind := kindOf(o.obj)
		name := o.obj.GetName()
		// A new term checks every object again: its first reconcile may say it again. So may
		// every change, and every retry of a taken name.
		allowed := o.changes + terms[o.group]
		if o.reason == v1alpha1.ReasonDeploymentConflict {
			allowed += int(run / time.Minute)
		}
		n := recons[o.controller+" "+b.ns+"/"+name]
		figures.reconciles += n
		figures.mostRecons = max(figures.mostRecons, n)
		if limit := 3 * allowed; n > limit {
			out = append(out, Violation{InvariantBadInputPace, fmt.Sprintf("malformed %s %s was reconciled %d times for %d changes and %d terms of %s: more than %d, faster than backoff allows",
				kind, name, n, o.changes, terms[o.group], o.group, limit)})
		}
		if o.reason == v1alpha1.ReasonContainerNotFound {
			vs := &v1alpha1.VerticalScaler{}
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(o.obj), vs); err != nil {
				out = append(out, Violation{InvariantEventsOnce, err.Error()})
				continue
			}
			if c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != o.reason {
				out = append(out, Violation{InvariantEventsOnce, fmt.Sprintf("malformed VerticalScaler %s: Ready %+v, want the reason %s", name, c, o.reason)})
			}
		}
		got := emitted[kind+"/"+name+" "+o.reason]
		figures.events += got
		figures.mostEvents = max(figures.mostEvents, got)
		switch {
		case got == 0 && o.reason == v1alpha1.ReasonContainerNotFound:
			figures.withoutEvent++
		case got == 0:
			out = append(out, Violation{InvariantEventsOnce, fmt.Sprintf("malformed %s %s got no %s Event", kind, name, o.reason)})
		case got > allowed:
			figures.withEvent++
			out = append(out, Violation{InvariantEventsOnce, fmt.Sprintf("malformed %s %s got its %s Event %d times for %d changes and %d terms of %s (at most %d)",
				kind, name, o.reason, got, o.changes, terms[o.group], o.group, allowed)})
		default:
			figures.withEvent++
		}
	}
	return out, figures
}

// termsPerGroup counts, per group, the terms of leading it: the accepted writes of its Lease
// that changed its holder.
func termsPerGroup(writes []faultproxy.Write) map[string]int {
	var leases []faultproxy.Write
	for _, w := range writes {
		if w.Resource == "leases" && w.Succeeded() && strings.HasPrefix(w.Name, controllers.LeaseNamePrefix) {
			leases = append(leases, w)
		}
	}
	sort.SliceStable(leases, func(i, j int) bool { return leases[i].Answered.Before(leases[j].Answered) })
	last := map[string]string{}
	out := map[string]int{}
	for _, w := range leases {
		group := strings.TrimPrefix(w.Name, controllers.LeaseNamePrefix)
		if w.Holder != "" && w.Holder != last[group] {
			out[group]++
		}
		last[group] = w.Holder
	}
	return out
}

// kindOf names the kind of a malformed object.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *v1alpha1.MyApp:
		return "MyApp"
	}
	return "VerticalScaler"
}
