package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Outcome is what Write did.
type Outcome string

// The outcomes of Write.
const (
	// Unchanged: the live object already had what the field manager wants; nothing was sent.
	Unchanged Outcome = ""
	// Created: the object did not exist and was created.
	Created Outcome = "created"
	// Updated: the object was changed with server-side apply.
	Updated Outcome = "updated"
)

// Write brings what fieldManager writes of an object to desired, with the fewest and cheapest
// requests that keep server-side apply's ownership rules, and returns what it did; when it sent
// something, into (an empty object of desired's kind) holds the API server's answer.
//
//   - A new object is created with a plain create under fieldManager: a create costs the API
//     server less than an apply (README, Performance). The API server records the fields as
//     fieldManager's, through an Update entry of its managed fields.
//   - An object on which fieldManager has applied before is compared with what it owns, as
//     IfChanged does.
//   - An object fieldManager created is left alone while it still holds every value of desired
//     and fieldManager's wishes cannot have shrunk (specChanged false: the caller's spec did
//     not change since fieldManager last wrote it in full). Otherwise fieldManager's Update entry
//     first becomes an Apply entry (client-go's csaupgrade, one patch guarded by the
//     resourceVersion), so that the apply that follows removes what fieldManager no longer
//     wants, as if it had applied from the start. The fields the API server defaulted at
//     creation come along in that entry; the apply drops them and the API server defaults them
//     again to the same values.
//
// Fields other managers own are never sent, so they survive every path.
func Write(ctx context.Context, c client.Client, fieldManager string, live client.Object, specChanged bool,
	extract func(client.Object) (runtime.ApplyConfiguration, error), desired Object, into client.Object) (Outcome, error) {
	if live == nil {
		if err := create(ctx, c, fieldManager, desired, into); err != nil {
			return Unchanged, err
		}
		return Created, nil
	}
	var owned runtime.ApplyConfiguration
	switch {
	case hasEntry(live, fieldManager, metav1.ManagedFieldsOperationApply):
		extracted, err := extract(live)
		if err != nil {
			return Unchanged, fmt.Errorf("reading the fields %s owns: %w", fieldManager, err)
		}
		owned = extracted
	case hasEntry(live, fieldManager, metav1.ManagedFieldsOperationUpdate):
		if !specChanged {
			holds, err := holds(live, desired)
			if err != nil {
				return Unchanged, err
			}
			if holds {
				return Unchanged, nil
			}
		}
		if err := adopt(ctx, c, fieldManager, live); err != nil {
			return Unchanged, err
		}
	}
	sent, err := IfChanged(ctx, c, fieldManager, owned, desired, into)
	if err != nil || !sent {
		return Unchanged, err
	}
	return Updated, nil
}

// create creates desired as into under fieldManager.
func create(ctx context.Context, c client.Client, fieldManager string, desired Object, into client.Object) error {
	data, err := json.Marshal(desired)
	if err != nil {
		return fmt.Errorf("encoding the object to create: %w", err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decoding the object to create: %w", err)
	}
	logf.FromContext(ctx).V(1).Info("Creating", "fieldManager", fieldManager)
	if err := c.Create(ctx, into, client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("creating as %s: %w", fieldManager, err)
	}
	return nil
}

// adopt turns fieldManager's Update entry of live's managed fields into its Apply entry.
func adopt(ctx context.Context, c client.Client, fieldManager string, live client.Object) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(fieldManager), fieldManager)
	if err != nil {
		return fmt.Errorf("moving the fields %s created to server-side apply: %w", fieldManager, err)
	}
	if patch == nil {
		return nil
	}
	logf.FromContext(ctx).V(1).Info("Moving created fields to server-side apply", "fieldManager", fieldManager)
	if err := c.Patch(ctx, live.DeepCopyObject().(client.Object), client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("moving the fields %s created to server-side apply: %w", fieldManager, err)
	}
	return nil
}

// hasEntry says whether live's managed fields have an entry of fieldManager for operation on
// the object itself (not a subresource).
func hasEntry(live client.Object, fieldManager string, operation metav1.ManagedFieldsOperationType) bool {
	for _, entry := range live.GetManagedFields() {
		if entry.Manager == fieldManager && entry.Operation == operation && entry.Subresource == "" {
			return true
		}
	}
	return false
}

// typeConverter knows the schema of the built-in kinds; building it parses their schemas, once.
var typeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// holds says whether live already holds every value of desired: whether applying desired onto
// live, with server-side apply's merge rules (lists merged by their keys, atomic values
// replaced), would leave it as it is.
func holds(live client.Object, desired Object) (bool, error) {
	data, err := json.Marshal(desired)
	if err != nil {
		return false, fmt.Errorf("encoding the desired object: %w", err)
	}
	wanted := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &wanted.Object); err != nil {
		return false, fmt.Errorf("decoding the desired object: %w", err)
	}
	desiredValue, err := typeConverter().ObjectToTyped(wanted)
	if err != nil {
		return false, fmt.Errorf("typing the desired object: %w", err)
	}
	current := live.DeepCopyObject().(client.Object)
	current.GetObjectKind().SetGroupVersionKind(wanted.GroupVersionKind())
	current.SetManagedFields(nil)
	liveValue, err := typeConverter().ObjectToTyped(current)
	if err != nil {
		return false, fmt.Errorf("typing the live object: %w", err)
	}
	merged, err := liveValue.Merge(desiredValue)
	if err != nil {
		return false, fmt.Errorf("merging the desired object into the live one: %w", err)
	}
	comparison, err := liveValue.Compare(merged)
	if err != nil {
		return false, fmt.Errorf("comparing the live object with the merge: %w", err)
	}
	return comparison.IsSame(), nil
}
