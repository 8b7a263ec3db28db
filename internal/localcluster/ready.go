package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyTimeout bounds the wait for the controller manager and the Nodes once the processes run.
const readyTimeout = 60 * time.Second

// addNodes creates the fake Nodes node-1, node-2, ...
func (c *Cluster) addNodes(ctx context.Context, n int) error {
	for i := 1; i <= n; i++ {
		if err := c.Client.Create(ctx, fakeNode(fmt.Sprintf("node-%d", i))); err != nil {
			return fmt.Errorf("creating fake Node node-%d: %w", i, err)
		}
	}
	return nil
}

// waitReady waits until kwok has made every Node Ready, kube-controller-manager has created
// the default namespace's ServiceAccount, which shows that its controllers run, and the
// APIService of metrics.k8s.io is Available, which shows that kube-apiserver reaches
// metrics-server. Pods' metrics come later: metrics-server needs three scrapes of a new Pod
// (see metricResolution).
func (c *Cluster) waitReady(ctx context.Context, nodes int) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := c.poll(ctx, func() (bool, error) { return c.nodesReady(ctx, nodes) }); err != nil {
		return fmt.Errorf("waiting for kwok to make the Nodes Ready (see %s): %w", filepath.Join(c.LogDir, "kwok.log"), err)
	}
	if err := c.poll(ctx, func() (bool, error) { return c.serviceAccountExists(ctx) }); err != nil {
		return fmt.Errorf("waiting for kube-controller-manager to create the default ServiceAccount (see %s): %w",
			filepath.Join(c.LogDir, controllerManagerBin+".log"), err)
	}
	if err := c.poll(ctx, func() (bool, error) { return c.metricsAPIAvailable(ctx) }); err != nil {
		return fmt.Errorf("waiting for the APIService %s to be Available (see %s and %s): %w", metricsAPIService,
			filepath.Join(c.LogDir, metricsServerBin+".log"), filepath.Join(c.LogDir, apiServerBin+".log"), err)
	}
	return nil
}

// nodesReady reports whether n Nodes have the condition Ready=True.
func (c *Cluster) nodesReady(ctx context.Context, n int) (bool, error) {
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err != nil {
		return false, err
	}
	ready := 0
	for _, node := range nodes.Items {
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready >= n, nil
}

// serviceAccountExists reports whether default/default exists.
func (c *Cluster) serviceAccountExists(ctx context.Context) (bool, error) {
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// poll calls done every 200ms until it returns true, a process of the cluster exits, or ctx
// ends.
func (c *Cluster) poll(ctx context.Context, done func() (bool, error)) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		lastErr = err
		select {
		case exit := <-c.exits:
			return fmt.Errorf("%s exited: %v", exit.Name, exit.Err)
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
