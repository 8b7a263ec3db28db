package verticalscaler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
	"github.com/example/switchboard/internal/testenv"
)

// checkpointed reads usage from Pod annotations every 200ms and writes checkpoints at most once
// a second, so that a test sees several in seconds.
var checkpointed = append(append([]string{}, annotationUsage...), "--checkpoint-interval=1s")

// checkpointOf reads the checkpoint of vs.
func checkpointOf(vs *v1alpha1.VerticalScaler) (*v1alpha1.VerticalScalerCheckpoint, error) {
	cp := &v1alpha1.VerticalScalerCheckpoint{}
	return cp, env.Client.Get(context.Background(), client.ObjectKeyFromObject(vs), cp)
}

// waitCheckpointSettled waits until vs's checkpoint exists and has not changed for three
// checkpoint intervals (so it holds every sample taken), and returns it.
func waitCheckpointSettled(t *testing.T, vs *v1alpha1.VerticalScaler) *v1alpha1.VerticalScalerCheckpoint {
	t.Helper()
	var cp *v1alpha1.VerticalScalerCheckpoint
	var version string
	var since time.Time
	testenv.Eventually(t, 3*timeout, func() error {
		got, err := checkpointOf(vs)
		if err != nil {
			return err
		}
		if got.ResourceVersion != version {
			cp, version, since = got, got.ResourceVersion, time.Now()
		}
		if time.Since(since) < 3*time.Second {
			return fmt.Errorf("checkpoint written %s ago", time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
	return cp
}

// forgetRecommendation clears vs's recommendation and conditions, as if it had never had one:
// the next recommendation the poller draws is then news, and shows in status.
func forgetRecommendation(t *testing.T, vs *v1alpha1.VerticalScaler) {
	t.Helper()
	if err := get(vs); err != nil {
		t.Fatal(err)
	}
	vs.Status = v1alpha1.VerticalScalerStatus{}
	if err := env.Client.Status().Update(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
}

// waitRecommendation waits until vs's status has a recommendation again and returns it.
func waitRecommendation(t *testing.T, vs *v1alpha1.VerticalScaler) *v1alpha1.Recommendation {
	t.Helper()
	testenv.Eventually(t, timeout, func() error {
		if err := get(vs); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided); c == nil || c.Status != metav1.ConditionTrue || vs.Status.Recommendation == nil {
			return fmt.Errorf("no recommendation yet: %+v", vs.Status)
		}
		return nil
	})
	return vs.Status.Recommendation
}

// withinOneBucket says whether every resource of got is within one histogram bucket (5%) of
// want's.
func withinOneBucket(want, got corev1.ResourceList) bool {
	return !recommender.Moved(want, got, 0.05)
}

// str prints a resource list as "cpu=250m memory=300Mi".
func str(l corev1.ResourceList) string {
	cpu, memory := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
	return fmt.Sprintf("cpu=%s memory=%s", cpu.String(), memory.String())
}

// readForAWhile waits for vs's first recommendation, lets the manager read its Pods' usage for
// two seconds more, then removes the usage from every Pod of vs's namespace: no read after that
// adds a sample.
func readForAWhile(t *testing.T, vs *v1alpha1.VerticalScaler) {
	t.Helper()
	ctx := context.Background()
	waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
	time.Sleep(2 * time.Second)
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(vs.Namespace)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		pods.Items[i].Annotations = nil
		if err := env.Client.Update(ctx, &pods.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartedManagerRecommendsWhatTheLastOneDid stops a manager and starts another, as a
// restart or a leader change does: the new manager's first recommendation is the last one of
// the old, drawn from the history in the checkpoint, not from the few samples it has itself.
func TestRestartedManagerRecommendsWhatTheLastOneDid(t *testing.T) {
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("500m", "256Mi")})
	newPod(t, ns, "web", "cpu=200m,memory=200Mi")
	newPod(t, ns, "web", "cpu=900m,memory=500Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff)

	old := env.StartManager(t, checkpointed...)
	// Let the history grow, then stop the usage, so that the last checkpoint holds all of it.
	readForAWhile(t, vs)
	cp := waitCheckpointSettled(t, vs)
	wantOwner := []metav1.OwnerReference{{APIVersion: "app.example.com/v1alpha1", Kind: "VerticalScaler", Name: vs.Name, UID: vs.UID, Controller: new(true)}}
	if diff := cmp.Diff(wantOwner, cp.OwnerReferences); diff != "" {
		t.Errorf("the checkpoint's owner, which the garbage collector deletes it with (-want +got):\n%s", diff)
	}
	if data, err := json.Marshal(cp); err == nil {
		managed, _ := json.Marshal(cp.ManagedFields)
		// What the API server adds to what the poller sends.
		sent := cp.DeepCopy()
		sent.ManagedFields, sent.UID, sent.ResourceVersion, sent.Generation, sent.CreationTimestamp = nil, "", "", 0, metav1.Time{}
		sentData, _ := json.Marshal(sent)
		t.Logf("checkpoint of 1 container, 2 Pods, %d samples: %d bytes as stored, %d more than sent, of which managed fields %d",
			cp.Status.Containers[0].Samples, len(data), len(data)-len(sentData)+len(`,"creationTimestamp":null`), len(managed))
	}
	// The old manager's last recommendation, drawn from its whole history.
	forgetRecommendation(t, vs)
	before := waitRecommendation(t, vs)
	if before.ContainerRecommendations[0].Samples < 4 {
		t.Fatalf("the old manager's recommendation rests on %d samples, want a history", before.ContainerRecommendations[0].Samples)
	}

	old.Stop()
	forgetRecommendation(t, vs)
	env.StartManager(t, checkpointed...)
	after := waitRecommendation(t, vs)
	b, a := before.ContainerRecommendations[0], after.ContainerRecommendations[0]
	t.Logf("the old manager's last recommendation: target %s, bounds %s to %s; the new one's first: target %s, bounds %s to %s",
		str(b.Target), str(b.LowerBound), str(b.UpperBound), str(a.Target), str(a.LowerBound), str(a.UpperBound))
	if a.Samples != b.Samples || !a.FirstSampleTime.Equal(b.FirstSampleTime) || !a.LastSampleTime.Equal(b.LastSampleTime) {
		t.Errorf("the new manager's history: %d samples from %v to %v; want the old one's, %d from %v to %v",
			a.Samples, a.FirstSampleTime, a.LastSampleTime, b.Samples, b.FirstSampleTime, b.LastSampleTime)
	}
	for _, c := range []struct {
		what      string
		want, got corev1.ResourceList
	}{{"target", b.Target, a.Target}, {"lower bound", b.LowerBound, a.LowerBound}, {"upper bound", b.UpperBound, a.UpperBound}} {
		if !withinOneBucket(c.want, c.got) {
			t.Errorf("the new manager's first %s %v, want the old one's last %v within one bucket", c.what, c.got, c.want)
		}
	}
	// Its history has not changed since the checkpoint: nothing to write.
	time.Sleep(2 * time.Second)
	if now, err := checkpointOf(vs); err != nil || now.ResourceVersion != cp.ResourceVersion {
		t.Errorf("the checkpoint was written again with nothing new (%v)", err)
	}
}

// TestInvalidCheckpointIsAWarningAndIsReplaced: a checkpoint of another version of the encoding
// is reported on its VerticalScaler, the history starts over, and the next write replaces it.
func TestInvalidCheckpointIsAWarningAndIsReplaced(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{})
	newPod(t, ns, "web", "cpu=300m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff)
	bad := &v1alpha1.VerticalScalerCheckpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vs.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "app.example.com/v1alpha1", Kind: "VerticalScaler", Name: vs.Name, UID: vs.UID, Controller: new(true)}}},
		Spec:   v1alpha1.VerticalScalerCheckpointSpec{DeploymentName: "web"},
		Status: v1alpha1.VerticalScalerCheckpointStatus{Version: "v0", WriteTime: metav1.Now()},
	}
	if err := env.Client.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}

	env.StartManager(t, checkpointed...)
	waitCondition(t, vs, v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, v1alpha1.ReasonRecommended)
	warning := waitEvents(t, vs, v1alpha1.ReasonCheckpointInvalid, 1)[0]
	if warning.Type != corev1.EventTypeWarning || !strings.Contains(warning.Note, `checkpoint version "v0"`) {
		t.Errorf("Event %s %q, want a Warning that says why", warning.Type, warning.Note)
	}
	testenv.Eventually(t, timeout, func() error {
		cp, err := checkpointOf(vs)
		if err != nil {
			return err
		}
		if cp.Status.Version != recommender.CheckpointVersion || len(cp.Status.Containers) != 1 {
			return fmt.Errorf("checkpoint version %q with %d containers, want this manager's", cp.Status.Version, len(cp.Status.Containers))
		}
		return nil
	})
}

// TestGracefulStopKeepsEveryRead stops a manager gracefully after N reads, with a checkpoint
// interval longer than the test, so that only the first read was checkpointed on the way: the
// stop writes the rest, and the restarted manager's history holds all N.
func TestGracefulStopKeepsEveryRead(t *testing.T) {
	ns := env.Namespace(t, "vs-")
	newDeployment(t, ns, "web", corev1.ResourceRequirements{Requests: list("500m", "256Mi")})
	newPod(t, ns, "web", "cpu=400m,memory=300Mi")
	vs := newScaler(t, ns, "web", "web", v1alpha1.UpdateModeOff)
	longInterval := append(append([]string{}, annotationUsage...), "--checkpoint-interval=1h")

	old := env.StartManager(t, longInterval...)
	// Some reads, then no more: the history stops at N samples.
	readForAWhile(t, vs)
	time.Sleep(time.Second)
	// N, as the old manager recommends from its whole history.
	forgetRecommendation(t, vs)
	n := waitRecommendation(t, vs).ContainerRecommendations[0].Samples
	if n < 5 {
		t.Fatalf("%d reads, want a history of several", n)
	}
	if cp, err := checkpointOf(vs); err != nil || cp.Status.Containers[0].Samples >= n {
		t.Fatalf("before the stop the checkpoint holds %v (%v), want fewer than %d samples: the interval is an hour", cp.Status.Containers, err, n)
	}

	old.Stop()
	cp, err := checkpointOf(vs)
	if err != nil {
		t.Fatal(err)
	}
	if got := cp.Status.Containers[0].Samples; got != n {
		t.Errorf("after the stop the checkpoint holds %d samples, want all %d", got, n)
	}
	forgetRecommendation(t, vs)
	env.StartManager(t, longInterval...)
	after := waitRecommendation(t, vs)
	if got := after.ContainerRecommendations[0].Samples; got != n {
		t.Errorf("the restarted manager's history holds %d samples, want all %d reads of the stopped one", got, n)
	}
}
