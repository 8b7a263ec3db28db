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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/controllers/internal/compare"
)

// Object is an apply configuration of a named object: every typed apply configuration of
// client-go is one.
type Object interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
}

// IfChanged applies desired under fieldManager with forced ownership unless owned (what
// fieldManager owns on the live object; nil when the object does not exist) already equals
// desired. It reports whether it sent an apply; when it did, into (an empty object of desired's
// kind) holds the object the API server returned, so that the caller sees the result of its write
// without reading it again. The diff is logged at debug level.
//
// The apply is sent as JSON with field validation off (fieldValidation=Ignore): desired is a
// typed apply configuration, so it can hold neither an unknown nor a duplicate field, and the
// API server's strict decoding of the body for its default validation is a second full decode of
// every apply (README, Performance, has what it costs).
func IfChanged(ctx context.Context, c client.Client, fieldManager string, owned runtime.ApplyConfiguration, desired Object, into client.Object) (bool, error) {
	if owned != nil && equality.Semantic.DeepEqual(owned, desired) {
		return false, nil
	}
	log := logf.FromContext(ctx)
	if log.V(1).Enabled() {
		log.V(1).Info("Applying", "fieldManager", fieldManager, "diff", cmp.Diff(owned, desired, compare.Quantities))
	}
	body, err := json.Marshal(desired)
	if err != nil {
		return false, fmt.Errorf("encoding the apply configuration: %w", err)
	}
	if name := desired.GetName(); name != nil {
		into.SetName(*name)
	}
	if namespace := desired.GetNamespace(); namespace != nil {
		into.SetNamespace(*namespace)
	}
	err = c.Patch(ctx, into, client.RawPatch(types.ApplyPatchType, body),
		client.FieldOwner(fieldManager), client.ForceOwnership, client.FieldValidation(metav1.FieldValidationIgnore))
	if err != nil {
		return false, fmt.Errorf("applying as %s: %w", fieldManager, err)
	}
	return true, nil
}
