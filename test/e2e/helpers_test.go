package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/manifests"
	"github.com/example/switchboard/internal/testenv"
)

// The names the shipped manifests give the manager.
const (
	managerNamespace = "switchboard-system"
	serviceAccount   = "switchboard-controller-manager"
)

// kubectl runs kubectl as the admin and fails the test on error.
func (c *testCluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// deploy applies a kustomization of config/ as `kubectl apply --server-side -k` and waits for
// its CRDs, and for its MyApp finalizer policy to take effect when it has one. It returns the
// manager's container args from the rendered Deployment.
func (c *testCluster) deploy(t *testing.T, kustomization string) []string {
	t.Helper()
	dir := filepath.Join(root, "config", kustomization)
	_, args := c.apply(t, []byte(c.kubectl(t, "kustomize", dir)), "-k", dir)
	return args
}

// deployFile is deploy for a file of manifests, `kubectl apply --server-side -f path`. It
// returns the manager's container too.
func (c *testCluster) deployFile(t *testing.T, path string) (corev1.Container, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.apply(t, data, "-f", path)
}

// apply applies manifests, which kubectl reads from source ("-k DIR" or "-f FILE"), and waits
// for their CRDs and MyApp finalizer policy; it returns the manager's container and its args.
func (c *testCluster) apply(t *testing.T, manifestsData []byte, source ...string) (corev1.Container, []string) {
	t.Helper()
	var container corev1.Container
	var args []string
	var crds []string
	finalizerPolicy := false
	objs, err := manifests.Decode(manifestsData)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		switch obj.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, "crd/"+obj.GetName())
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := fromUnstructured(obj, d); err != nil {
				t.Fatal(err)
			}
			container = d.Spec.Template.Spec.Containers[0]
			args = container.Args
		case "MutatingAdmissionPolicy":
			finalizerPolicy = true
		}
	}
	if args == nil {
		t.Fatalf("no manager Deployment in %v", source)
	}
	c.kubectl(t, append([]string{"apply", "--server-side"}, source...)...)
	c.waitEstablished(t, crds...)
	if finalizerPolicy {
		c.waitFinalizerPolicy(t)
	}
	return container, args
}

// waitFinalizerPolicy waits until the API server sets the MyApp finalizer at creation, as the
// myapp component's admission policy asks (README, The controllers).
func (c *testCluster) waitFinalizerPolicy(t *testing.T) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		return testenv.FinalizerSetAtCreation(context.Background(), c.admin, metav1.NamespaceDefault)
	})
}

// waitEstablished waits until the API server serves the named CRDs ("crd/NAME").
func (c *testCluster) waitEstablished(t *testing.T, crds ...string) {
	t.Helper()
	if len(crds) > 0 {
		c.kubectl(t, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the manager's
// ServiceAccount with a token from the TokenRequest API, as the Pod's projected token would.
func (c *testCluster) serviceAccountKubeconfig(t *testing.T) (string, *rest.Config) {
	t.Helper()
	ctx := context.Background()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
	tok, err := c.clientset.CoreV1().ServiceAccounts(managerNamespace).CreateToken(ctx, serviceAccount, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", managerNamespace, serviceAccount, err)
	}
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(path, cfg, managerNamespace); err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// startManager runs the manager with the Deployment's args, as the ServiceAccount, with its
// listeners moved to free loopback ports and the leader-election namespace given (in a Pod the
// manager reads it from the ServiceAccount's files). extra flags come last and win. The kit
// stops it at the end of the test, logs its output if the test failed, and saves it to
// SWITCHBOARD_E2E_LOG_DIR when that is set.
func startManager(t *testing.T, kubeconfig string, deploymentArgs []string, extra ...string) *testenv.Process {
	t.Helper()
	probes, metrics := testenv.FreeAddress(t), testenv.FreeAddress(t)
	args := append([]string{}, deploymentArgs...)
	args = append(args,
		"--kubeconfig="+kubeconfig,
		"--leader-election-namespace="+managerNamespace,
		"--health-probe-bind-address="+probes,
		"--metrics-bind-address="+metrics,
	)
	logDir := os.Getenv("SWITCHBOARD_E2E_LOG_DIR")
	if logDir != "" {
		// Captured logs feed the log analyzer's tests: they need the debug reconcile-end lines.
		args = append(args, "--zap-log-level=debug")
	}
	args = append(args, extra...)
	// The kit reads /metrics over plain HTTP, which the tests that read it ask for with
	// --metrics-secure=false.
	return testenv.RunProcess(t, testenv.Command{Binary: manager, Args: args, ProbeAddress: probes, MetricsAddress: metrics, LogDir: logDir})
}

// clientAs returns a client that authenticates with cfg.
func clientAs(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually polls check until it returns nil or timeout passes; four times a second, not
// faster, because checks list objects of a cluster that also runs the controllers under test.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	testenv.Poll(t, timeout, 250*time.Millisecond, check)
}

// createMyApp creates a MyApp running nginx:1.27. A kube-apiserver that has just started
// answers a MyApp create with 503 until its admission policy plugin has read the MyApp schema
// (it polls the OpenAPI every 5 s): that answer is retried, as a client of a restarted API
// server would.
func createMyApp(t *testing.T, c *testCluster, ns, name string, replicas int32) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		app := &v1alpha1.MyApp{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: replicas, Port: 8080},
		}
		err := c.admin.Create(context.Background(), app)
		if err != nil && !apierrors.IsServiceUnavailable(err) {
			t.Fatal(err)
		}
		return err
	})
}

// waitDeployments waits until ns holds at least n Deployments.
func waitDeployments(t *testing.T, c *testCluster, ns string, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() error {
		var deployments appsv1.DeploymentList
		if err := c.admin.List(context.Background(), &deployments, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(deployments.Items) < n {
			return fmt.Errorf("%d Deployments so far, waiting for %d", len(deployments.Items), n)
		}
		return nil
	})
}

func fromUnstructured(obj *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into)
}
