package helm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/internal/manifests"
	"github.com/example/switchboard/internal/testenv"
	helmsdk "github.com/example/switchboard/test/helm/internal/render"
)

// admissionPolicies are the chart's two MutatingAdmissionPolicies and their bindings, of a
// release named switchboard.
var admissionPolicies = []string{
	"MutatingAdmissionPolicy switchboard-myapp-finalizer",
	"MutatingAdmissionPolicy switchboard-verticalscaler-pod-resources",
	"MutatingAdmissionPolicyBinding switchboard-myapp-finalizer",
	"MutatingAdmissionPolicyBinding switchboard-verticalscaler-pod-resources",
}

// kubeVersion is chartutil.KubeVersion for "1.MINOR.0".
func kubeVersion(minor int) *chartutil.KubeVersion {
	return &chartutil.KubeVersion{Version: fmt.Sprintf("v1.%d.0", minor), Major: "1", Minor: fmt.Sprint(minor)}
}

// renderNotes renders the chart with values for cluster k and returns its manifests and notes.
func renderNotes(t *testing.T, values string, k helmsdk.Cluster) helmsdk.Rendered {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("the test's values: %v", err)
	}
	r, err := helmsdk.InstallFor(loadChart(t), releaseName, namespace, vals, k)
	if err != nil {
		t.Fatalf("rendering for Kubernetes %s, API versions %v: %v", k.KubeVersion.Version, k.APIVersions, err)
	}
	return r
}

// renderFor is render for cluster k.
func renderFor(t *testing.T, values string, k helmsdk.Cluster) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Decode([]byte(renderNotes(t, values, k).Manifest))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestAdmissionPoliciesFollowTheCluster: the chart renders its admission policies in the API
// version the cluster serves, and leaves them out, saying so in its notes, where it serves
// none. Installed, Helm lists the cluster's kinds; `helm template` lists none, and the
// policies then follow --kube-version.
func TestAdmissionPoliciesFollowTheCluster(t *testing.T) {
	// A cluster as Helm's discovery lists it: some kinds of the core group and of
	// admissionregistration.k8s.io, with MutatingAdmissionPolicy at the versions given.
	served := func(mapVersions ...string) chartutil.VersionSet {
		set := chartutil.VersionSet{"v1", "v1/ConfigMap", "v1/Pod", "admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"}
		for _, v := range mapVersions {
			set = append(set, "admissionregistration.k8s.io/"+v, "admissionregistration.k8s.io/"+v+"/MutatingAdmissionPolicy", "admissionregistration.k8s.io/"+v+"/MutatingAdmissionPolicyBinding")
		}
		return set
	}
	for _, tc := range []struct {
		name    string
		cluster helmsdk.Cluster
		// want is the policies' apiVersion, empty for none.
		want string
	}{
		{"helm template --kube-version 1.34", helmsdk.Cluster{KubeVersion: kubeVersion(34)}, ""},
		{"helm template --kube-version 1.35", helmsdk.Cluster{KubeVersion: kubeVersion(35)}, ""},
		{"helm template --kube-version 1.36", helmsdk.Cluster{KubeVersion: kubeVersion(36)}, "admissionregistration.k8s.io/v1"},
		{"helm template --kube-version 1.37", helmsdk.Cluster{KubeVersion: kubeVersion(37)}, "admissionregistration.k8s.io/v1"},
		{"helm template --kube-version 1.34 --api-versions admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy",
			helmsdk.Cluster{KubeVersion: kubeVersion(34), APIVersions: chartutil.VersionSet{"admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy"}}, "admissionregistration.k8s.io/v1beta1"},
		{"installed on 1.34 without the feature", helmsdk.Cluster{KubeVersion: kubeVersion(34), APIVersions: served()}, ""},
		{"installed on 1.35 with v1beta1 turned on", helmsdk.Cluster{KubeVersion: kubeVersion(35), APIVersions: served("v1beta1")}, "admissionregistration.k8s.io/v1beta1"},
		{"installed on 1.37", helmsdk.Cluster{KubeVersion: kubeVersion(37), APIVersions: served("v1beta1", "v1")}, "admissionregistration.k8s.io/v1"},
		// A cluster that turned the API off stays without: the version alone does not decide.
		{"installed on 1.37 with the API turned off", helmsdk.Cluster{KubeVersion: kubeVersion(37), APIVersions: served()}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderNotes(t, "", tc.cluster)
			objs, err := manifests.Decode([]byte(r.Manifest))
			if err != nil {
				t.Fatal(err)
			}
			var policies []string
			for _, obj := range objs {
				if strings.HasPrefix(obj.GetKind(), "MutatingAdmissionPolicy") {
					policies = append(policies, obj.GetKind()+" "+obj.GetName())
					if obj.GetAPIVersion() != tc.want {
						t.Errorf("%s %s is %s, want %q", obj.GetKind(), obj.GetName(), obj.GetAPIVersion(), tc.want)
					}
				}
			}
			slices.Sort(policies)
			want := admissionPolicies
			if tc.want == "" {
				want = nil
			}
			if diff := cmp.Diff(want, policies); diff != "" {
				t.Errorf("admission policies (-want +got):\n%s", diff)
			}
			leftOut := strings.Count(r.Notes, "serves no MutatingAdmissionPolicy API")
			if wantLeftOut := map[bool]int{true: 2, false: 0}[tc.want == ""]; leftOut != wantLeftOut {
				t.Errorf("the notes say %d times that a policy was left out, want %d:\n%s", leftOut, wantLeftOut, r.Notes)
			}
		})
	}
}

// TestE2EChartFitsTheCluster renders the chart with its defaults for the API server of
// KUBEBUILDER_ASSETS, as `helm template --kube-version` does and as `helm install` does (with
// the kinds the server lists), and applies each rendering with a server-side dry run: the API
// server accepts every object. `make test-e2e K8S_VERSION=1.34` (and each minor of
// `make test-e2e-matrix`) runs it on that minor.
func TestE2EChartFitsTheCluster(t *testing.T) {
	if os.Getenv("SWITCHBOARD_E2E") != "1" {
		t.Skip("needs an API server (SWITCHBOARD_E2E=1, KUBEBUILDER_ASSETS): run `make test-e2e`")
	}
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	served, err := action.GetVersionSet(dc)
	if err != nil {
		t.Fatal(err)
	}
	version := &chartutil.KubeVersion{Version: info.GitVersion, Major: info.Major, Minor: info.Minor}
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]helmsdk.Cluster{
		"helm template --kube-version " + info.GitVersion: {KubeVersion: version},
		"helm install on " + info.GitVersion:              {KubeVersion: version, APIVersions: served},
	} {
		t.Run(name, func(t *testing.T) {
			for _, obj := range renderFor(t, "", k) {
				if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.DryRunAll, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
					t.Errorf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}
