// Package v1alpha1 holds the app.example.com/v1alpha1 API: MyApp, which the myapp controller turns
// into a Deployment and a Service, and VerticalScaler, which sizes a Deployment it does not own,
// with VerticalScalerCheckpoint, the usage history behind a VerticalScaler's recommendation.
//
// The package imports nothing of Switchboard's own, so that any client can use the types.
//
// +kubebuilder:object:generate=true
// +groupName=app.example.com
package v1alpha1
