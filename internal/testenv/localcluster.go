package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/internal/localcluster"
	"github.com/example/switchboard/internal/manifests"
)

// The names the shipped manifests give the manager: its namespace, which holds its Leases, and
// its ServiceAccount.
const (
	ManagerNamespace      = "switchboard-system"
	ManagerServiceAccount = "switchboard-controller-manager"
)

// LocalCluster is the local cluster of `make run` (internal/localcluster: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok and metrics-server) for one
// test, with admin clients: what the end-to-end, chaos and soak tests run the manager on.
type LocalCluster struct {
	*localcluster.Cluster
	// Admin is an uncached client for the admin, with the manager's scheme.
	Admin client.Client
	// Clientset is the admin's typed clientset.
	Clientset *kubernetes.Clientset
}

// LocalClusterConfig is the configuration of a local cluster with nodes fake Nodes, in a
// directory of the test's. The binaries come from KUBEBUILDER_ASSETS, KWOK, KWOK_STAGES,
// KWOK_METRICS and METRICS_SERVER when set (the Makefile sets them), else from bin/ at the
// module root, where `make kwok metrics-server` and `make envtest-assets` build them.
func LocalClusterConfig(t testing.TB, nodes int) localcluster.Config {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	return localcluster.Config{
		Dir:           t.TempDir(),
		K8sBinDir:     envOr("KUBEBUILDER_ASSETS", filepath.Join(bin, "k8s")),
		Kwok:          envOr("KWOK", filepath.Join(bin, "kwok")),
		KwokStages:    envOr("KWOK_STAGES", filepath.Join(bin, "kwok-stages.yaml")),
		KwokMetrics:   envOr("KWOK_METRICS", filepath.Join(bin, "kwok-metrics.yaml")),
		MetricsServer: envOr("METRICS_SERVER", filepath.Join(bin, "metrics-server")),
		Nodes:         nodes,
	}
}

// StartLocalCluster starts a local cluster of LocalClusterConfig and stops it when the test
// ends, after what the test started later (its managers).
func StartLocalCluster(t testing.TB, nodes int) *LocalCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, LocalClusterConfig(t, nodes))
	if err != nil {
		t.Fatalf("starting the local cluster: %v", err)
	}
	// Registered first, so that it runs last: after the managers and namespaces of the test.
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	lc := &LocalCluster{Cluster: c}
	if lc.Admin, err = client.New(c.Config, client.Options{Scheme: controllers.NewScheme()}); err != nil {
		t.Fatal(err)
	}
	if lc.Clientset, err = kubernetes.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	return lc
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// Kubectl runs kubectl as the admin and fails the test on error.
func (c *LocalCluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed to apply the manifests with kustomize: %v", err)
	}
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// Deploy applies a kustomization of config/ (such as "default" or "overlays/ha") as `kubectl
// apply --server-side -k` and waits for its CRDs, and for its MyApp finalizer policy to take
// effect when it has one. It returns the manager's container args from the rendered
// Deployment.
func (c *LocalCluster) Deploy(t testing.TB, kustomization string) []string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "config", kustomization)
	_, args := c.apply(t, []byte(c.Kubectl(t, "kustomize", dir)), "-k", dir)
	return args
}

// DeployFile is Deploy for a file of manifests, `kubectl apply --server-side -f path` (the
// release's dist/install.yaml). It returns the manager's container too.
func (c *LocalCluster) DeployFile(t testing.TB, path string) (corev1.Container, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.apply(t, data, "-f", path)
}

// apply applies manifests, which kubectl reads from source ("-k DIR" or "-f FILE"), and waits
// for their CRDs and MyApp finalizer policy; it returns the manager's container and its args.
// On an API server that serves no MutatingAdmissionPolicy v1 (before Kubernetes 1.36) it
// applies them without their admission policies, as the installer for those minors is.
func (c *LocalCluster) apply(t testing.TB, data []byte, source ...string) (corev1.Container, []string) {
	t.Helper()
	var container corev1.Container
	var crds []string
	finalizerPolicy := false
	objs, err := manifests.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !ServesAdmissionPolicies(t, c.Config) {
		objs = slices.DeleteFunc(objs, func(obj *unstructured.Unstructured) bool {
			return strings.HasPrefix(obj.GetKind(), "MutatingAdmissionPolicy")
		})
		var out bytes.Buffer
		for _, obj := range objs {
			doc, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString("---\n")
			out.Write(doc)
		}
		path := filepath.Join(t.TempDir(), "manifests.yaml")
		if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		source = []string{"-f", path}
	}
	for _, obj := range objs {
		switch obj.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, "crd/"+obj.GetName())
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
				t.Fatal(err)
			}
			container = d.Spec.Template.Spec.Containers[0]
		case "MutatingAdmissionPolicy":
			// The myapp component's (the verticalscaler's sizes Pods, whose creation this
			// cannot wait for without a workload).
			finalizerPolicy = finalizerPolicy || strings.HasSuffix(obj.GetName(), "-myapp-finalizer")
		}
	}
	if container.Args == nil {
		t.Fatalf("no manager Deployment in %v", source)
	}
	c.Kubectl(t, append([]string{"apply", "--server-side"}, source...)...)
	c.WaitEstablished(t, crds...)
	if finalizerPolicy {
		// The API server sets the MyApp finalizer at creation, as the myapp component's
		// admission policy asks, a moment after the policy is applied.
		Poll(t, time.Minute, 250*time.Millisecond, func() error {
			return FinalizerSetAtCreation(context.Background(), c.Admin, metav1.NamespaceDefault)
		})
	}
	return container, container.Args
}

// WaitEstablished waits until the API server serves the named CRDs ("crd/NAME").
func (c *LocalCluster) WaitEstablished(t testing.TB, crds ...string) {
	t.Helper()
	if len(crds) > 0 {
		c.Kubectl(t, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...)
	}
}

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the manager's
// ServiceAccount of the shipped manifests with a token from the TokenRequest API, as the Pod's
// projected token would, and returns it with the same connection as a REST config.
func (c *LocalCluster) ServiceAccountKubeconfig(t testing.TB) (string, *rest.Config) {
	t.Helper()
	return c.ServiceAccountKubeconfigOf(t, ManagerNamespace, ManagerServiceAccount)
}

// ServiceAccountKubeconfigOf is ServiceAccountKubeconfig for the ServiceAccount namespace/name,
// such as a Helm release's.
func (c *LocalCluster) ServiceAccountKubeconfigOf(t testing.TB, namespace, name string) (string, *rest.Config) {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3 * 3600))}}
	tok, err := c.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", namespace, name, err)
	}
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, cfg, namespace); err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// RunManager runs binary (the manager, as Build builds it) with its Deployment's args and the
// kubeconfig, with its listeners moved to free loopback ports and the leader-election namespace
// given (in a Pod the manager reads it from the ServiceAccount's files); extra flags come last
// and win. The kit stops it at the end of the test, logs its output if the test failed, and
// saves it to SWITCHBOARD_E2E_LOG_DIR when that is set (with debug lines, which the log
// analyzer's tests read). Its /metrics is read over plain HTTP by the tests that pass
// --metrics-secure=false.
func RunManager(t testing.TB, binary, kubeconfig string, deploymentArgs []string, extra ...string) *Process {
	t.Helper()
	return RunManagerAs(t, Command{Binary: binary}, kubeconfig, deploymentArgs, extra...)
}

// RunManagerAs is RunManager for a manager confined as c says (Root, User, Env), such as the
// image's binary in a root laid out as the image's filesystem: c.Binary and kubeconfig are then
// paths inside c.Root.
func RunManagerAs(t testing.TB, c Command, kubeconfig string, deploymentArgs []string, extra ...string) *Process {
	t.Helper()
	probes, metrics := FreeAddress(t), FreeAddress(t)
	args := append([]string{}, deploymentArgs...)
	args = append(args,
		"--kubeconfig="+kubeconfig,
		"--leader-election-namespace="+ManagerNamespace,
		"--health-probe-bind-address="+probes,
		"--metrics-bind-address="+metrics,
	)
	logDir := os.Getenv("SWITCHBOARD_E2E_LOG_DIR")
	if logDir != "" {
		args = append(args, "--zap-log-level=debug")
	}
	args = append(args, extra...)
	c.Args, c.ProbeAddress, c.MetricsAddress, c.LogDir = args, probes, metrics, logDir
	return RunProcess(t, c)
}
