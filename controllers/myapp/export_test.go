package myapp

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// CreatedStatus is the status myapp writes in the reconcile that created d for app.
func CreatedStatus(app *v1alpha1.MyApp, d *appsv1.Deployment) v1alpha1.MyAppStatus {
	return computeStatus(app, observation{deployment: d, applied: true})
}
