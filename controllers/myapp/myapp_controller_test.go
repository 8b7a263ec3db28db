package myapp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

const timeout = 20 * time.Second

func newMyApp(ns, name string) *v1alpha1.MyApp {
	return &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MyAppSpec{
			Image:    "registry.example.com:5000/team/app:v1",
			Replicas: 3,
			Port:     9090,
			Env:      map[string]string{"B": "2", "A": "1"},
		},
	}
}

// get reads obj afresh from the API server.
func get(t *testing.T, obj client.Object) error {
	t.Helper()
	return env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
}

// waitConverged waits until app's Deployment exists and its status reports its generation.
func waitConverged(t *testing.T, app *v1alpha1.MyApp) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, app); err != nil {
			return err
		}
		if app.Status.ObservedGeneration != app.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", app.Status.ObservedGeneration, app.Generation)
		}
		return get(t, d)
	})
	return d
}

func TestCreateMakesDeploymentAndService(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "web")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)

	if !controllerutilContains(app.Finalizers, v1alpha1.MyAppFinalizer) {
		t.Errorf("finalizers = %v, want %s", app.Finalizers, v1alpha1.MyAppFinalizer)
	}
	wantOwner := metav1.OwnerReference{APIVersion: "app.example.com/v1alpha1", Kind: "MyApp", Name: app.Name,
		UID: app.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
	if diff := cmp.Diff([]metav1.OwnerReference{wantOwner}, d.OwnerReferences); diff != "" {
		t.Errorf("Deployment owner references (-want +got):\n%s", diff)
	}
	if got := *d.Spec.Replicas; got != 3 {
		t.Errorf("replicas = %d, want 3", got)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != app.Spec.Image {
		t.Errorf("image = %q, want %q", c.Image, app.Spec.Image)
	}
	wantEnv := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("ports = %v, want containerPort 9090", c.Ports)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}
	testenv.Eventually(t, timeout, func() error { return get(t, svc) })
	if diff := cmp.Diff([]metav1.OwnerReference{wantOwner}, svc.OwnerReferences); diff != "" {
		t.Errorf("Service owner references (-want +got):\n%s", diff)
	}
	wantPorts := []corev1.ServicePort{{Name: "http", Port: 9090, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, svc.Spec.Ports); diff != "" {
		t.Errorf("Service ports (-want +got):\n%s", diff)
	}
	if app.Status.Phase != v1alpha1.MyAppPending {
		t.Errorf("phase = %q before the Deployment reports, want Pending", app.Status.Phase)
	}
}

func controllerutilContains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}

func TestStatusFollowsDeployment(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "status")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)

	// envtest runs no Deployment controller: play its part.
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "up"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "done"},
		},
	}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, app); err != nil {
			return err
		}
		if app.Status.Phase != v1alpha1.MyAppRunning || app.Status.ReadyReplicas != 3 {
			return fmt.Errorf("phase %q readyReplicas %d, want Running 3", app.Status.Phase, app.Status.ReadyReplicas)
		}
		return nil
	})
	for _, want := range []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAllReplicasReady},
		{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
		{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
	} {
		got := meta.FindStatusCondition(app.Status.Conditions, want.Type)
		if got == nil || got.Status != want.Status || got.Reason != want.Reason {
			t.Errorf("condition %s = %+v, want status %s reason %s", want.Type, got, want.Status, want.Reason)
		}
	}

	// A stuck rollout fails the MyApp.
	d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
	d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: "stuck"}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, app); err != nil {
			return err
		}
		if app.Status.Phase != v1alpha1.MyAppFailed || app.Status.ReadyReplicas != 1 {
			return fmt.Errorf("phase %q readyReplicas %d, want Failed 1", app.Status.Phase, app.Status.ReadyReplicas)
		}
		return nil
	})
}

func TestUpdateIsFollowed(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "update")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, app)

	app.Spec.Image = "nginx:1.27"
	app.Spec.Replicas = 5
	app.Spec.Env = map[string]string{"C": "3"}
	app.Spec.EnvFrom = []v1alpha1.ConfigMapEnvSource{{ConfigMapName: "settings"}}
	if err := env.Client.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "nginx:1.27" || *d.Spec.Replicas != 5 {
		t.Errorf("image %q replicas %d, want nginx:1.27 and 5", c.Image, *d.Spec.Replicas)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "C", Value: "3"}}, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	wantFrom := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	if diff := cmp.Diff(wantFrom, c.EnvFrom); diff != "" {
		t.Errorf("envFrom (-want +got):\n%s", diff)
	}
	if got := d.Annotations[v1alpha1.ReloadAnnotation]; got != "true" {
		t.Errorf("reload annotation = %q, want true: a MyApp with envFrom opts its Deployment in", got)
	}
}

func TestDeleteRemovesFinalizer(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "delete")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)
	if !metav1.IsControlledBy(d, app) {
		t.Fatalf("Deployment is not controlled by the MyApp: the garbage collector would not delete it")
	}
	if err := env.Client.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, app); !apierrors.IsNotFound(err) {
			return fmt.Errorf("MyApp still there (finalizers %v): %v", app.Finalizers, err)
		}
		return nil
	})
}

// TestForegroundDeletionShowsTerminating deletes a MyApp in the foreground. envtest has no
// garbage collector, so the API server's foregroundDeletion finalizer keeps the MyApp around
// after the controller removed its own: the phase Terminating stays visible.
func TestForegroundDeletionShowsTerminating(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "foreground")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, app)
	if err := env.Client.Delete(ctx, app, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, app); err != nil {
			return err
		}
		if app.Status.Phase != v1alpha1.MyAppTerminating || controllerutilContains(app.Finalizers, v1alpha1.MyAppFinalizer) {
			return fmt.Errorf("phase %q finalizers %v, want Terminating without %s", app.Status.Phase, app.Finalizers, v1alpha1.MyAppFinalizer)
		}
		return nil
	})
}

func TestHandChangesAreRevertedOrKept(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "hands")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)

	// Someone edits a field myapp owns, and adds a label and an annotation of their own.
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "evil:latest"
	d.Labels["team"] = "blue"
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations["other-tool/checked"] = "yes"
	if err := env.Client.Patch(ctx, d, patch, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != app.Spec.Image {
			return fmt.Errorf("image %q, want it put back to %q", got, app.Spec.Image)
		}
		return nil
	})
	if d.Labels["team"] != "blue" || d.Annotations["other-tool/checked"] != "yes" {
		t.Errorf("someone else's label or annotation was lost: labels %v annotations %v", d.Labels, d.Annotations)
	}
}

// TestDeletedObjectsAreMadeAgain: myapp caches neither its Deployments nor its Services, and
// still notices at once (through its metadata-only watch of them, not a periodic resync) when
// one is deleted, and makes it again.
func TestDeletedObjectsAreMadeAgain(t *testing.T) {
	env.StartManager(t, "--controllers=myapp", "--resync-interval=0")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "deleted")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitConverged(t, app)
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		obj.SetNamespace(app.Namespace)
		obj.SetName(app.Name)
		if err := get(t, obj); err != nil {
			t.Fatal(err)
		}
		uid := obj.GetUID()
		// No garbage collector in envtest: the owner reference does not keep the object.
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, timeout, func() error {
			if err := get(t, obj); err != nil {
				return err
			}
			if obj.GetUID() == uid {
				return fmt.Errorf("%T not deleted yet", obj)
			}
			if !metav1.IsControlledBy(obj, app) {
				return fmt.Errorf("%T made again is not controlled by the MyApp", obj)
			}
			return nil
		})
	}
}

// TestShardLabelsAreCopied: in a shard (--watch-label-selector), myapp labels the Deployment
// and the Service with the MyApp's values of the labels the selector names, so that they fall in
// the MyApp's shard, and not the Pods, so that moving a MyApp between shards rolls nothing.
// Moving the MyApp to the shard of unlabelled objects takes the label off them again.
func TestShardLabelsAreCopied(t *testing.T) {
	const key = "sharding.fluxcd.io/key"
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	env.StartManager(t, "--controllers=myapp", "--watch-namespaces="+ns, "--watch-label-selector="+key+"=shard1")
	app := newMyApp(ns, "sharded")
	app.Labels = map[string]string{key: "shard1", "team": "blue"}
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app.Name}}
	if err := get(t, s); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{d, s} {
		if got := obj.GetLabels()[key]; got != "shard1" {
			t.Errorf("%T labelled %s=%q, want shard1", obj, key, got)
		}
		if _, ok := obj.GetLabels()["team"]; ok {
			t.Errorf("%T has the MyApp's label team, which the selector does not name", obj)
		}
	}
	if _, ok := d.Spec.Template.Labels[key]; ok {
		t.Errorf("the Pod template has the shard label: moving the MyApp to another shard would roll its Pods")
	}

	// Moved to the shard of unlabelled objects, which a manager with "!key" runs.
	env.StartManager(t, "--controllers=myapp", "--watch-namespaces="+ns, "--watch-label-selector=!"+key)
	patch := client.MergeFrom(app.DeepCopy())
	delete(app.Labels, key)
	if err := env.Client.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	generation := d.Generation
	testenv.Eventually(t, timeout, func() error {
		for _, obj := range []client.Object{d, s} {
			if err := get(t, obj); err != nil {
				return err
			}
			if value, ok := obj.GetLabels()[key]; ok {
				return fmt.Errorf("%T still labelled %s=%s", obj, key, value)
			}
		}
		return nil
	})
	if d.Generation != generation {
		t.Errorf("the Deployment's generation went from %d to %d: its spec changed with its shard", generation, d.Generation)
	}
}

func TestNameConflictBlocksWithoutTakeover(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "other:1"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	app := newMyApp(ns, "taken")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		if err := get(t, app); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(app.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1alpha1.ReasonDeploymentConflict {
			return fmt.Errorf("Ready = %+v, want False %s", ready, v1alpha1.ReasonDeploymentConflict)
		}
		if app.Status.Phase != v1alpha1.MyAppFailed {
			return fmt.Errorf("phase %q, want Failed", app.Status.Phase)
		}
		return nil
	})
	testenv.Eventually(t, timeout, func() error {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == v1alpha1.ReasonDeploymentConflict && e.Regarding.Name == app.Name && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no %s warning Event among %d events", v1alpha1.ReasonDeploymentConflict, len(list.Items))
	})
	if err := get(t, foreign); err != nil {
		t.Fatal(err)
	}
	if len(foreign.OwnerReferences) != 0 || foreign.Spec.Template.Spec.Containers[0].Image != "other:1" {
		t.Errorf("the foreign Deployment was taken over: owners %v image %q", foreign.OwnerReferences, foreign.Spec.Template.Spec.Containers[0].Image)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}}
	if err := get(t, svc); !apierrors.IsNotFound(err) {
		t.Errorf("a Service was created for a blocked MyApp: %v", err)
	}
}

func TestInvalidMyAppsAreRejected(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "myapp-")
	for _, tc := range []struct {
		name      string
		spec      string
		wantField string
	}{
		{"no image", `{"replicas": 1}`, "spec.image"},
		{"uppercase path", `{"image": "Team/App:1"}`, "spec.image"},
		{"space in image", `{"image": "nginx 1.27"}`, "spec.image"},
		{"bad digest", `{"image": "nginx@sha256:xyz"}`, "spec.image"},
		{"replicas 0", `{"image": "nginx:1.27", "replicas": 0}`, "spec.replicas"},
		{"replicas 101", `{"image": "nginx:1.27", "replicas": 101}`, "spec.replicas"},
		{"port 0", `{"image": "nginx:1.27", "port": 0}`, "spec.port"},
		{"port 70000", `{"image": "nginx:1.27", "port": 70000}`, "spec.port"},
		{"replicas a string", `{"image": "nginx:1.27", "replicas": "three"}`, "spec.replicas"},
		{"env not a map", `{"image": "nginx:1.27", "env": ["A=1"]}`, "spec.env"},
		{"bad env name", `{"image": "nginx:1.27", "env": {"1A": "x"}}`, "spec.env"},
		{"bad configmap name", `{"image": "nginx:1.27", "envFrom": [{"configMapName": "Not_A_Name"}]}`, "spec.envFrom[0].configMapName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := createRaw(ctx, ns, "bad", tc.spec)
			if err == nil {
				t.Fatalf("accepted %s", tc.spec)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("error is not Invalid or BadRequest: %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error does not name %s: %v", tc.wantField, err)
			}
		})
	}
	for _, image := range []string{"nginx:1.27", "nginx", "registry:5000/team/app@sha256:" + strings.Repeat("a", 64),
		"registry.example.com/a/b/c:v1.2.3-rc.1", "localhost:5000/app:latest@sha256:" + strings.Repeat("0", 64)} {
		t.Run("accepts "+image, func(t *testing.T) {
			if err := createRaw(ctx, ns, "", fmt.Sprintf(`{"image": %q}`, image)); err != nil {
				t.Errorf("rejected %s: %v", image, err)
			}
		})
	}
}

// createRaw creates a MyApp from a raw JSON spec, so that wrong types reach the API server.
func createRaw(ctx context.Context, ns, name, spec string) error {
	meta := fmt.Sprintf(`{"namespace": %q, "generateName": "raw-"}`, ns)
	if name != "" {
		meta = fmt.Sprintf(`{"namespace": %q, "name": %q}`, ns, name)
	}
	body := fmt.Sprintf(`{"apiVersion": "app.example.com/v1alpha1", "kind": "MyApp", "metadata": %s, "spec": %s}`, meta, spec)
	cs, err := env.Clientset()
	if err != nil {
		return err
	}
	return cs.RESTClient().Post().AbsPath("/apis/app.example.com/v1alpha1/namespaces", ns, "myapps").
		Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx).Error()
}
