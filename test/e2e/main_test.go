// Package e2e runs the manager as a separate process, deployed from the shipped manifests, on
// a local cluster with real controllers (internal/localcluster: kube-controller-manager,
// kube-scheduler, kwok). `make test-e2e` runs it; elsewhere it is skipped unless
// SWITCHBOARD_E2E=1, because it needs the binaries `make run` builds and takes minutes.
//
// The manager is the binary of the image users pull: `make test-e2e` builds the image and the
// installer (make image, make build-installer), takes the binary out of the image's layer for
// this machine's platform, and names it in SWITCHBOARD_E2E_MANAGER (and the image's CA bundle in
// SWITCHBOARD_E2E_CA_BUNDLE). No test builds another.
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
// that what one test deploys cannot change what another sees, and the tests run in parallel
// (`make test-e2e` runs E2E_PARALLEL at once).
var manager string

// The release `make test-e2e` made, from the environment: the installer (dist/install.yaml),
// the digest of the image index the manager binary comes from, and the version it was stamped
// with.
var (
	installer      = os.Getenv("SWITCHBOARD_E2E_INSTALLER")
	imageDigest    = os.Getenv("SWITCHBOARD_E2E_IMAGE_DIGEST")
	stampedVersion = os.Getenv("SWITCHBOARD_E2E_VERSION")
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("SWITCHBOARD_E2E") != "1" {
		fmt.Println("e2e tests skipped: run `make test-e2e`")
		return 0
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	if _, err := exec.LookPath("kubectl"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kubectl is needed to apply the manifests with kustomize:", err)
		return 1
	}
	// The manager as it ships: the binary of the image's layer.
	if manager = os.Getenv("SWITCHBOARD_E2E_MANAGER"); manager == "" || installer == "" || imageDigest == "" || stampedVersion == "" {
		fmt.Fprintln(os.Stderr, "e2e: SWITCHBOARD_E2E_MANAGER, _INSTALLER, _IMAGE_DIGEST and _VERSION name the release under test: run `make test-e2e`, which makes them")
		return 1
	}
	out, err := exec.Command(manager, "--version").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %s --version: %v\n", manager, err)
		return 1
	}
	fmt.Printf("The manager under test, from the image %s:\n%s", imageDigest, out)
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
