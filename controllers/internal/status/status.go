// Package status is the one status writer of every controller: it writes an object's status
// only when a reconcile changed it, so that a steady state writes nothing.
package status

import (
	"context"
	"fmt"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/controllers/internal/compare"
)

// Update sets obj's status with set, then writes it through the status subresource with a
// merge patch against obj as it was, unless set changed nothing. Equality is
// apimachinery's semantic equality (quantities by value, times by instant), the one the API
// machinery itself uses. The diff is logged at debug level.
func Update(ctx context.Context, c client.Client, obj client.Object, set func()) error {
	before := obj.DeepCopyObject().(client.Object)
	set()
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	log := logf.FromContext(ctx)
	if log.V(1).Enabled() {
		log.V(1).Info("Updating status", "diff", cmp.Diff(before, obj, compare.Quantities))
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}
