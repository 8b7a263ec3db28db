package status

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/example/switchboard/apis/v1alpha1"
)

func TestUpdateWritesOnlyAChange(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vs"}}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vs).WithStatusSubresource(vs).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	get := func() *v1alpha1.VerticalScaler {
		t.Helper()
		out := &v1alpha1.VerticalScaler{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(vs), out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	rec := func(cpu string) *v1alpha1.Recommendation {
		return &v1alpha1.Recommendation{DeploymentName: "web", ContainerRecommendations: []v1alpha1.ContainerRecommendation{
			{ContainerName: "app", Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	}

	obj := get()
	if err := Update(ctx, c, obj, func() { obj.Status.ObservedGeneration = 3; obj.Status.Recommendation = rec("1") }); err != nil {
		t.Fatal(err)
	}
	if writes != 1 || get().Status.ObservedGeneration != 3 {
		t.Fatalf("a changed status: %d writes, stored generation %d; want 1 write of 3", writes, get().Status.ObservedGeneration)
	}
	// The same status, with a quantity spelled another way, is no change.
	obj = get()
	if err := Update(ctx, c, obj, func() { obj.Status.ObservedGeneration = 3; obj.Status.Recommendation = rec("1000m") }); err != nil {
		t.Fatal(err)
	}
	if writes != 1 {
		t.Errorf("an equal status was written: %d writes", writes)
	}
}
