package overlays_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/switchboard/apis/v1alpha1"
)

// userRole is one of the roles for users that each kind of Switchboard's API has, as
// Kubebuilder's scaffold names them (<kind>-admin-role, ...), aggregated to a built-in role.
type userRole struct {
	// suffix ends the ClusterRole's name.
	suffix string
	// aggregateTo is the built-in ClusterRole it adds its rules to.
	aggregateTo string
	// verbs are granted on the kind's resource; every role may get its status.
	verbs []string
}

// userRoles are Kubebuilder's admin, editor and viewer roles.
var userRoles = []userRole{
	{"admin-role", "admin", []string{"*"}},
	{"editor-role", "edit", []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
	{"viewer-role", "view", []string{"get", "list", "watch"}},
}

// apiCRDs returns the CRDs of Switchboard's API group among objs.
func apiCRDs(t *testing.T, objs []*unstructured.Unstructured) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range find[apiextensionsv1.CustomResourceDefinition](t, objs, "CustomResourceDefinition") {
		if crd.Spec.Group == v1alpha1.GroupVersion.Group {
			out = append(out, crd)
		}
	}
	return out
}

// userRoleName names a kind's role: switchboard-<kind in lower case>-<suffix>.
func userRoleName(crd *apiextensionsv1.CustomResourceDefinition, r userRole) string {
	return "switchboard-" + strings.ToLower(crd.Spec.Names.Kind) + "-" + r.suffix
}

// userRoleNames returns the names of the user roles an installation with these CRDs has.
func userRoleNames(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var names []string
	for _, crd := range apiCRDs(t, objs) {
		for _, r := range userRoles {
			names = append(names, userRoleName(crd, r))
		}
	}
	sort.Strings(names)
	return names
}

// wantUserRules returns the rules of a kind's role: its verbs on the kind, and get on its status
// when the kind has one.
func wantUserRules(crd *apiextensionsv1.CustomResourceDefinition, r userRole) []rbacv1.PolicyRule {
	group := []string{crd.Spec.Group}
	rules := []rbacv1.PolicyRule{{APIGroups: group, Resources: []string{crd.Spec.Names.Plural}, Verbs: r.verbs}}
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Subresources != nil && v.Subresources.Status != nil {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: group, Resources: []string{crd.Spec.Names.Plural + "/status"}, Verbs: []string{"get"}})
		}
	}
	return rules
}

// checkUserRoles checks that every kind the installation serves has its admin, editor and
// viewer ClusterRoles, each with the label that aggregates it to the built-in admin, edit or
// view and nothing else, granting exactly what its name says; and that nothing binds them (users
// get them through the built-in roles). A kind the installation does not serve has none:
// checkRBAC fails on any ClusterRole it does not expect.
func checkUserRoles(t *testing.T, objs []*unstructured.Unstructured) {
	roles := map[string]*rbacv1.ClusterRole{}
	for _, role := range find[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		roles[role.Name] = role
	}
	for _, crd := range apiCRDs(t, objs) {
		for _, r := range userRoles {
			name := userRoleName(crd, r)
			role, ok := roles[name]
			if !ok {
				t.Errorf("no ClusterRole %s for %s", name, crd.Spec.Names.Kind)
				continue
			}
			if diff := cmp.Diff(wantUserRules(crd, r), role.Rules); diff != "" {
				t.Errorf("ClusterRole %s rules (-want +rendered):\n%s", name, diff)
			}
			var aggregates []string
			for label, value := range role.Labels {
				if to, ok := strings.CutPrefix(label, "rbac.authorization.k8s.io/aggregate-to-"); ok && value == "true" {
					aggregates = append(aggregates, to)
				}
			}
			if diff := cmp.Diff([]string{r.aggregateTo}, aggregates); diff != "" {
				t.Errorf("ClusterRole %s aggregates to (-want +got):\n%s", name, diff)
			}
			if role.AggregationRule != nil {
				t.Errorf("ClusterRole %s aggregates other roles itself", name)
			}
		}
	}
	names := userRoleNames(t, objs)
	for _, b := range find[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		if slices.Contains(names, b.RoleRef.Name) {
			t.Errorf("ClusterRoleBinding %s binds the user role %s: users get it through admin, edit or view", b.Name, b.RoleRef.Name)
		}
	}
	for _, b := range find[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		if slices.Contains(names, b.RoleRef.Name) {
			t.Errorf("RoleBinding %s/%s binds the user role %s: users get it through admin, edit or view", b.Namespace, b.Name, b.RoleRef.Name)
		}
	}
}
