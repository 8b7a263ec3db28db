package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/internal/testenv"
)

// installPodResourcesPolicy creates the verticalscaler component's MutatingAdmissionPolicy and
// its binding from file, as `kubectl apply -k config/default` or the chart installs them: the
// policy is what sizes the Pods that replace evicted ones, as the VPA's admission controller
// does, and what the admission-controller suite's specs check.
func installPodResourcesPolicy(ctx context.Context, c client.Client, file string) error {
	policy, binding, err := testenv.ReadAdmissionPolicy(file)
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing %s %s of %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), file, err)
		}
	}
	return nil
}
