package myapp_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/controllers/myapp"
)

// entries lists obj's managed-fields entries of the object itself as "manager/operation".
func entries(obj client.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		if e.Subresource == "" {
			out = append(out, e.Manager+"/"+string(e.Operation))
		}
	}
	return out
}

// TestCreatedThenChangedKeepsOtherManagersFields: myapp creates its Deployment and Service with
// plain creates (cheaper for the API server than applies), so the API server records myapp's
// fields in an Update entry. Other controllers then apply their own fields to the Deployment.
// When the MyApp's spec changes, myapp takes its fields over into server-side apply and applies:
// what it no longer wants (an env var, the old port) goes, what it wants changes, and what the
// other field managers own stays.
func TestCreatedThenChangedKeepsOtherManagersFields(t *testing.T) {
	env.StartManager(t, "--controllers=myapp")
	ctx := context.Background()
	app := newMyApp(env.Namespace(t, "myapp-"), "owners")
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	d := waitConverged(t, app)
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), svc); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{d, svc} {
		if diff := cmp.Diff([]string{"myapp/Update"}, entries(obj)); diff != "" {
			t.Errorf("%T created with (-want +got):\n%s", obj, diff)
		}
	}

	// The verticalscaler's requests and the configmapwatcher's Pod template annotation, each
	// applied under its own field manager, as those controllers do.
	resources := appsv1ac.Deployment(d.Name, d.Namespace).WithSpec(appsv1ac.DeploymentSpec().WithTemplate(
		corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName(myapp.ContainerName).
			WithResources(corev1ac.ResourceRequirements().WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}))))))
	if err := env.Client.Apply(ctx, resources, client.FieldOwner("verticalscaler"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	hash := appsv1ac.Deployment(d.Name, d.Namespace).WithSpec(appsv1ac.DeploymentSpec().WithTemplate(
		corev1ac.PodTemplateSpec().WithAnnotations(map[string]string{"app.example.com/config-hash": "abc"})))
	if err := env.Client.Apply(ctx, hash, client.FieldOwner("configmapwatcher"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}

	// Drop env B, change A and the port. A patch: the controller may be writing status.
	patch := client.MergeFrom(app.DeepCopy())
	app.Spec.Env = map[string]string{"A": "changed"}
	app.Spec.Port = 8081
	if err := env.Client.Patch(ctx, app, patch); err != nil {
		t.Fatal(err)
	}
	d = waitConverged(t, app)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(app), svc); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "A", Value: "changed"}}, c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	wantPorts := []corev1.ContainerPort{{Name: "http", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}}
	if diff := cmp.Diff(wantPorts, c.Ports); diff != "" {
		t.Errorf("container ports (-want +got):\n%s", diff)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8081 {
		t.Errorf("Service ports = %+v, want only 8081", svc.Spec.Ports)
	}
	if got := c.Resources.Requests.Cpu().String(); got != "250m" {
		t.Errorf("the verticalscaler's CPU request = %s, want 250m kept", got)
	}
	if got := d.Spec.Template.Annotations["app.example.com/config-hash"]; got != "abc" {
		t.Errorf("the configmapwatcher's annotation = %q, want abc kept", got)
	}
	wantEntries := []string{"configmapwatcher/Apply", "myapp/Apply", "verticalscaler/Apply"}
	got := entries(d)
	slices.Sort(got)
	if diff := cmp.Diff(wantEntries, got); diff != "" {
		t.Errorf("Deployment managed by (-want +got):\n%s", diff)
	}
	if d.Spec.ProgressDeadlineSeconds == nil || d.Spec.RevisionHistoryLimit == nil || d.Spec.Strategy.Type == "" {
		t.Errorf("a default the API server set at creation is gone: %+v", d.Spec)
	}
}
