// Package apply writes objects with server-side apply only when the write would change
// something, so that a reconcile with nothing to do sends nothing to the API server.
//
// The comparison is between the apply configuration a controller wants to send and what its
// field manager already owns on the live object, read back from managedFields with client-go's
// Extract helpers. Fields owned by other managers (a label added by hand, the resources of
// another controller) are neither compared nor sent, so they survive.
package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/controllers/internal/compare"
)

// IfChanged applies desired under fieldManager with forced ownership unless owned (what
// fieldManager owns on the live object; nil when the object does not exist) already equals
// desired. It reports whether it sent an apply; when it did, desired now holds the object the
// API server returned (see Decode). The diff is logged at debug level.
func IfChanged(ctx context.Context, c client.Client, fieldManager string, owned, desired runtime.ApplyConfiguration) (bool, error) {
	if owned != nil && equality.Semantic.DeepEqual(owned, desired) {
		return false, nil
	}
	log := logf.FromContext(ctx)
	if log.V(1).Enabled() {
		log.V(1).Info("Applying", "fieldManager", fieldManager, "diff", cmp.Diff(owned, desired, compare.Quantities))
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying as %s: %w", fieldManager, err)
	}
	return true, nil
}

// Decode turns an apply configuration that IfChanged sent, and that now holds the API server's
// response, into the typed object, so that the caller sees the result of its write without
// reading it again.
func Decode(applied runtime.ApplyConfiguration, obj client.Object) error {
	data, err := json.Marshal(applied)
	if err != nil {
		return fmt.Errorf("encoding the applied object: %w", err)
	}
	if err := json.Unmarshal(data, obj); err != nil {
		return fmt.Errorf("decoding the applied object: %w", err)
	}
	return nil
}
