package apifeatures

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// resources is a discovery document of one group version.
func resources(groupVersion string, names ...string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: groupVersion}
	for _, name := range names {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: name})
	}
	return list
}

func TestDiscover(t *testing.T) {
	core := resources("v1", "pods", "pods/status", "pods/resize", "configmaps")
	coreWithoutResize := resources("v1", "pods", "pods/status", "configmaps")
	for _, tc := range []struct {
		name      string
		resources []*metav1.APIResourceList
		want      Missing
	}{
		{"1.37: MutatingAdmissionPolicy v1 and pods/resize", []*metav1.APIResourceList{core,
			resources("admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "validatingadmissionpolicies"),
			resources("admissionregistration.k8s.io/v1beta1", "mutatingadmissionpolicies")}, Missing{}},
		{"1.35 with v1beta1 turned on", []*metav1.APIResourceList{core,
			resources("admissionregistration.k8s.io/v1", "validatingadmissionpolicies"),
			resources("admissionregistration.k8s.io/v1beta1", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings")}, Missing{}},
		{"1.34 by default", []*metav1.APIResourceList{core,
			resources("admissionregistration.k8s.io/v1", "validatingadmissionpolicies")}, Missing{MutatingAdmissionPolicy: true}},
		{"in-place resize turned off", []*metav1.APIResourceList{coreWithoutResize,
			resources("admissionregistration.k8s.io/v1", "mutatingadmissionpolicies")}, Missing{PodResize: true}},
		{"neither", []*metav1.APIResourceList{coreWithoutResize}, Missing{MutatingAdmissionPolicy: true, PodResize: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.resources}}
			got, err := Discover(d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiscoverFails: an answer other than 404 is an error, not a missing feature.
func TestDiscoverFails(t *testing.T) {
	fake := &clienttesting.Fake{}
	fake.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	d := &discoveryfake.FakeDiscovery{Fake: fake}
	if m, err := Discover(d); err == nil {
		t.Errorf("Discover on a failing API server = %+v, nil; want an error", m)
	}
}
