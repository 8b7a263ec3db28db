package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StartForTest starts a control plane of the test's own (Start, with apiServerFlags), stopped
// when the test ends: for the tests of a package whose other tests need none.
func StartForTest(t testing.TB, apiServerFlags ...string) *Env {
	t.Helper()
	env, err := Start(apiServerFlags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// NeedsControllerManager skips the test unless SWITCHBOARD_E2E=1, as `make test-e2e` sets it:
// kube-controller-manager is one of the local cluster's binaries, which `make test` does not
// build (envtest needs only etcd and kube-apiserver), so the few envtest tests that run it belong
// to the end-to-end run. A test calls it first, before it starts anything.
func NeedsControllerManager(t testing.TB) {
	t.Helper()
	if os.Getenv("SWITCHBOARD_E2E") != "1" {
		t.Skip("needs kube-controller-manager: runs in `make test-e2e` (SWITCHBOARD_E2E=1)")
	}
}

// RunControllerManager runs kube-controller-manager's given controllers (by their --controllers
// names, such as clusterrole-aggregation-controller) against the control plane for the rest of
// the test, as the admin: envtest runs no controllers, and some behaviour a test asserts is
// theirs, not the API server's. The binary is found where envtest's are (KUBEBUILDER_ASSETS, else
// bin/k8s, where `make test-e2e` builds it); the test is skipped as NeedsControllerManager says.
func (e *Env) RunControllerManager(t testing.TB, controllers ...string) *Process {
	t.Helper()
	NeedsControllerManager(t)
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	binary := filepath.Join(dir, "kube-controller-manager")
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("no kube-controller-manager in %s: run `make envtest-assets` (or `make test`) first", dir)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(kubeconfig, e.Config, ""); err != nil {
		t.Fatal(err)
	}
	return RunProcess(t, Command{Binary: binary, Args: []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		// Serves nothing, so it takes no port.
		"--secure-port=0",
	}})
}
