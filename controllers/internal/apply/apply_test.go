package apply

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// sentPatch is what IfChanged asked the client to send.
type sentPatch struct {
	Namespace, Name string
	Type            types.PatchType
	FieldManager    string
	Force           bool
	FieldValidation string
}

func TestIfChangedSendsOnlyAChangeAsAStrictFreeApply(t *testing.T) {
	ctx := context.Background()
	var sent []sentPatch
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			o := (&client.PatchOptions{}).ApplyOptions(opts)
			sent = append(sent, sentPatch{Namespace: obj.GetNamespace(), Name: obj.GetName(), Type: patch.Type(),
				FieldManager: o.FieldManager, Force: o.Force != nil && *o.Force, FieldValidation: o.FieldValidation})
			// The API server answers with the object it stored.
			obj.(*appsv1.Deployment).Spec.Replicas = new(int32(3))
			return nil
		},
	}).Build()
	desired := appsv1ac.Deployment("web", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))

	same := appsv1ac.Deployment("web", "ns").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
	if changed, err := IfChanged(ctx, c, "me", same, desired, &appsv1.Deployment{}); err != nil || changed {
		t.Fatalf("owned equals desired: changed %v, err %v; want nothing sent", changed, err)
	}
	into := &appsv1.Deployment{}
	changed, err := IfChanged(ctx, c, "me", nil, desired, into)
	if err != nil || !changed {
		t.Fatalf("new object: changed %v, err %v; want an apply", changed, err)
	}
	want := []sentPatch{{Namespace: "ns", Name: "web", Type: types.ApplyPatchType, FieldManager: "me", Force: true,
		FieldValidation: metav1.FieldValidationIgnore}}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("patches sent (-want +got):\n%s", diff)
	}
	if into.Spec.Replicas == nil || *into.Spec.Replicas != 3 {
		t.Errorf("into = %+v, want the API server's answer", into.Spec)
	}
}
