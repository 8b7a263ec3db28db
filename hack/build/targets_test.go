package build_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// runMake runs `make args...` at the module root with env added to the environment, and returns
// its combined output and error. A run that takes over two minutes is killed.
func runMake(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	// Not a sub-make of `make test`: its command-line variables (in MAKEFLAGS) must not reach
	// this make.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDockerTargets runs `make docker-build` and `make docker-push` with a stand-in for docker
// (no Docker engine runs here) and checks what each asks of it: build the Dockerfile at the
// module root (the one the tests above keep in step with `make build`) into IMG, and push IMG.
func TestDockerTargets(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	docker := filepath.Join(dir, "docker")
	if err := os.WriteFile(docker, []byte("#!/bin/sh\nprintf '%s\\n' \"$PWD\" \"$@\" > \"$RECORD\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	const img = "registry.example.com/team/switchboard:test"
	// What `make build` stamps into the binary (`manager --version`): the Dockerfile gets it as
	// build arguments, since its build has no .git to compute it from.
	stamp := []string{"VERSION=v1.2.3", "REVISION=0123456789abcdef0123456789abcdef01234567", "BUILD_DATE=2026-01-02T03:04:05Z"}
	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"docker-build", []string{absRoot, "build", "--build-arg", stamp[0], "--build-arg", stamp[1], "--build-arg", stamp[2], "-t", img, "."}},
		{"docker-push", []string{absRoot, "push", img}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			if out, err := runMake(t, []string{"RECORD=" + record}, append([]string{tc.target, "CONTAINER_TOOL=" + docker, "IMG=" + img}, stamp...)...); err != nil {
				t.Fatalf("make %s: %v\n%s", tc.target, err, out)
			}
			data, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")); diff != "" {
				t.Errorf("make %s ran docker in a directory with arguments (-want +got):\n%s", tc.target, diff)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(root, "Dockerfile")); err != nil {
		t.Errorf("docker build . reads the Dockerfile at the module root: %v", err)
	}
}

// TestRunTarget reads what `make run` would run (make -n): the local cluster, even with a
// KUBECONFIG exported in the shell; another cluster only with RUN_KUBECONFIG on make's command
// line, named (context and server) before the manager starts, and given to it and to kubectl
// explicitly. RUN_KUBECONFIG from the environment is refused, so that a shell cannot keep
// pointing every run at one cluster.
func TestRunTarget(t *testing.T) {
	exported := []string{"KUBECONFIG=/home/you/.kube/prod"}
	out, err := runMake(t, exported, "-n", "run")
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "/localcluster --dir=") || strings.Contains(out, "/home/you/.kube/prod") {
		t.Errorf("make -n run with KUBECONFIG exported: want the local cluster's launcher and no word of the exported KUBECONFIG:\n%s", out)
	}

	const dev = "/tmp/dev/kubeconfig"
	out, err = runMake(t, exported, "-n", "run", "RUN_KUBECONFIG="+dev)
	if err != nil {
		t.Fatalf("make -n run RUN_KUBECONFIG=%s: %v\n%s", dev, err, out)
	}
	var commands []string
	for _, line := range strings.Split(out, "\n") {
		program, _, _ := strings.Cut(line, " ")
		switch {
		case program == "kubectl":
			commands = append(commands, "kubectl")
			if !strings.HasPrefix(line, "kubectl --kubeconfig="+dev+" config view --minify") || !strings.Contains(line, "{.current-context}") || !strings.Contains(line, "{.clusters[0].cluster.server}") {
				t.Errorf("make run RUN_KUBECONFIG=%s: %q does not print the context and server of %s", dev, line, dev)
			}
		case strings.HasSuffix(program, "/bin/manager"):
			commands = append(commands, "manager")
			if !strings.Contains(line, "/bin/manager --kubeconfig="+dev+" ") {
				t.Errorf("make run RUN_KUBECONFIG=%s runs %q, want the manager with --kubeconfig=%s", dev, line, dev)
			}
		case strings.HasSuffix(program, "/localcluster"):
			commands = append(commands, "localcluster")
		}
	}
	if diff := cmp.Diff([]string{"kubectl", "manager"}, commands); diff != "" || strings.Contains(out, "/home/you/.kube/prod") {
		t.Errorf("make -n run RUN_KUBECONFIG=%s with KUBECONFIG exported: the cluster said, then the manager, no word of the exported KUBECONFIG (-want +got):\n%s\n%s", dev, diff, out)
	}

	out, err = runMake(t, []string{"RUN_KUBECONFIG=" + dev}, "run")
	if err == nil || !strings.Contains(out, "make run RUN_KUBECONFIG=path") {
		t.Errorf("make run with RUN_KUBECONFIG in the environment: %v\n%s\nwant a refusal that says to pass it on the command line", err, out)
	}
}

// TestInstallAndDeployTargets runs Kubebuilder's targets against a real API server, as a user
// would against a cluster: uninstall and install the CRDs, deploy config/default with an image of
// one's own, and undeploy it; ignore-not-found=true quiets a second uninstall.
func TestInstallAndDeployTargets(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not found: the targets run it")
	}
	testenv.NeedsControllerManager(t)
	env := testenv.StartForTest(t)
	// kubectl delete waits until what it deletes is gone: a Namespace needs kube-controller-manager's
	// namespace controller for that, which envtest does not run.
	env.RunControllerManager(t, "namespace-controller")
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config, ""); err != nil {
		t.Fatal(err)
	}
	kube := []string{"KUBECONFIG=" + kubeconfig}
	crds := []string{"myapps.app.example.com", "verticalscalercheckpoints.app.example.com", "verticalscalers.app.example.com"}
	mustMake := func(args ...string) {
		t.Helper()
		if out, err := runMake(t, kube, args...); err != nil {
			t.Fatalf("make %s: %v\n%s\nthe CRDs then: %s", strings.Join(args, " "), err, out, describe(ctx, env.Client, crdObjects(crds)))
		}
	}

	// Until the API server's cache of a new CRD's objects has started, deleting the CRD stays
	// stuck ("could not list instances: storage is (re)initializing"): a user does not uninstall
	// or undeploy within seconds of installing, this test would.
	waitCRDCaches := func() {
		t.Helper()
		testenv.Eventually(t, time.Minute, func() error {
			for _, list := range []client.ObjectList{&v1alpha1.MyAppList{}, &v1alpha1.VerticalScalerList{}, &v1alpha1.VerticalScalerCheckpointList{}} {
				if err := env.Client.List(ctx, list, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
					return err
				}
			}
			return nil
		})
	}

	// testenv.Start installed the CRDs.
	waitCRDCaches()
	mustMake("uninstall")
	testenv.Eventually(t, time.Minute, func() error { return gone(ctx, env.Client, crdObjects(crds)...) })
	if out, err := runMake(t, kube, "uninstall"); err == nil {
		t.Errorf("a second make uninstall succeeded, want kubectl's not found:\n%s", out)
	}
	mustMake("uninstall", "ignore-not-found=true")
	mustMake("install")
	for _, crd := range crdObjects(crds) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			t.Errorf("after make install: %v", err)
		}
	}
	waitCRDCaches()

	const img = "registry.example.com/team/switchboard@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	// Before Kubernetes 1.36 (K8S_VERSION) config/default's admission policies have no API: the
	// install page sends those clusters to config/overlays/before-1.36.
	kustomization := filepath.Join("config", "default")
	if !testenv.ServesAdmissionPolicies(t, env.Config) {
		kustomization = filepath.Join("config", "overlays", "before-1.36")
	}
	mustMake("deploy", "IMG="+img, "DEPLOY_KUSTOMIZATION="+kustomization)
	want := testenv.Kustomize(t, filepath.Join(root, kustomization))
	for _, obj := range want {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Errorf("after make deploy, %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	var deployment appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "switchboard-system", Name: "switchboard-controller-manager"}, &deployment); err != nil {
		t.Fatal(err)
	}
	if got := deployment.Spec.Template.Spec.Containers[0].Image; got != img {
		t.Errorf("make deploy IMG=%s deployed the image %s", img, got)
	}

	mustMake("undeploy", "DEPLOY_KUSTOMIZATION="+kustomization)
	testenv.Eventually(t, time.Minute, func() error { return gone(ctx, env.Client, append(crdObjects(crds), &deployment)...) })
	mustMake("undeploy", "DEPLOY_KUSTOMIZATION="+kustomization, "ignore-not-found=true")
}

// crdObjects returns CRDs by name, to look up (unstructured: the test kit's client knows the
// built-in kinds and Switchboard's, not apiextensions').
func crdObjects(names []string) []client.Object {
	var out []client.Object
	for _, name := range names {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		crd.SetName(name)
		out = append(out, crd)
	}
	return out
}

// describe says, for a failure's message, whether each of objs exists, and its finalizers and
// conditions when it does.
func describe(ctx context.Context, c client.Client, objs []client.Object) string {
	var out []string
	for _, obj := range objs {
		u := obj.(*unstructured.Unstructured)
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", u.GetName(), err))
			continue
		}
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		out = append(out, fmt.Sprintf("%s: deleted %v, finalizers %v, conditions %v", u.GetName(), u.GetDeletionTimestamp(), u.GetFinalizers(), conditions))
	}
	return strings.Join(out, "; ")
}

// gone returns an error naming the first of objs that still exists.
func gone(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			return fmt.Errorf("%s still exists", obj.GetName())
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
