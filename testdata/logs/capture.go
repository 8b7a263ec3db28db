//go:build ignore

// Command capture records real manager logs for the tests of `manager logs`: it starts a
// control plane (envtest: etcd and kube-apiserver), runs the manager binary against it at debug
// level with the RBAC of config/rbac, except that it may write Services only in the namespace
// "shop", creates objects that make every controller work (with failures: a name conflict, a
// Service the manager may not create, a missing Deployment and a missing ConfigMap), restarts
// the manager once, and writes the manager's JSON log, both runs one after the other. The
// control plane, the manager's build (as `make build` builds it, unless -manager names a binary)
// and the manager process come from the test kit, internal/testenv, as in the tests.
//
//	go run testdata/logs/capture.go -out testdata/logs/capture.log
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

func main() {
	manager := flag.String("manager", "", "The manager binary; when empty, it is built as `make build` builds it.")
	out := flag.String("out", "testdata/logs/capture.log", "Where to write the log.")
	flag.Parse()
	if err := run(*manager, *out); err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		os.Exit(1)
	}
}

func run(manager, out string) error {
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer env.Stop()
	user, err := env.AddUser("switchboard")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "capture")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if manager == "" {
		manager = filepath.Join(dir, "manager")
		if err := testenv.Build(".", manager); err != nil {
			return err
		}
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfigPath, user, ""); err != nil {
		return err
	}
	c := env.Client
	log, err := os.Create(out)
	if err != nil {
		return err
	}
	defer log.Close()
	ctx := context.Background()

	// The world before the first start: namespaces, the manager's RBAC, a Deployment that takes
	// a MyApp's name, a ConfigMap.
	for _, ns := range []string{"shop", "billing"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	if err := grant(ctx, c, "switchboard", "shop"); err != nil {
		return err
	}
	if err := c.Create(ctx, foreignDeployment("shop", "legacy")); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "shop"},
		Data: map[string]string{"GREETING": "hello"}}); err != nil {
		return err
	}

	first, err := start(manager, kubeconfigPath)
	if err != nil {
		return err
	}
	defer first.Stop(stopTimeout) // on an early return; stopping twice does nothing
	for _, app := range []*v1alpha1.MyApp{
		myApp("shop", "web", "web-config"),
		myApp("shop", "api", ""),
		myApp("shop", "legacy", ""),      // the Deployment "legacy" is not ours: blocked
		myApp("billing", "invoices", ""), // the manager may not create its Service: Reconciler error
		myApp("shop", "reports", "reports-config"),
	} {
		if err := c.Create(ctx, app); err != nil {
			return err
		}
	}
	for _, vs := range []*v1alpha1.VerticalScaler{verticalScaler("shop", "web", "web"), verticalScaler("shop", "ghost", "nothing-here")} {
		if err := c.Create(ctx, vs); err != nil {
			return err
		}
	}
	time.Sleep(8 * time.Second)
	// A spec change and a ConfigMap change: a Deployment update, then a roll.
	if err := patchReplicas(ctx, c, "shop", "api", 3); err != nil {
		return err
	}
	if err := c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "shop"},
		Data: map[string]string{"GREETING": "bonjour"}}, client.Merge); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	if err := stop(first, log); err != nil {
		return err
	}

	// While the manager is down the ConfigMap changes again; the restarted manager rolls once.
	if err := c.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "shop"},
		Data: map[string]string{"GREETING": "hola"}}, client.Merge); err != nil {
		return err
	}
	second, err := start(manager, kubeconfigPath)
	if err != nil {
		return err
	}
	defer second.Stop(stopTimeout)
	time.Sleep(6 * time.Second)
	if err := c.Delete(ctx, &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Name: "reports", Namespace: "shop"}}); err != nil {
		return err
	}
	time.Sleep(4 * time.Second)
	return stop(second, log)
}

// stopTimeout is how long the manager has to stop after SIGTERM before it is killed.
const stopTimeout = 30 * time.Second

// start runs the manager at debug level, its stdout and stderr captured together.
func start(manager, kubeconfig string) (*testenv.Process, error) {
	return testenv.StartProcess(testenv.Command{Binary: manager, Args: []string{"--kubeconfig=" + kubeconfig,
		"--zap-log-level=debug", "--metrics-bind-address=0", "--health-probe-bind-address=0"}})
}

// stop stops the manager with SIGTERM, waits, and appends what it wrote to log.
func stop(p *testenv.Process, log io.Writer) error {
	if err := p.Stop(stopTimeout); err != nil {
		return err
	}
	_, err := io.WriteString(log, p.Output())
	return err
}

// grant gives user the manager's ClusterRole from config/rbac, except that it may write
// Services only in serviceNamespace.
func grant(ctx context.Context, c client.Client, user, serviceNamespace string) error {
	data, err := os.ReadFile("config/rbac/role.yaml")
	if err != nil {
		return err
	}
	// The file holds the ClusterRole first, then the Roles the markers ask for in the manager's
	// namespace (the configmapwatcher's digest key), which the grant below replaces.
	first, _, _ := strings.Cut(strings.TrimPrefix(string(data), "---\n"), "\n---\n")
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal([]byte(first), role); err != nil {
		return err
	}
	var serviceWrites []string
	for i, rule := range role.Rules {
		if len(rule.Resources) == 1 && rule.Resources[0] == "services" {
			serviceWrites = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "get" || v == "list" || v == "watch" })
			role.Rules[i].Verbs = []string{"get", "list", "watch"}
		}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, obj := range []client.Object{
		role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "service-writer", Namespace: serviceNamespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: serviceWrites}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "service-writer", Namespace: serviceNamespace}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "service-writer"}},
		// The configmapwatcher creates its digest key Secret in the manager's namespace, which
		// is "default" for a manager outside a Pod.
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "digest-key", Namespace: metav1.NamespaceDefault},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "digest-key", Namespace: metav1.NamespaceDefault}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "digest-key"}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

func myApp(ns, name, configMap string) *v1alpha1.MyApp {
	app := &v1alpha1.MyApp{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MyAppSpec{Image: "registry.example.com/shop/" + name + ":v1", Replicas: 1, Port: 8080}}
	if configMap != "" {
		app.Spec.EnvFrom = []v1alpha1.ConfigMapEnvSource{{ConfigMapName: configMap}}
	}
	return app
}

func verticalScaler(ns, name, deployment string) *v1alpha1.VerticalScaler {
	return &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: deployment}}
}

func foreignDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "legacy:1"}}}}}}
}

func patchReplicas(ctx context.Context, c client.Client, ns, name string, replicas int32) error {
	app := &v1alpha1.MyApp{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		return err
	}
	patch := client.MergeFrom(app.DeepCopy())
	app.Spec.Replicas = replicas
	return c.Patch(ctx, app, patch)
}
