package testenv

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// What the supported Kubernetes minors differ in, for the tests that check a feature only some
// of them have (`make test K8S_VERSION=1.34` runs the envtest suites on that minor, `make
// test-e2e K8S_VERSION=...` the end-to-end tests).

// ServesAdmissionPolicies says whether the API server of cfg serves MutatingAdmissionPolicy
// v1, which the shipped admission policies are: Kubernetes 1.36 and later.
func ServesAdmissionPolicies(t testing.TB, cfg *rest.Config) bool {
	t.Helper()
	list, err := discoveryOf(t, cfg).ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatalf("reading the API server's discovery: %v", err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "mutatingadmissionpolicies" })
}

// ServerMinor is the API server's minor version, 37 for Kubernetes 1.37.2.
func ServerMinor(t testing.TB, cfg *rest.Config) int {
	t.Helper()
	info, err := discoveryOf(t, cfg).ServerVersion()
	if err != nil {
		t.Fatalf("reading the API server's version: %v", err)
	}
	minor, err := strconv.Atoi(strings.TrimSuffix(info.Minor, "+"))
	if err != nil {
		t.Fatalf("the API server's minor version %q: %v", info.Minor, err)
	}
	return minor
}

// NeedsAdmissionPolicies skips the test on an API server that serves no MutatingAdmissionPolicy
// v1, saying why: what the test checks happens only where an admission policy sizes new Pods.
func NeedsAdmissionPolicies(t testing.TB, cfg *rest.Config, why string) {
	t.Helper()
	if !ServesAdmissionPolicies(t, cfg) {
		t.Skipf("the API server serves no MutatingAdmissionPolicy v1 (Kubernetes before 1.36): %s", why)
	}
}

// discoveryOf is a discovery client of cfg.
func discoveryOf(t testing.TB, cfg *rest.Config) *discovery.DiscoveryClient {
	t.Helper()
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
