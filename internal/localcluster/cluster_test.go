package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testConfig finds the binaries `make run` builds, or skips the test.
func testConfig(t *testing.T) Config {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	k8s := os.Getenv("KUBEBUILDER_ASSETS")
	if k8s == "" {
		k8s = filepath.Join(root, "bin", "k8s")
	}
	cfg := Config{
		Dir:           t.TempDir(),
		K8sBinDir:     k8s,
		Kwok:          filepath.Join(root, "bin", "kwok"),
		KwokStages:    filepath.Join(root, "bin", "kwok-stages.yaml"),
		KwokMetrics:   filepath.Join(root, "bin", "kwok-metrics.yaml"),
		MetricsServer: filepath.Join(root, "bin", "metrics-server"),
		Nodes:         2,
	}
	if err := cfg.check(); err != nil {
		t.Skipf("no local cluster: %v", err)
	}
	return cfg
}

// TestStartStop starts a cluster, checks that a Deployment's Pods get created, scheduled and
// Ready (kube-controller-manager, kube-scheduler and kwok at work), that the Deployment
// survives two restarts of the API server, that an orphaned ReplicaSet is garbage-collected
// after them, and that Stop leaves no process behind (the restarted API server included).
func TestStartStop(t *testing.T) {
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster started in %s", time.Since(began).Round(100*time.Millisecond))
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(4)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if err := c.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(d), d)
		return err == nil && d.Status.ReadyReplicas == 4
	}, "4 ready replicas")
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 2 {
		t.Errorf("Pods on Nodes %v: the scheduler should spread 4 Pods over both fake Nodes", nodes)
	}

	// RestartAPIServer, first of envtest's kube-apiserver and then of its own: the admin's
	// kubeconfig stays valid and etcd keeps the objects. The garbage collection below shows
	// that kube-controller-manager reconnected.
	for i := 1; i <= 2; i++ {
		began := time.Now()
		if err := c.RestartAPIServer(ctx); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		t.Logf("restart %d: kube-apiserver ready again in %s", i, time.Since(began).Round(100*time.Millisecond))
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatalf("getting the Deployment after restart %d: %v", i, err)
		}
	}

	// Deleting the Deployment orphans nothing: the garbage collector removes its ReplicaSet.
	if err := c.Client.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool {
		var rs appsv1.ReplicaSetList
		return c.Client.List(ctx, &rs, client.InNamespace("default")) == nil && len(rs.Items) == 0
	}, "the ReplicaSet garbage-collected")

	stopped = true
	if err := c.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	left, err := childGroupLeaders(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("processes left after Stop: %v", left)
	}
}

// waitFor polls done until it returns true or ctx ends.
func waitFor(t *testing.T, ctx context.Context, done func() bool, what string) {
	t.Helper()
	for !done() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
