package controllers_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/example/switchboard/internal/testenv"
)

// TestSecureMetricsAuthenticatesAndAuthorizes scrapes the default metrics endpoint (HTTPS,
// --metrics-secure) of a manager on the real API server: a ServiceAccount bound to get
// /metrics reads the metrics; another ServiceAccount is forbidden; no token or a forged one is
// unauthorized.
func TestSecureMetricsAuthenticatesAndAuthorizes(t *testing.T) {
	ctx := context.Background()
	cs, err := env.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "metrics-")
	allowed := serviceAccountToken(t, cs, ns, "prometheus")
	forbidden := serviceAccountToken(t, cs, ns, "stranger")
	grantMetricsReader(t, cs, ns, "prometheus")

	addr := testenv.FreeAddress(t)
	env.StartManager(t, "--controllers=configmapwatcher", "--metrics-bind-address="+addr)
	// The manager serves a self-signed certificate unless given one.
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		code, body, err := scrape(allowed)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			return fmt.Errorf("the allowed ServiceAccount got %d: %.200s", code, body)
		}
		return nil
	})
	for _, tc := range []struct {
		name  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"forged token", "not-a-token", http.StatusUnauthorized},
		{"ServiceAccount without the role", forbidden, http.StatusForbidden},
	} {
		code, body, err := scrape(tc.token)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if code != tc.want {
			t.Errorf("%s: got %d (%.200s), want %d", tc.name, code, body, tc.want)
		}
	}
}

// serviceAccountToken creates a ServiceAccount and returns a token for it.
func serviceAccountToken(t *testing.T, cs *kubernetes.Clientset, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// grantMetricsReader lets the ServiceAccount get /metrics, as config/rbac's
// metrics-reader ClusterRole does, and waits until the API server's authorizer says so:
// the manager remembers a denial for 30 s, so the test must not scrape before.
func grantMetricsReader(t *testing.T, cs *kubernetes.Clientset, ns, name string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)
	testenv.Eventually(t, 30*time.Second, func() error {
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:                  user,
			Groups:                []string{"system:serviceaccounts"},
			NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !review.Status.Allowed {
			return fmt.Errorf("%s may not get /metrics yet", user)
		}
		return nil
	})
}
