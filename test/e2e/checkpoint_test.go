package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// checkpointArgs make the verticalscaler read usage from Pod annotations every second (the local
// cluster of this branch serves no metrics.k8s.io) and checkpoint its history every 2 seconds,
// so that a leader change within the test finds a checkpoint to read back.
var checkpointArgs = []string{"--usage-source=pod-annotations", "--usage-interval=1s", "--checkpoint-interval=2s"}

// sizedWorkload is a Deployment whose Pods report usage, and the VerticalScaler of it.
type sizedWorkload struct {
	c  *testCluster
	vs *v1alpha1.VerticalScaler
}

// newSizedWorkload creates Deployment "sized" of two Pods (kwok runs them) whose container
// reports usage through its annotation, and a VerticalScaler of it in Off mode.
func newSizedWorkload(t *testing.T, c *testCluster, ns string) *sizedWorkload {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "sized"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sized"}, Spec: appsv1.DeploymentSpec{
		Replicas: new(int32(2)),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{v1alpha1.UsageAnnotationPrefix + "app": "cpu=400m,memory=300Mi"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}},
		},
	}}
	if err := c.admin.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	vs := &v1alpha1.VerticalScaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sized"},
		Spec: v1alpha1.VerticalScalerSpec{DeploymentName: "sized", UpdateMode: v1alpha1.UpdateModeOff}}
	if err := c.admin.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	return &sizedWorkload{c: c, vs: vs}
}

// recommendation waits until the VerticalScaler's status has a recommendation and returns it.
func (w *sizedWorkload) recommendation(t *testing.T, timeout time.Duration) v1alpha1.ContainerRecommendation {
	t.Helper()
	eventually(t, timeout, func() error {
		if err := w.c.admin.Get(context.Background(), client.ObjectKeyFromObject(w.vs), w.vs); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(w.vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided); c == nil ||
			c.Status != metav1.ConditionTrue || w.vs.Status.Recommendation == nil {
			return fmt.Errorf("no recommendation yet: %+v", w.vs.Status.Conditions)
		}
		return nil
	})
	return w.vs.Status.Recommendation.ContainerRecommendations[0]
}

// forget clears the VerticalScaler's status, so that the next recommendation the leader draws
// is news and shows there.
func (w *sizedWorkload) forget(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := w.c.admin.Get(ctx, client.ObjectKeyFromObject(w.vs), w.vs); err != nil {
		t.Fatal(err)
	}
	w.vs.Status = v1alpha1.VerticalScalerStatus{}
	if err := w.c.admin.Status().Update(ctx, w.vs); err != nil {
		t.Fatal(err)
	}
}

// stopUsage removes the usage annotations from the Pods (their ReplicaSet leaves them be), then
// waits until the checkpoint has not changed for three intervals: it holds every sample.
func (w *sizedWorkload) stopUsage(t *testing.T) *v1alpha1.VerticalScalerCheckpoint {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := w.c.admin.List(ctx, &pods, client.InNamespace(w.vs.Namespace), client.MatchingLabels{"app": "sized"}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		patch := client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"annotations":{"`+v1alpha1.UsageAnnotationPrefix+`app":null}}}`))
		if err := w.c.admin.Patch(ctx, &pods.Items[i], patch); err != nil {
			t.Fatal(err)
		}
	}
	cp := &v1alpha1.VerticalScalerCheckpoint{}
	var version string
	var since time.Time
	eventually(t, time.Minute, func() error {
		if err := w.c.admin.Get(ctx, client.ObjectKeyFromObject(w.vs), cp); err != nil {
			return err
		}
		if cp.ResourceVersion != version {
			version, since = cp.ResourceVersion, time.Now()
		}
		if time.Since(since) < 6*time.Second {
			return fmt.Errorf("checkpoint written %s ago", time.Since(since).Round(time.Second))
		}
		return nil
	})
	return cp
}

// sameRecommendation fails the test unless after, a new leader's first recommendation, is
// before, the old leader's last: the same history, and each figure within one bucket.
func sameRecommendation(t *testing.T, before, after v1alpha1.ContainerRecommendation) {
	t.Helper()
	t.Logf("the old leader's last recommendation: target %s/%s, %d samples; the new leader's first: target %s/%s, %d samples",
		before.Target.Cpu(), before.Target.Memory(), before.Samples, after.Target.Cpu(), after.Target.Memory(), after.Samples)
	if after.Samples != before.Samples || !after.FirstSampleTime.Equal(before.FirstSampleTime) || !after.LastSampleTime.Equal(before.LastSampleTime) {
		t.Errorf("the new leader's history: %d samples from %v to %v; want the old leader's, %d from %v to %v",
			after.Samples, after.FirstSampleTime, after.LastSampleTime, before.Samples, before.FirstSampleTime, before.LastSampleTime)
	}
	for _, c := range []struct {
		what      string
		want, got corev1.ResourceList
	}{{"target", before.Target, after.Target}, {"lower bound", before.LowerBound, after.LowerBound}, {"upper bound", before.UpperBound, after.UpperBound}} {
		if recommender.Moved(c.want, c.got, 0.05) {
			t.Errorf("the new leader's first %s %v, want the old leader's last %v within one bucket", c.what, c.got, c.want)
		}
	}
}

// deletedWithItsVerticalScaler deletes the VerticalScaler and waits until the garbage collector
// has deleted its checkpoint too.
func (w *sizedWorkload) deletedWithItsVerticalScaler(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := w.c.admin.Delete(ctx, w.vs); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		err := w.c.admin.Get(ctx, client.ObjectKeyFromObject(w.vs), &v1alpha1.VerticalScalerCheckpoint{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("checkpoint still there after its VerticalScaler was deleted (%v)", err)
		}
		return nil
	})
}
