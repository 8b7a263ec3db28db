// Package overlays_test renders config/default and each overlay with `kubectl kustomize` and
// checks that the controller set each one lists as components is what the manager runs and
// exactly what it may do: its --controllers names those controllers and no other, the
// ClusterRoles and Roles bound to its ServiceAccount are those controllers' generated roles plus
// the common ones, and the CRDs are those of the controllers' kinds (primary, and kept:
// checkpoints). An overlay without components (config/overlays/namespaced) grants its
// controllers' generated rules as Roles in each namespace of --watch-namespaces instead of
// ClusterRoles. In every one, no ClusterRole but the configmapwatcher's may read Secrets, each kind
// served has its admin, editor and viewer roles for users, aggregated to the built-in roles and
// bound to nothing (roles_test.go), and the optional components it lists (config/certmanager,
// config/alerts, config/grafana, config/replicas) fit together (optional_test.go). aggregation_test.go runs the
// aggregation on an API server.
package overlays_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/manifests"
	"github.com/example/switchboard/internal/testenv"
)

// The names the manifests give the manager's objects.
const (
	namespace      = "switchboard-system"
	serviceAccount = "switchboard-controller-manager"
	deployment     = "switchboard-controller-manager"
)

// commonClusterRoles are bound whatever controllers run (config/rbac).
var commonClusterRoles = []string{"switchboard-metrics-auth", "switchboard-metrics-reader"}

// kustomizations are the directories a user deploys, relative to config/.
func kustomizations(t *testing.T) []string {
	t.Helper()
	dirs := []string{"default"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("overlays", e.Name()))
		}
	}
	if len(dirs) < 3 {
		t.Fatalf("overlays %v: the issue asks for at least two example overlays", dirs[1:])
	}
	if !slices.Contains(dirs, filepath.Join("overlays", "ha")) {
		t.Fatalf("overlays %v: no ha overlay (three replicas with a Lease per controller)", dirs[1:])
	}
	return dirs
}

func TestOverlays(t *testing.T) {
	for _, dir := range kustomizations(t) {
		t.Run(dir, func(t *testing.T) {
			components, optional := listedComponents(t, filepath.Join("..", dir))
			objs := testenv.Kustomize(t, filepath.Join("..", dir))
			if len(components) == 0 {
				// Namespaced: the controllers are those --controllers names.
				components = selectedGroups(t, objs)
				t.Run("rbac", func(t *testing.T) { checkNamespacedRBAC(t, objs, components) })
			} else {
				t.Run("controllers", func(t *testing.T) { checkControllers(t, objs, components) })
				t.Run("rbac", func(t *testing.T) { checkRBAC(t, objs, components) })
			}
			t.Run("secrets", func(t *testing.T) { checkSecretReaders(t, objs) })
			t.Run("crds", func(t *testing.T) { checkCRDs(t, objs, components) })
			t.Run("finalizer-policy", func(t *testing.T) {
				checkFinalizerPolicy(t, objs, components, !slices.Contains(optional, "without-admission-policies"))
			})
			t.Run("security", func(t *testing.T) { checkSecurity(t, objs) })
			t.Run("leases", func(t *testing.T) { checkLeaseRBAC(t, objs, components) })
			t.Run("replicas", func(t *testing.T) { checkReplicas(t, objs) })
			t.Run("user-roles", func(t *testing.T) { checkUserRoles(t, objs) })
			t.Run("optional", func(t *testing.T) { checkOptional(t, objs, optional) })
			if dir == filepath.Join("overlays", "ha") {
				t.Run("ha", func(t *testing.T) { checkHA(t, objs) })
			}
			if dir == filepath.Join("overlays", "dynamic-shards") {
				t.Run("dynamic-shards", func(t *testing.T) { checkDynamicShards(t, objs) })
			}
			if dir == filepath.Join("overlays", "sharded") {
				t.Run("shards", func(t *testing.T) { checkShards(t, objs) })
			}
		})
	}
}

// component names the component of a controller: its group's, or its own.
func component(c controllers.Controller) string {
	if c.Group != "" {
		return c.Group
	}
	return c.Name
}

// TestEveryControllerHasAComponent keeps config/components in step with the controller table:
// one component per group, or per controller without one.
func TestEveryControllerHasAComponent(t *testing.T) {
	var want []string
	for _, c := range controllers.Table() {
		if !slices.Contains(want, component(c)) {
			want = append(want, component(c))
		}
	}
	entries, err := os.ReadDir(filepath.Join("..", "components"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config/components against the controller table (-table +components):\n%s", diff)
	}
}

// optionalComponents are the components outside config/components that an overlay may add:
// they select no controller.
var optionalComponents = []string{"alerts", "certmanager", "grafana", "replicas", "trusted-ca", "without-admission-policies"}

// listedComponents returns the names of the controller components (config/components) a
// kustomization lists, and of the optional ones (config/certmanager, ...).
func listedComponents(t *testing.T, dir string) (controllerComponents, optional []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Components []string `json:"components"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	for _, c := range k.Components {
		switch {
		case filepath.Base(filepath.Dir(c)) == "components":
			controllerComponents = append(controllerComponents, filepath.Base(c))
		case slices.Contains(optionalComponents, filepath.Base(c)) && filepath.Join(dir, c) == filepath.Join("..", filepath.Base(c)):
			optional = append(optional, filepath.Base(c))
		default:
			t.Fatalf("component %s is neither a controller's (config/components) nor one of the optional %v", c, optionalComponents)
		}
	}
	sort.Strings(controllerComponents)
	sort.Strings(optional)
	return controllerComponents, optional
}

// find returns the objects of kind, converted to T.
func find[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var found []*T
	for _, obj := range objs {
		if obj.GetKind() != kind {
			continue
		}
		typed := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
			t.Fatalf("%s %s: %v", kind, obj.GetName(), err)
		}
		found = append(found, typed)
	}
	return found
}

// managerContainer returns the manager's Deployment's container "manager".
func managerContainer(t *testing.T, objs []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	for _, d := range find[appsv1.Deployment](t, objs, "Deployment") {
		if d.Name != deployment {
			continue
		}
		if d.Namespace != namespace {
			t.Errorf("Deployment in namespace %q, want %q", d.Namespace, namespace)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" {
				return c
			}
		}
	}
	t.Fatalf("no Deployment %s with a container manager", deployment)
	return corev1.Container{}
}

// checkControllers checks that the manager's --controllers selects exactly the components'
// controllers, as the manager itself parses it.
func checkControllers(t *testing.T, objs []*unstructured.Unstructured, components []string) {
	if diff := cmp.Diff(components, selectedGroups(t, objs)); diff != "" {
		t.Errorf("--controllers selects other controllers than the components (-components +selected):\n%s", diff)
	}
}

// selectedGroups returns the components (groups, or controllers without one) of the controllers
// the manager's --controllers selects, as the manager itself parses it, sorted.
func selectedGroups(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	c := managerContainer(t, objs)
	var value string
	for i, arg := range c.Args {
		if arg == "--controllers" && i+1 < len(c.Args) {
			value = c.Args[i+1]
		}
		if strings.HasPrefix(arg, "--controllers=") {
			t.Errorf("args %q: --controllers must be the separate pair the components write to", c.Args)
		}
	}
	selected, err := controllers.Select(controllers.Table(), strings.Split(value, ","))
	if err != nil {
		t.Fatalf("the manager refuses --controllers %q: %v", value, err)
	}
	var got []string
	for _, s := range selected {
		if !slices.Contains(got, component(s)) {
			got = append(got, component(s))
		}
	}
	sort.Strings(got)
	return got
}

// checkRBAC checks that the ClusterRoles are the components' generated roles, rule for rule,
// and the common ones, each bound to the manager's ServiceAccount, and nothing else is; and the
// Roles likewise, with a shard group's where the manager has --shard-group.
func checkRBAC(t *testing.T, objs []*unstructured.Unstructured, components []string) {
	wantRules := map[string][]rbacv1.PolicyRule{}
	wantNames := append([]string{}, commonClusterRoles...)
	wantRoles := []string{namespace + "/switchboard-leader-election"}
	wantRoleRules := map[string][]rbacv1.PolicyRule{}
	// A shard group's replica does with any Lease of its namespace what a member does.
	if opts, _ := testenv.ManagerOptions(t, managerContainer(t, objs).Args); opts.ShardGroup != "" {
		wantRoles = append(wantRoles, namespace+"/switchboard-shard-group")
		wantRoleRules[namespace+"/switchboard-shard-group"] = []rbacv1.PolicyRule{{
			APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: controllers.ShardGroupLeaseVerbs}}
	}
	for _, name := range components {
		role, roles := readGenerated(t, name)
		wantRules[role.Name] = role.Rules
		wantNames = append(wantNames, role.Name)
		for _, r := range roles {
			wantRoles = append(wantRoles, r.Namespace+"/"+r.Name)
			wantRoleRules[r.Namespace+"/"+r.Name] = r.Rules
		}
	}
	wantNames = append(wantNames, userRoleNames(t, objs)...)
	var gotNames []string
	for _, role := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		gotNames = append(gotNames, role.Name)
		if rules, ok := wantRules[role.Name]; ok {
			if diff := cmp.Diff(rules, role.Rules); diff != "" {
				t.Errorf("ClusterRole %s rules (-generated +rendered):\n%s", role.Name, diff)
			}
		}
	}
	sort.Strings(wantNames)
	sort.Strings(gotNames)
	if diff := cmp.Diff(wantNames, gotNames); diff != "" {
		t.Errorf("ClusterRoles (-components' and common +rendered):\n%s", diff)
	}

	bound := map[string]bool{}
	for _, b := range find[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: namespace}}
		if diff := cmp.Diff(wantSubjects, b.Subjects); diff != "" {
			t.Errorf("ClusterRoleBinding %s subjects (-want +got):\n%s", b.Name, diff)
		}
		bound[b.RoleRef.Name] = true
	}
	users := userRoleNames(t, objs)
	for _, name := range wantNames {
		// The metrics reader is for whatever scrapes the metrics, and the user roles for users
		// (through aggregation), not for the manager.
		if !bound[name] && name != "switchboard-metrics-reader" && !slices.Contains(users, name) {
			t.Errorf("ClusterRole %s is not bound to the manager's ServiceAccount", name)
		}
	}
	checkRoles(t, objs, wantRoles, wantRoleRules)
}

// checkRoles checks that the Roles are exactly want (namespace/name), each with the rules
// given, and each bound to the manager's ServiceAccount in its namespace.
func checkRoles(t *testing.T, objs []*unstructured.Unstructured, want []string, rules map[string][]rbacv1.PolicyRule) {
	t.Helper()
	var got []string
	for _, role := range find[rbacv1.Role](t, objs, "Role") {
		key := role.Namespace + "/" + role.Name
		got = append(got, key)
		if want, ok := rules[key]; ok {
			if diff := cmp.Diff(want, role.Rules); diff != "" {
				t.Errorf("Role %s rules (-generated +rendered):\n%s", key, diff)
			}
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Roles (-want +rendered):\n%s", diff)
	}
	bound := map[string]bool{}
	for _, b := range find[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: namespace}}
		if diff := cmp.Diff(wantSubjects, b.Subjects); diff != "" {
			t.Errorf("RoleBinding %s/%s subjects (-want +got):\n%s", b.Namespace, b.Name, diff)
		}
		if b.RoleRef.Kind == "Role" {
			bound[b.Namespace+"/"+b.RoleRef.Name] = true
		}
	}
	for _, key := range want {
		if !bound[key] {
			t.Errorf("Role %s is not bound to the manager's ServiceAccount", key)
		}
	}
}

// checkNamespacedRBAC checks an overlay that grants its controllers' generated ClusterRole rules
// as a Role in each namespace of the manager's --watch-namespaces (and the generated Roles as
// they are), and binds no ClusterRole but the common ones.
func checkNamespacedRBAC(t *testing.T, objs []*unstructured.Unstructured, components []string) {
	var watched []string
	for _, arg := range managerContainer(t, objs).Args {
		if value, ok := strings.CutPrefix(arg, "--watch-namespaces="); ok {
			watched = strings.Split(value, ",")
		}
	}
	if len(watched) == 0 {
		t.Fatal("a namespaced overlay must set --watch-namespaces")
	}
	wantRoles := []string{namespace + "/switchboard-leader-election"}
	rules := map[string][]rbacv1.PolicyRule{}
	for _, name := range components {
		clusterRole, roles := readGenerated(t, name)
		for _, ns := range watched {
			key := ns + "/" + clusterRole.Name
			wantRoles = append(wantRoles, key)
			rules[key] = clusterRole.Rules
		}
		for _, r := range roles {
			wantRoles = append(wantRoles, r.Namespace+"/"+r.Name)
			rules[r.Namespace+"/"+r.Name] = r.Rules
		}
	}
	checkRoles(t, objs, wantRoles, rules)
	var clusterRoles []string
	for _, role := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		clusterRoles = append(clusterRoles, role.Name)
	}
	sort.Strings(clusterRoles)
	if diff := cmp.Diff(commonClusterRoles, clusterRoles); diff != "" {
		t.Errorf("ClusterRoles of a namespaced overlay (-common +rendered):\n%s", diff)
	}
}

// secretReaders are the ClusterRoles that may read Secrets: the configmapwatcher's alone.
var secretReaders = []string{"switchboard-configmapwatcher"}

// checkSecretReaders checks that no ClusterRole but the configmapwatcher's grants anything on
// Secrets.
func checkSecretReaders(t *testing.T, objs []*unstructured.Unstructured) {
	for _, role := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		if slices.Contains(secretReaders, role.Name) {
			continue
		}
		for _, rule := range role.Rules {
			if (slices.Contains(rule.APIGroups, "") || slices.Contains(rule.APIGroups, "*")) &&
				(slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "*")) {
				t.Errorf("ClusterRole %s grants %v on Secrets: only %v may", role.Name, rule.Verbs, secretReaders)
			}
		}
	}
}

// readGenerated reads what controller-gen wrote for a component: its ClusterRole, and the Roles
// its markers ask for in the manager's namespace.
func readGenerated(t *testing.T, component string) (*rbacv1.ClusterRole, []*rbacv1.Role) {
	t.Helper()
	path := filepath.Join("..", "components", component, "rbac", "role.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var clusterRole *rbacv1.ClusterRole
	var roles []*rbacv1.Role
	objs, err := manifests.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, obj := range objs {
		switch obj.GetKind() {
		case "ClusterRole":
			clusterRole = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, clusterRole); err != nil {
				t.Fatal(err)
			}
		case "Role":
			role := &rbacv1.Role{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, role); err != nil {
				t.Fatal(err)
			}
			roles = append(roles, role)
		}
	}
	if clusterRole == nil {
		t.Fatalf("%s holds no ClusterRole", path)
	}
	return clusterRole, roles
}

// checkCRDs checks that the CRDs are exactly those of the kinds of Switchboard's group that the
// components' controllers reconcile or keep (a VerticalScaler's checkpoints): every primary kind
// of the group has its CRD, and the CRDs are those of the group's resources the controllers'
// generated ClusterRoles name, by plural.
// checkFinalizerPolicy: the admission policy that sets the MyApp finalizer at creation is
// installed exactly where the myapp controller runs, bound to the policy; without the
// controller, a MyApp would get a finalizer nobody removes. The same for the verticalscaler's.
// withPolicies is false for an overlay that leaves the admission policies out
// (config/without-admission-policies, for Kubernetes before 1.36): then there is none.
func checkFinalizerPolicy(t *testing.T, objs []*unstructured.Unstructured, components []string, withPolicies bool) {
	var policies, bindings []string
	for _, obj := range objs {
		switch obj.GetKind() {
		case "MutatingAdmissionPolicy":
			policies = append(policies, obj.GetName())
		case "MutatingAdmissionPolicyBinding":
			name, _, _ := unstructured.NestedString(obj.Object, "spec", "policyName")
			bindings = append(bindings, name)
		}
	}
	var want []string
	if withPolicies && slices.Contains(components, "myapp") {
		want = append(want, "switchboard-myapp-finalizer")
	}
	if withPolicies && slices.Contains(components, "verticalscaler") {
		want = append(want, "switchboard-verticalscaler-pod-resources")
	}
	slices.Sort(want)
	slices.Sort(policies)
	slices.Sort(bindings)
	if diff := cmp.Diff(want, policies); diff != "" {
		t.Errorf("MutatingAdmissionPolicies for the components %v (-want +got):\n%s", components, diff)
	}
	if diff := cmp.Diff(want, bindings); diff != "" {
		t.Errorf("policies bound for the components %v (-want +got):\n%s", components, diff)
	}
}

func checkCRDs(t *testing.T, objs []*unstructured.Unstructured, components []string) {
	listed := map[string]bool{}
	for _, name := range components {
		listed[name] = true
	}
	scheme := controllers.NewScheme()
	wantKinds := map[string]bool{}
	for _, c := range controllers.Table() {
		if !listed[component(c)] {
			continue
		}
		gvks, _, err := scheme.ObjectKinds(c.For)
		if err != nil {
			t.Fatal(err)
		}
		if gvks[0].Group == v1alpha1.GroupVersion.Group {
			wantKinds[gvks[0].Kind] = true
		}
	}
	wantPlurals := map[string]bool{}
	for _, name := range components {
		clusterRole, _ := readGenerated(t, name)
		for _, rule := range clusterRole.Rules {
			if !slices.Contains(rule.APIGroups, v1alpha1.GroupVersion.Group) {
				continue
			}
			for _, r := range rule.Resources {
				if !strings.Contains(r, "/") {
					wantPlurals[r] = true
				}
			}
		}
	}
	gotPlurals := map[string]bool{}
	for _, crd := range objs {
		if crd.GetKind() != "CustomResourceDefinition" {
			continue
		}
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		gotPlurals[plural] = true
		delete(wantKinds, kind)
	}
	if len(wantKinds) > 0 {
		t.Errorf("no CRD for the primary kinds %v", wantKinds)
	}
	if diff := cmp.Diff(wantPlurals, gotPlurals); diff != "" {
		t.Errorf("CRDs by plural (-the controllers' roles +rendered):\n%s", diff)
	}
}

// checkSecurity checks the restricted security context the issue asks for.
func checkSecurity(t *testing.T, objs []*unstructured.Unstructured) {
	c := managerContainer(t, objs)
	sc := c.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("manager security context %+v: want runAsNonRoot, readOnlyRootFilesystem, no privilege escalation, drop ALL", sc)
	}
	for _, d := range find[appsv1.Deployment](t, objs, "Deployment") {
		psc := d.Spec.Template.Spec.SecurityContext
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("Deployment %s: want seccomp RuntimeDefault, got %+v", d.Name, psc)
		}
		if d.Spec.Template.Spec.ServiceAccountName != serviceAccount {
			t.Errorf("Deployment %s runs as %q, want %s", d.Name, d.Spec.Template.Spec.ServiceAccountName, serviceAccount)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("manager probes: want liveness /healthz and readiness /readyz")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("manager requests %v: want cpu and memory", c.Resources.Requests)
	}
}

// checkLeaseRBAC checks that the leader election Role lets the managers create Leases and get,
// update and patch exactly the Leases they may hold with the listed controllers: each manager's
// and one per controller group.
func checkLeaseRBAC(t *testing.T, objs []*unstructured.Unstructured, components []string) {
	var selected []controllers.Controller
	for _, c := range controllers.Table() {
		if slices.Contains(components, component(c)) {
			selected = append(selected, c)
		}
	}
	// Every manager's: a shard names its own (--leader-elect-resource-name).
	var want []string
	for _, d := range find[appsv1.Deployment](t, objs, "Deployment") {
		want = append(want, controllers.LeaseNames(selected, leaseResourceName(t, container(t, d)))...)
	}
	sort.Strings(want)
	var election *rbacv1.Role
	for _, role := range find[rbacv1.Role](t, objs, "Role") {
		if role.Name == "switchboard-leader-election" {
			election = role
		}
	}
	if election == nil {
		t.Fatal("no leader election Role, switchboard-leader-election")
	}
	var created bool
	var named []string
	for _, rule := range election.Rules {
		if !slices.Contains(rule.APIGroups, "coordination.k8s.io") || !slices.Contains(rule.Resources, "leases") {
			continue
		}
		switch {
		case len(rule.ResourceNames) == 0 && cmp.Equal(rule.Verbs, []string{"create"}):
			created = true
		case len(rule.ResourceNames) > 0 && cmp.Equal(sortedCopy(rule.Verbs), []string{"get", "patch", "update"}):
			named = append(named, rule.ResourceNames...)
		default:
			t.Errorf("Lease rule %+v: want create on any Lease, or get, update, patch on named ones", rule)
		}
	}
	if !created {
		t.Errorf("the leader election Role does not let the manager create Leases")
	}
	sort.Strings(named)
	if diff := cmp.Diff(want, named); diff != "" {
		t.Errorf("Leases the Role names (-the manager's and its controller groups' +named):\n%s", diff)
	}
}

// checkReplicas checks that a Deployment of more than one replica runs as replicas should: the
// manager elects (per controller, where the flags say so), a PodDisruptionBudget keeps all but
// one running through a drain, and the replicas spread over nodes.
func checkReplicas(t *testing.T, objs []*unstructured.Unstructured) {
	var d *appsv1.Deployment
	for _, dep := range find[appsv1.Deployment](t, objs, "Deployment") {
		if dep.Name == deployment {
			d = dep
		}
	}
	if d == nil {
		t.Fatalf("no Deployment %s", deployment)
	}
	opts, _ := testenv.ManagerOptions(t, managerContainer(t, objs).Args)
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	if replicas == 1 {
		if len(find[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")) != 0 {
			t.Errorf("a PodDisruptionBudget for a single replica blocks every drain")
		}
		return
	}
	if !opts.LeaderElect && opts.ShardGroup == "" {
		t.Errorf("%d replicas without --leader-elect or --shard-group: every one would run every controller", replicas)
	}
	pdbs := find[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
	if len(pdbs) != 1 {
		t.Fatalf("%d replicas with %d PodDisruptionBudgets, want one", replicas, len(pdbs))
	}
	pdb := pdbs[0]
	if pdb.Namespace != namespace || !cmp.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget %s/%s selects %v, want the Deployment's Pods %v in %s", pdb.Namespace, pdb.Name, pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels, namespace)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: maxUnavailable %v, minAvailable %v; want one replica down at a time", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
	spread := false
	for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule && c.MaxSkew == 1 &&
			c.LabelSelector != nil && cmp.Equal(c.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
			spread = true
		}
	}
	if !spread {
		t.Errorf("%d replicas without a topology spread over nodes (kubernetes.io/hostname, maxSkew 1, DoNotSchedule) of the Deployment's Pods", replicas)
	}
}

// checkHA checks what config/overlays/ha promises: three replicas that share the controllers
// through a Lease per controller group.
func checkHA(t *testing.T, objs []*unstructured.Unstructured) {
	for _, d := range find[appsv1.Deployment](t, objs, "Deployment") {
		if d.Name == deployment && (d.Spec.Replicas == nil || *d.Spec.Replicas != 3) {
			t.Errorf("Deployment replicas %v, want 3", d.Spec.Replicas)
		}
	}
	opts, _ := testenv.ManagerOptions(t, managerContainer(t, objs).Args)
	if !opts.LeaderElect || opts.LeaderElectScope != controllers.ScopeController {
		t.Errorf("--leader-elect %v --leader-elect-scope %q, want a Lease per controller group", opts.LeaderElect, opts.LeaderElectScope)
	}
}

// checkDynamicShards checks what config/overlays/dynamic-shards promises: three replicas of one
// shard group, without leader election.
func checkDynamicShards(t *testing.T, objs []*unstructured.Unstructured) {
	for _, d := range find[appsv1.Deployment](t, objs, "Deployment") {
		if d.Name == deployment && (d.Spec.Replicas == nil || *d.Spec.Replicas != 3) {
			t.Errorf("Deployment replicas %v, want 3", d.Spec.Replicas)
		}
	}
	opts, _ := testenv.ManagerOptions(t, managerContainer(t, objs).Args)
	if opts.ShardGroup == "" || opts.LeaderElect {
		t.Errorf("--shard-group %q --leader-elect %v, want a shard group and no leader election", opts.ShardGroup, opts.LeaderElect)
	}
}

// checkShards checks what config/overlays/sharded promises: managers that differ only in the
// objects they take (--watch-label-selector) and the Leases they elect their leader with, whose
// selectors split any object among them, exactly one each, and whose Deployments select their
// own Pods alone.
func checkShards(t *testing.T, objs []*unstructured.Unstructured) {
	deployments := find[appsv1.Deployment](t, objs, "Deployment")
	if len(deployments) != 3 {
		t.Fatalf("%d Deployments, want three: shard1, shard2 and the rest", len(deployments))
	}
	reference := container(t, deployments[0])
	var selectors []labels.Selector
	leases := map[string]bool{}
	for _, d := range deployments {
		c := container(t, d)
		opts, _ := testenv.ManagerOptions(t, c.Args)
		selector, err := labels.Parse(opts.WatchLabelSelector)
		if err != nil || opts.WatchLabelSelector == "" {
			t.Fatalf("Deployment %s: --watch-label-selector %q: %v", d.Name, opts.WatchLabelSelector, err)
		}
		selectors = append(selectors, selector)
		if !opts.LeaderElect || leases[opts.LeaderElectResourceName] {
			t.Errorf("Deployment %s: --leader-elect %v, Leases %q shared with another shard", d.Name, opts.LeaderElect, opts.LeaderElectResourceName)
		}
		leases[opts.LeaderElectResourceName] = true
		// The same manager but for its shard's flags.
		if diff := cmp.Diff(withoutShardArgs(reference), withoutShardArgs(c)); diff != "" {
			t.Errorf("Deployment %s's manager differs from %s's (-%s +%s):\n%s", d.Name, deployments[0].Name, deployments[0].Name, d.Name, diff)
		}
		for _, other := range deployments {
			if other.Name != d.Name && labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("Deployment %s selects the Pods of %s", d.Name, other.Name)
			}
		}
	}
	testenv.OneShardEach(t, selectors, labels.Set{}, labels.Set{"team": "blue"}, labels.Set{"sharding.fluxcd.io/key": "shard1"},
		labels.Set{"sharding.fluxcd.io/key": "shard2"}, labels.Set{"sharding.fluxcd.io/key": "shard3"}, labels.Set{"sharding.fluxcd.io/key": ""})
}

// container returns the container "manager" of d.
func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container manager", d.Name)
	return corev1.Container{}
}

// leaseResourceName returns the --leader-elect-resource-name of the manager in c.
func leaseResourceName(t *testing.T, c corev1.Container) string {
	t.Helper()
	opts, _ := testenv.ManagerOptions(t, c.Args)
	return opts.LeaderElectResourceName
}

// withoutShardArgs returns c without the args that set a shard apart.
func withoutShardArgs(c corev1.Container) corev1.Container {
	c.Args = slices.DeleteFunc(slices.Clone(c.Args), func(arg string) bool {
		return strings.HasPrefix(arg, "--watch-label-selector=") || strings.HasPrefix(arg, "--leader-elect-resource-name=")
	})
	return c
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}
