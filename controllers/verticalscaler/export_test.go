package verticalscaler

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MapDeployment lets the external test package call the map function.
func (r *Reconciler) MapDeployment(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.verticalScalersFor(ctx, obj)
}
