package testenv

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
)

// MyAppsConverged returns nil once the MyApps of ns are n, each with its generation observed
// in status, and otherwise says how many are: the check the e2e tests and the benchmarks wait
// on after creating MyApps.
func MyAppsConverged(ctx context.Context, c client.Reader, ns string, n int) error {
	var apps v1alpha1.MyAppList
	if err := c.List(ctx, &apps, client.InNamespace(ns)); err != nil {
		return err
	}
	done := 0
	for _, app := range apps.Items {
		if app.Status.ObservedGeneration == app.Generation {
			done++
		}
	}
	if done != n {
		return fmt.Errorf("%d of %d MyApps converged", done, n)
	}
	return nil
}
