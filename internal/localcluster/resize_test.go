package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKwokResizesInPlace: kwok plays the kubelet's part in a resize. A running Pod reports the
// resources its containers run with (without which the API server resizes nothing); a resize
// through the resize subresource is reported done in the Pod's status, with the container still
// running and never restarted; a resize beyond the Node's allocatable is reported Infeasible
// (the API server's own check, PodResizeValidator, is switched off here, so that kwok's answer
// shows).
func TestKwokResizesInPlace(t *testing.T) {
	cfg := testConfig(t)
	cfg.Nodes = 1
	cfg.DisableAdmissionPlugins = []string{"PodResizeValidator"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	requests := func(cpu, memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sized"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Requests: requests("100m", "64Mi")}}}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	runsWith := func(want corev1.ResourceList) func() error {
		return func() error {
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return err
			}
			if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].Resources == nil {
				return fmt.Errorf("status reports no resources: %+v", pod.Status.ContainerStatuses)
			}
			s := pod.Status.ContainerStatuses[0]
			if !equality.Semantic.DeepEqual(s.Resources.Requests, want) || !equality.Semantic.DeepEqual(s.AllocatedResources, want) {
				return fmt.Errorf("status reports %v (allocated %v), want %v", s.Resources.Requests, s.AllocatedResources, want)
			}
			return nil
		}
	}
	poll(t, ctx, runsWith(requests("100m", "64Mi")))
	uid := pod.UID

	resize := func(cpu, memory string) error {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app",
			"resources": map[string]any{"requests": map[string]any{"cpu": cpu, "memory": memory}}}}}})
		return c.Client.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch))
	}
	if err := resize("250m", "128Mi"); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, runsWith(requests("250m", "128Mi")))
	s := pod.Status.ContainerStatuses[0]
	if pod.UID != uid || s.RestartCount != 0 || s.State.Running == nil || pod.Status.ObservedGeneration != pod.Generation {
		t.Errorf("after the resize: uid %s (was %s), restarts %d, state %+v, observed generation %d of %d; want the same Pod running, not restarted, the resize observed",
			pod.UID, uid, s.RestartCount, s.State, pod.Status.ObservedGeneration, pod.Generation)
	}

	// 64 cores on a Node of 32: Infeasible, and the Pod keeps running as it was.
	if err := resize("64", "128Mi"); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, func() error {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodResizePending && cond.Reason == corev1.PodReasonInfeasible && strings.Contains(cond.Message, "allocatable") {
				return nil
			}
		}
		return fmt.Errorf("no PodResizePending Infeasible: %+v", pod.Status.Conditions)
	})
	if err := runsWith(requests("250m", "128Mi"))(); err != nil {
		t.Errorf("after the infeasible resize: %v", err)
	}
}

// poll calls check until it succeeds or ctx ends.
func poll(t *testing.T, ctx context.Context, check func() error) {
	t.Helper()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%v: %v", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
