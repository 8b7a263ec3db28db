//go:build e2e

// Package e2e runs the manager binary as a separate process on a local cluster with the
// controllers a real cluster has (garbage collector, Deployment and ReplicaSet controllers,
// scheduler, kwok's fake kubelets): what envtest cannot show. Run with `make test-e2e`.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers"
	"github.com/example/switchboard/hack/localcluster/cluster"
)

var (
	// c is the local cluster every test shares.
	c *cluster.Cluster
	// k is an admin client that knows Switchboard's kinds.
	k client.Client
	// root is the module root: the tests run from hack/e2e.
	root = filepath.Join("..", "..")
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	c, err = cluster.Start(ctx, cluster.Config{
		Dir:        dir,
		K8sBinDir:  filepath.Join(root, "bin", "k8s"),
		Kwok:       filepath.Join(root, "bin", "kwok"),
		KwokStages: filepath.Join(root, "bin", "kwok-stages.yaml"),
		CRDDir:     filepath.Join(root, "config", "crd", "bases"),
		Nodes:      2,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "local cluster started in %s; logs in %s\n", time.Since(start).Round(time.Second), c.LogDir)
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local cluster:", err)
		}
	}()
	k, err = client.New(c.Config, client.Options{Scheme: controllers.NewScheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// manager is one manager process.
type manager struct {
	cmd     *exec.Cmd
	log     *bytes.Buffer
	metrics string // host:port of its plain-HTTP metrics endpoint
	done    chan struct{}
}

// startManager runs bin/manager against the cluster with args after the defaults; the test's
// end kills it.
func startManager(t *testing.T, args ...string) *manager {
	t.Helper()
	m := &manager{log: &bytes.Buffer{}, metrics: freeAddress(t), done: make(chan struct{})}
	all := append([]string{"--kubeconfig=" + c.Kubeconfig, "--metrics-bind-address=" + m.metrics, "--metrics-secure=false",
		"--health-probe-bind-address=" + freeAddress(t), "--zap-log-level=debug"}, args...)
	m.cmd = exec.Command(filepath.Join(root, "bin", "manager"), all...)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	// The manager dies with the test binary, whatever happens to it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("starting the manager: %v", err)
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("manager %v log (last 4 KiB):\n%s", args, tail(m.log.String(), 4096))
		}
	})
	return m
}

// kill sends SIGKILL: no lease release, no cleanup, as a crash or an OOM kill.
func (m *manager) kill() {
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// isLeader reads the manager's leader_election_master_status metric.
func (m *manager) isLeader() bool {
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.Contains(line, controllers.LeaderElectionID) {
			return strings.HasSuffix(line, " 1")
		}
	}
	return false
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// eventually polls check until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s: %v", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := k.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func myApp(ns, name string, replicas int32) *v1alpha1.MyApp {
	return &v1alpha1.MyApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.MyAppSpec{Image: "nginx:1.27", Replicas: replicas, Port: 8080},
	}
}

// TestLifecycleOnARealCluster follows one MyApp through the three controllers and the real
// garbage collector.
func TestLifecycleOnARealCluster(t *testing.T) {
	ctx := context.Background()
	startManager(t)
	ns := newNamespace(t, "lifecycle-")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"LEVEL": "info"}}
	app := myApp(ns, "web", 3)
	app.Spec.EnvFrom = []v1alpha1.ConfigMapEnvSource{{ConfigMapName: "settings"}}
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "web", UpdateMode: v1alpha1.UpdateModeOff}}
	for _, obj := range []client.Object{cm, app, vs} {
		if err := k.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// kwok makes the Pods Ready: the MyApp reaches Running with every replica ready.
	eventually(t, 2*time.Minute, func() error {
		if err := k.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
			return err
		}
		if app.Status.Phase != v1alpha1.MyAppRunning || app.Status.ReadyReplicas != 3 {
			return fmt.Errorf("phase %q readyReplicas %d, want Running 3", app.Status.Phase, app.Status.ReadyReplicas)
		}
		return nil
	})

	// A data change of the ConfigMap rolls the Deployment: a new ReplicaSet.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := k.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	hash := d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
	cm.Data["LEVEL"] = "debug"
	if err := k.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		if err := k.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		if d.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == hash {
			return fmt.Errorf("config hash still %q", hash)
		}
		var sets appsv1.ReplicaSetList
		if err := k.List(ctx, &sets, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(sets.Items) < 2 {
			return fmt.Errorf("%d ReplicaSets, want a new one for the roll", len(sets.Items))
		}
		return nil
	})

	// Deleting the VerticalScaler leaves the Deployment alone.
	if err := k.Delete(ctx, vs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if err := k.Get(ctx, client.ObjectKeyFromObject(vs), vs); !apierrors.IsNotFound(err) {
			return fmt.Errorf("VerticalScaler still there: %v", err)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // give a wrongful garbage collection time to happen
	if err := k.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil || !d.DeletionTimestamp.IsZero() {
		t.Fatalf("the Deployment went with its VerticalScaler: %v", err)
	}

	// Deleting the MyApp lets the real garbage collector delete its Deployment and Service.
	if err := k.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		for _, obj := range []client.Object{app, d, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}} {
			if err := k.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still there: %v", obj, obj.GetName(), err)
			}
		}
		return nil
	})
}

// waitConverged waits until every MyApp in ns has its Deployment and Service and reports its
// generation.
func waitConverged(t *testing.T, ns string, n int, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	eventually(t, timeout, func() error {
		var apps v1alpha1.MyAppList
		if err := k.List(ctx, &apps, client.InNamespace(ns)); err != nil {
			return err
		}
		done := 0
		for _, app := range apps.Items {
			if app.Status.ObservedGeneration == app.Generation {
				done++
			}
		}
		if done != n {
			return fmt.Errorf("%d of %d MyApps converged", done, n)
		}
		return nil
	})
}

// checkNoOrphans checks that ns holds exactly one Deployment and one Service per MyApp, each
// controlled by its MyApp.
func checkNoOrphans(t *testing.T, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	var apps v1alpha1.MyAppList
	var deployments appsv1.DeploymentList
	var services corev1.ServiceList
	for _, list := range []client.ObjectList{&apps, &deployments, &services} {
		if err := k.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	uids := map[string]string{}
	for _, app := range apps.Items {
		uids[app.Name] = string(app.UID)
	}
	if len(apps.Items) != n || len(deployments.Items) != n || len(services.Items) != n {
		t.Errorf("%d MyApps, %d Deployments, %d Services; want %d of each", len(apps.Items), len(deployments.Items), len(services.Items), n)
	}
	for _, obj := range append(objectsOf(deployments.Items), objectsOf(services.Items)...) {
		owner := metav1.GetControllerOf(obj)
		if owner == nil || owner.Kind != "MyApp" || uids[obj.GetName()] != string(owner.UID) {
			t.Errorf("%T %s is not controlled by its MyApp: %+v", obj, obj.GetName(), owner)
		}
	}
}

func objectsOf[T any, P interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]))
	}
	return out
}

// TestCrashSafety kills the manager with SIGKILL while 200 MyApps converge, then starts it
// again: every MyApp converges, with no duplicate and no orphaned object.
func TestCrashSafety(t *testing.T) {
	const n = 200
	ctx := context.Background()
	ns := newNamespace(t, "crash-")
	first := startManager(t, "--controllers=myapp", "--concurrency=myapp=4", "--watch-namespaces="+ns)
	for i := range n {
		if err := k.Create(ctx, myApp(ns, fmt.Sprintf("app-%03d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	// Kill it in the middle of the work.
	eventually(t, 2*time.Minute, func() error {
		var deployments appsv1.DeploymentList
		if err := k.List(ctx, &deployments, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(deployments.Items) < n/4 {
			return fmt.Errorf("%d Deployments so far", len(deployments.Items))
		}
		return nil
	})
	first.kill()
	startManager(t, "--controllers=myapp", "--concurrency=myapp=4", "--watch-namespaces="+ns)
	waitConverged(t, ns, n, 5*time.Minute)
	checkNoOrphans(t, ns, n)
}

// TestLeaderElection runs two managers with --leader-elect: only the leader reconciles; when it
// is killed the other takes over within the lease duration and finishes the work.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "leader-")
	args := []string{"--controllers=myapp", "--leader-elect", "--leader-election-namespace=" + ns, "--watch-namespaces=" + ns}
	a, b := startManager(t, args...), startManager(t, args...)
	var leader, standby *manager
	eventually(t, time.Minute, func() error {
		switch {
		case a.isLeader() && !b.isLeader():
			leader, standby = a, b
		case b.isLeader() && !a.isLeader():
			leader, standby = b, a
		default:
			return fmt.Errorf("leaders: a %v, b %v; want exactly one", a.isLeader(), b.isLeader())
		}
		return nil
	})
	for i := range 5 {
		if err := k.Create(ctx, myApp(ns, fmt.Sprintf("before-%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, ns, 5, time.Minute)
	if strings.Contains(standby.log.String(), `"msg":"Reconcile finished"`) {
		t.Errorf("the standby reconciled while the other manager led")
	}

	killed := time.Now()
	leader.kill()
	for i := range 5 {
		if err := k.Create(ctx, myApp(ns, fmt.Sprintf("after-%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	// controller-runtime's default lease is 15s; allow the renew and retry periods on top.
	eventually(t, 30*time.Second, func() error {
		if !standby.isLeader() {
			return fmt.Errorf("the standby has not taken over")
		}
		return nil
	})
	t.Logf("standby took over %s after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	waitConverged(t, ns, 10, time.Minute)
	checkNoOrphans(t, ns, 10)
}
