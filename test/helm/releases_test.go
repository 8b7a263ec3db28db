package helm_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/testenv"
)

// release is one release of a test that installs several.
type release struct {
	name, namespace, values string
}

// releaseNames is what must be unique to a release, as one rendering of it shows.
type releaseNames struct {
	// objects are its objects, "kind namespace/name" (no namespace for cluster-scoped ones).
	objects map[string]bool
	// leases are the Leases its managers may hold, "namespace/name".
	leases map[string]bool
	// dashboards are the Grafana dashboards' uids, and the keys of their ConfigMaps, "namespace/key",
	// which Grafana's sidecar writes to files of that name.
	dashboards, dashboardKeys map[string]bool
	// pods are the labels of its managers' Pods, and selectors what its Deployments, metrics
	// Service and PodDisruptionBudgets select, each named by its object.
	pods, selectors map[string]labels.Set
}

// namesOf renders r and returns what must be unique to it. It checks on the way that each
// manager's Leases are the ones its leader election Role names, and that a manager moving from
// the fixed Lease names waits for its own Deployment's Pods and may read and delete those
// Leases.
func namesOf(t *testing.T, r release) releaseNames {
	t.Helper()
	objs, err := installRelease(t, r.name, r.namespace, r.values)
	if err != nil {
		t.Fatalf("installing %s in %s: %v", r.name, r.namespace, err)
	}
	names := releaseNames{objects: map[string]bool{}, leases: map[string]bool{}, dashboards: map[string]bool{}, dashboardKeys: map[string]bool{},
		pods: map[string]labels.Set{}, selectors: map[string]labels.Set{}}
	var holding, fixed []string
	var role *rbacv1.Role
	for _, obj := range objs {
		names.objects[key(obj)] = true
		switch {
		case obj.GetKind() == "Service":
			selector, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector")
			names.selectors[key(obj)] = selector
		case obj.GetKind() == "PodDisruptionBudget":
			selector, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
			names.selectors[key(obj)] = selector
		case obj.GetKind() == "Deployment":
			d := managerDeployment(t, []*unstructured.Unstructured{obj})
			names.pods[key(obj)] = d.Spec.Template.Labels
			names.selectors[key(obj)] = d.Spec.Selector.MatchLabels
			opts, sel := testenv.ManagerOptions(t, d.Spec.Template.Spec.Containers[0].Args)
			leases := controllers.LeaseNames(sel.Controllers, opts.LeaderElectResourceName)
			holding = append(holding, leases...)
			for _, lease := range leases {
				names.leases[r.namespace+"/"+lease] = true
			}
			if opts.LeaderElectFixedNamesHolderPrefix != "" {
				if want := d.Name + "-"; opts.LeaderElectFixedNamesHolderPrefix != want {
					t.Errorf("%s: Deployment %s waits for the Pods whose names start %q under the fixed Lease names, want its own, %q", r.name, d.Name, opts.LeaderElectFixedNamesHolderPrefix, want)
				}
				fixed = append(fixed, controllers.FixedLeaseNames(sel.Controllers, opts.LeaderElectResourceName)...)
			}
		case obj.GetKind() == "Role" && obj.GetName() == fullname(r.name)+"-leader-election":
			role = &rbacv1.Role{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role); err != nil {
				t.Fatal(err)
			}
		case obj.GetKind() == "ConfigMap" && obj.GetName() == fullname(r.name)+"-grafana-dashboard":
			cm := &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cm); err != nil {
				t.Fatal(err)
			}
			for k, data := range cm.Data {
				names.dashboardKeys[cm.Namespace+"/"+k] = true
				var dashboard struct{ UID string }
				if err := json.Unmarshal([]byte(data), &dashboard); err != nil || dashboard.UID == "" {
					t.Fatalf("%s: dashboard %s: uid %q, %v", r.name, k, dashboard.UID, err)
				}
				names.dashboards[dashboard.UID] = true
			}
		}
	}
	if role == nil {
		t.Fatalf("%s renders no leader election Role", r.name)
	}
	named := map[string][]string{}
	for _, rule := range role.Rules {
		switch {
		case slices.Contains(rule.Verbs, "update"):
			named["hold"] = append(named["hold"], rule.ResourceNames...)
		case slices.Contains(rule.Verbs, "delete"):
			named["fixed"] = append(named["fixed"], rule.ResourceNames...)
		}
	}
	want := map[string][]string{"hold": holding}
	if len(fixed) > 0 {
		want["fixed"] = fixed
	}
	for _, list := range []map[string][]string{want, named} {
		for k := range list {
			slices.Sort(list[k])
			list[k] = slices.Compact(list[k])
		}
	}
	if diff := cmp.Diff(want, named); diff != "" {
		t.Errorf("%s: the Leases its leader election Role names to hold, and to read and delete under the fixed names (-the managers' +the Role's):\n%s", r.name, diff)
	}
	return names
}

// fullname is the chart's fullname of a release with the chart's defaults: the release's name,
// with the chart's unless it has it.
func fullname(release string) string {
	if strings.Contains(release, "switchboard") {
		return release
	}
	return release + "-switchboard"
}

// TestReleasesSideBySide renders two releases of different names and requires that they share
// nothing that must be unique: no object name in one namespace, nor among cluster-scoped
// objects (ClusterRoles and their bindings, admission policies and their bindings), no Lease,
// no Grafana dashboard key or uid, and no Pod that a Deployment, Service or
// PodDisruptionBudget of one selects among the other's. The CRDs are the one exception, as they must be: two
// releases of the same controller share them, and the second installs with crds.install=false.
func TestReleasesSideBySide(t *testing.T) {
	const (
		dashboard = "grafana: {dashboard: {enabled: true, namespace: monitoring}}\n"
		ha        = "replicaCount: 2\nleaderElection: {scope: controller}\npodDisruptionBudget: {enabled: true}\n"
	)
	for _, tc := range []struct {
		name string
		a, b release
		// sharedCRDs are the CRDs both releases render.
		sharedCRDs []string
	}{
		{
			name: "the configmapwatcher and the verticalscaler, one namespace",
			a:    release{"reloader", namespace, dashboard + valuesFile(t, "ci/configmapwatcher-values.yaml")},
			b:    release{"vpa", namespace, dashboard + valuesFile(t, "ci/verticalscaler-values.yaml")},
		},
		{
			name:       "every controller twice, one namespace",
			a:          release{"switchboard", namespace, dashboard},
			b:          release{"team-b", namespace, dashboard},
			sharedCRDs: []string{"myapps.app.example.com", "verticalscalercheckpoints.app.example.com", "verticalscalers.app.example.com"},
		},
		{
			name: "every controller twice, the second without the CRDs, two namespaces",
			a:    release{"team-a", "team-a", dashboard},
			b:    release{"team-b", "team-b", dashboard + "crds: {install: false}"},
		},
		{
			name: "every controller twice, two replicas with a Lease per controller",
			a:    release{"team-a", namespace, ha},
			b:    release{"team-b", namespace, ha + "crds: {install: false}"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := namesOf(t, tc.a), namesOf(t, tc.b)
			var sharedCRDs []string
			for name := range a.objects {
				if !b.objects[name] {
					continue
				}
				if crd, ok := strings.CutPrefix(name, "CustomResourceDefinition /"); ok {
					sharedCRDs = append(sharedCRDs, crd)
					continue
				}
				t.Errorf("both releases render %s", name)
			}
			slices.Sort(sharedCRDs)
			if diff := cmp.Diff(tc.sharedCRDs, sharedCRDs); diff != "" {
				t.Errorf("CRDs both releases render (-want +got):\n%s", diff)
			}
			for what, pair := range map[string][2]map[string]bool{
				"Leases": {a.leases, b.leases}, "dashboard uids": {a.dashboards, b.dashboards}, "dashboard files": {a.dashboardKeys, b.dashboardKeys},
			} {
				if shared := slices.Sorted(maps.Keys(intersect(pair[0], pair[1]))); len(shared) > 0 {
					t.Errorf("%s of both releases: %v", what, shared)
				}
			}
			for _, pair := range [][2]releaseNames{{a, b}, {b, a}} {
				for selecting, selector := range pair[0].selectors {
					for pods, set := range pair[1].pods {
						if labels.SelectorFromSet(selector).Matches(set) {
							t.Errorf("%s selects the Pods of the other release's %s", selecting, pods)
						}
					}
				}
			}
			if len(a.leases) == 0 || len(b.leases) == 0 {
				t.Errorf("Leases %v and %v: want each release's", a.leases, b.leases)
			}
		})
	}
}

// TestLeasesFollowTheRelease: a release's managers elect through Leases named after its
// fullname; the release named switchboard keeps the fixed names (the manager's defaults, as
// config/default's), which are its own already, and so moves no Lease when upgraded; every
// other release waits, while it moves to its own, for its Pods that hold the fixed names.
func TestLeasesFollowTheRelease(t *testing.T) {
	for _, tc := range []struct {
		release, resourceName, fixedNamesHolders string
	}{
		{"switchboard", "", ""},
		{"reloader", "reloader-switchboard", "reloader-switchboard-controller-manager-"},
		{"my-switchboard", "my-switchboard", "my-switchboard-controller-manager-"},
	} {
		objs, err := installRelease(t, tc.release, namespace, "")
		if err != nil {
			t.Fatal(err)
		}
		opts, _ := testenv.ManagerOptions(t, managerDeployment(t, objs).Spec.Template.Spec.Containers[0].Args)
		got := [2]string{opts.LeaderElectResourceName, opts.LeaderElectFixedNamesHolderPrefix}
		if want := [2]string{tc.resourceName, tc.fixedNamesHolders}; got != want {
			t.Errorf("release %s: --leader-elect-resource-name, --leader-elect-fixed-names-holder-prefix = %q, want %q", tc.release, got, want)
		}
	}
}

// intersect returns the keys of a that b has too.
func intersect(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if b[k] {
			out[k] = true
		}
	}
	return out
}
