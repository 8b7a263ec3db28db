// Package apifeatures finds which of the optional APIs the controllers use the API server does
// not serve, so that a controller does without them openly on the Kubernetes minors that lack
// them (1.34 and 1.35 serve no MutatingAdmissionPolicy unless turned on) or on a cluster that
// turned them off.
package apifeatures

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// The features, as the switchboard_api_fallback metric and the start's log name them.
const (
	// MutatingAdmissionPolicy is admissionregistration.k8s.io's MutatingAdmissionPolicy, v1 from
	// Kubernetes 1.36 or v1beta1 where turned on: the shipped admission policies need it.
	MutatingAdmissionPolicy = "MutatingAdmissionPolicy"
	// PodResize is the Pod's resize subresource, through which the kubelet changes a running
	// Pod's resources in place.
	PodResize = "PodResize"
)

// Missing are the optional APIs the API server does not serve. The zero value is a server that
// serves them all, as Kubernetes 1.36 and later do by default.
type Missing struct {
	// MutatingAdmissionPolicy: no version of MutatingAdmissionPolicy is served, so none of the
	// shipped admission policies can be installed.
	MutatingAdmissionPolicy bool
	// PodResize: pods/resize is not served, so running Pods cannot be resized in place.
	PodResize bool
}

// AllMissing is a server that serves none of the optional APIs: what a controller could do
// without, all at once.
var AllMissing = Missing{MutatingAdmissionPolicy: true, PodResize: true}

// Discover reads from d which optional APIs the API server does not serve. An error is one
// discovery returned other than 404.
func Discover(d discovery.DiscoveryInterface) (Missing, error) {
	var m Missing
	var served bool
	var err error
	for _, groupVersion := range []string{"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1"} {
		if served, err = Serves(d, groupVersion, named("mutatingadmissionpolicies")); err != nil || served {
			break
		}
	}
	if err != nil {
		return Missing{}, err
	}
	m.MutatingAdmissionPolicy = !served
	if served, err = Serves(d, "v1", named("pods/resize")); err != nil {
		return Missing{}, err
	}
	m.PodResize = !served
	return m, nil
}

// Serves tells whether the API server serves, in groupVersion, a resource that match accepts:
// none when it serves no groupVersion at all. Its error wraps the API server's, for
// transient.Retry to read.
func Serves(d discovery.DiscoveryInterface, groupVersion string, match func(metav1.APIResource) bool) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the API server's discovery of %s: %w", groupVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, match), nil
}

// named matches the resource (or subresource, "pods/resize") of that name.
func named(resource string) func(metav1.APIResource) bool {
	return func(r metav1.APIResource) bool { return r.Name == resource }
}
