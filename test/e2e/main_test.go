// Package e2e runs the manager as a separate process, deployed from the shipped manifests, on
// a local cluster with real controllers (hack/localcluster/cluster: kube-controller-manager,
// kube-scheduler, kwok). `make test-e2e` runs it; elsewhere it is skipped unless
// SWITCHBOARD_E2E=1, because it needs the binaries `make run` builds and takes minutes.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/example/switchboard/internal/testenv"
)

// root is the module root, from this package's directory.
var root = filepath.Join("..", "..")

// manager is the manager binary, shared by every test; each test starts its own cluster, so
// that what one test deploys cannot change what another sees.
var manager string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("SWITCHBOARD_E2E") != "1" {
		fmt.Println("e2e tests skipped: run `make test-e2e` (or set SWITCHBOARD_E2E=1 after `make kwok`)")
		return 0
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	if _, err := exec.LookPath("kubectl"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kubectl is needed to apply the manifests with kustomize:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The manager as it ships (`make build`'s flags).
	manager = filepath.Join(dir, "manager")
	if err := testenv.Build(".", manager); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// testCluster is a test's local cluster and its admin clients.
type testCluster struct {
	*testenv.LocalCluster
	admin     client.Client
	clientset *kubernetes.Clientset
}

// newCluster starts a local cluster with two fake Nodes for the test and stops it at the end.
func newCluster(t *testing.T) *testCluster {
	t.Helper()
	c := testenv.StartLocalCluster(t, 2)
	return &testCluster{LocalCluster: c, admin: c.Admin, clientset: c.Clientset}
}
