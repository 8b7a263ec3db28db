package overlays_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/internal/testenv"
)

// TestUserRolesAggregate installs config/default's admin, editor and viewer roles on a real API
// server, lets kube-controller-manager's clusterrole-aggregation controller (the one that does it
// on every cluster; envtest runs none) fold them into the built-in admin, edit and view, and then
// asks the API server, with SubjectAccessReviews, what users bound to each of those in one
// namespace may do with every kind: what the roles' names say, in that namespace only.
func TestUserRolesAggregate(t *testing.T) {
	testenv.NeedsControllerManager(t)
	objs := testenv.Kustomize(t, filepath.Join("..", "default"))
	env := testenv.StartForTest(t)
	ctx := context.Background()
	users := userRoleNames(t, objs)
	for _, obj := range objs {
		if obj.GetKind() == "ClusterRole" && slices.Contains(users, obj.GetName()) {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	env.RunControllerManager(t, "clusterrole-aggregation-controller")

	ns := env.Namespace(t, "aggregation-")
	other := env.Namespace(t, "elsewhere-")
	for _, builtin := range []string{"view", "edit", "admin"} {
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: builtin},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: builtin},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: builtin + "-user"}}}
		if err := env.Client.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
	}

	// What each built-in role may do with a kind, by verb; the status subresource only gets.
	allowed := map[string][]string{
		"view":  {"get", "list", "watch"},
		"edit":  {"get", "list", "watch", "create", "update", "patch", "delete"},
		"admin": {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	crds := apiCRDs(t, objs)
	if len(crds) != 3 {
		t.Fatalf("config/default serves %d kinds, want MyApp, VerticalScaler and VerticalScalerCheckpoint", len(crds))
	}
	// Aggregation is asynchronous: wait until the viewer may read every kind, then ask the rest.
	testenv.Eventually(t, time.Minute, func() error {
		for _, crd := range crds {
			if ok, err := access(ctx, env.Client, "view-user", ns, crd, "", "list"); err != nil || !ok {
				return fmt.Errorf("view-user may not list %s yet (%v): the aggregation controller has not run", crd.Spec.Names.Plural, err)
			}
		}
		return nil
	})
	for _, crd := range crds {
		hasStatus := len(wantUserRules(crd, userRoles[0])) == 2
		for builtin, may := range allowed {
			user := builtin + "-user"
			for _, verb := range verbs {
				expect(t, ctx, env.Client, user, ns, crd, "", verb, slices.Contains(may, verb))
				expect(t, ctx, env.Client, user, other, crd, "", verb, false)
			}
			if hasStatus {
				expect(t, ctx, env.Client, user, ns, crd, "status", "get", true)
				expect(t, ctx, env.Client, user, ns, crd, "status", "update", false)
			}
		}
		expect(t, ctx, env.Client, "nobody", ns, crd, "", "get", false)
	}
}

// expect asks whether user may use verb on crd's resource (or its subresource) in namespace and
// fails the test unless the answer is want.
func expect(t *testing.T, ctx context.Context, c client.Client, user, namespace string, crd *apiextensionsv1.CustomResourceDefinition, subresource, verb string, want bool) {
	t.Helper()
	got, err := access(ctx, c, user, namespace, crd, subresource, verb)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		resource := crd.Spec.Names.Plural
		if subresource != "" {
			resource += "/" + subresource
		}
		t.Errorf("%s may %s %s in %s: %v, want %v", user, verb, resource, namespace, got, want)
	}
}

// access asks the API server, with a SubjectAccessReview, whether user may use verb on crd's
// resource (or its subresource) in namespace.
func access(ctx context.Context, c client.Client, user, namespace string, crd *apiextensionsv1.CustomResourceDefinition, subresource, verb string) (bool, error) {
	review := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user,
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: crd.Spec.Group,
			Resource: crd.Spec.Names.Plural, Subresource: subresource},
	}}
	if err := c.Create(ctx, review); err != nil {
		return false, fmt.Errorf("SubjectAccessReview of %s %s %s: %w", user, verb, crd.Spec.Names.Plural, err)
	}
	return review.Status.Allowed, nil
}
