package localcluster

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/internal/manifests"
)

// Apply creates or updates the objects of docs (YAML documents separated by "---", or JSON)
// by server-side apply under fieldManager, in order. An object of a namespaced kind
// without a namespace goes to "default", as kubectl would put it with the default context.
func (c *Cluster) Apply(ctx context.Context, fieldManager string, docs []byte) error {
	objs, err := manifests.Decode(docs)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		namespaced, err := c.Client.IsObjectNamespaced(obj)
		if err != nil {
			return fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}
