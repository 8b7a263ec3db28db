package configmapwatcher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/testenv"
)

// job returns a Job running spec, opted in with our annotation when reload is not empty.
func job(ns, name, reload string, spec corev1.PodSpec) *batchv1.Job {
	spec.RestartPolicy = corev1.RestartPolicyNever
	if len(spec.Containers) == 0 {
		spec.Containers = []corev1.Container{{Name: "app", Image: "busybox:1.36"}}
	}
	backoff := int32(2)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "blue"}},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, Template: corev1.PodTemplateSpec{Spec: spec}}}
	if reload != "" {
		j.Annotations = map[string]string{v1alpha1.ReloadAnnotation: reload}
	}
	return j
}

func getJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, j); err != nil {
		t.Fatal(err)
	}
	return j
}

// waitJobRecorded waits until the Job carries a record, and returns it.
func waitJobRecorded(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	testenv.Eventually(t, timeout, func() error {
		j = getJob(t, ns, name)
		if j.Annotations[v1alpha1.ConfigStateAnnotation] == "" {
			return fmt.Errorf("Job %s not recorded yet", name)
		}
		return nil
	})
	return j
}

// TestJobsRecreated: an opted-in Job is recorded without being touched; when its data changes
// it is deleted and created again under its name, with its labels, annotations and spec, the
// new record and a config hash on its Pod template, and a new uid (and selector, generated
// anew). A Job a CronJob controls is left to the CronJob.
func TestJobsRecreated(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	ns := env.Namespace(t, "cmw-jobs-")
	ctx := context.Background()
	owned := job(ns, "of-a-cronjob", "true", envFrom("app"))
	yes := true
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "0000", Controller: &yes}}
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}), job(ns, "migrate", "true", envFrom("app")), owned)
	first := waitJobRecorded(t, ns, "migrate")
	settle(t, reconcileTotal(t), 0)
	if hash := first.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]; hash != "" {
		t.Errorf("Job rolled at first sight: %q", hash)
	}

	updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
	var second *batchv1.Job
	testenv.Eventually(t, timeout, func() error {
		second = &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "migrate"}, second); err != nil {
			return err
		}
		if second.UID == first.UID {
			return fmt.Errorf("Job not re-created yet")
		}
		return nil
	})
	if second.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == "" {
		t.Error("the re-created Job's Pod template has no config hash")
	}
	if second.Annotations[v1alpha1.ConfigStateAnnotation] == first.Annotations[v1alpha1.ConfigStateAnnotation] {
		t.Error("the re-created Job carries the old record")
	}
	kept := func(j *batchv1.Job) []any {
		return []any{j.Labels["team"], j.Annotations[v1alpha1.ReloadAnnotation], *j.Spec.BackoffLimit, j.Spec.Template.Spec.Containers}
	}
	if diff := cmp.Diff(kept(first), kept(second)); diff != "" {
		t.Errorf("what the re-created Job kept (-old +new):\n%s", diff)
	}
	if second.Spec.Selector == nil || second.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] != string(second.UID) {
		t.Errorf("the re-created Job's selector %v is not generated from its own uid", second.Spec.Selector)
	}
	k := kinds[0]
	k.name = "Job"
	k.waitEvent(t, ns, "migrate", v1alpha1.ReasonConfigChanged, "Recreated Job migrate: ConfigMap app: k changed")
	settle(t, reconcileTotal(t), 0)
	if got := getJob(t, ns, "migrate"); got.UID != second.UID {
		t.Error("the Job was re-created twice for one change")
	}
	if ofCronJob := getJob(t, ns, "of-a-cronjob"); ofCronJob.Annotations[v1alpha1.ConfigStateAnnotation] != "" {
		t.Error("a Job a CronJob controls was recorded: it is the CronJob's")
	}
}

// TestCronJobRunsAJobOnChange: on a change, a CronJob with app.example.com/run-job-on-change
// "true", and one opted in through Reloader's annotation (Reloader's behaviour), get a Job
// from their new job template at once, owned by them, besides the new template; one opted in
// through ours gets only the template. A repeated reconcile runs no second Job.
func TestCronJobRunsAJobOnChange(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	k := kinds[3]
	ns := env.Namespace(t, "cmw-runjob-")
	asked := k.workload(ns, "asked", "true", envFrom("app"))
	asked.SetAnnotations(map[string]string{v1alpha1.ReloadAnnotation: "true", v1alpha1.RunJobOnChangeAnnotation: "true"})
	reloader := k.workload(ns, "reloader", "", envFrom("app"))
	reloader.SetAnnotations(map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"})
	declined := k.workload(ns, "declined", "", envFrom("app"))
	declined.SetAnnotations(map[string]string{v1alpha1.ReloaderAutoAnnotation: "true", v1alpha1.RunJobOnChangeAnnotation: "false"})
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}), asked, reloader, declined, k.workload(ns, "ours", "true", envFrom("app")))
	before := k.waitRecorded(t, ns, "asked", "reloader", "declined", "ours")
	settle(t, reconcileTotal(t), 0)
	updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
	since := reconcileTotal(t)
	after := k.waitRolled(t, ns, before, "asked", "reloader", "declined", "ours")
	settle(t, since, 0)

	var jobs batchv1.JobList
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range jobs.Items {
		owner := metav1.GetControllerOf(&j)
		if owner == nil || owner.Kind != "CronJob" {
			t.Errorf("Job %s is not controlled by a CronJob", j.Name)
			continue
		}
		got[owner.Name] = j.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation]
		if j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
			t.Errorf("Job %s lacks cronjob.kubernetes.io/instantiate: manual", j.Name)
		}
		if len(j.Spec.Template.Spec.Containers) == 0 || j.Spec.Template.Spec.Containers[0].Image == "" {
			t.Errorf("Job %s was not made from the whole job template", j.Name)
		}
	}
	want := map[string]string{"asked": after["asked"].Hash, "reloader": after["reloader"].Hash}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Jobs run at once, by CronJob, with their config hash (-want +got):\n%s", diff)
	}
	k.waitEvent(t, ns, "asked", v1alpha1.ReasonConfigChanged, "Rolled CronJob asked: ran Job asked-")
	time.Sleep(time.Second)
	if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != 2 {
		t.Errorf("%d Jobs after the reconciles settled, want 2 (%v)", len(jobs.Items), err)
	}
}

// TestJobRecreatedAfterItsFinalizers: a Job whose deletion waits for a finalizer is created
// again once the finalizer is gone, with the new record.
func TestJobRecreatedAfterItsFinalizers(t *testing.T) {
	env.StartManager(t, "--controllers=configmapwatcher")
	ns := env.Namespace(t, "cmw-jobs-")
	ctx := context.Background()
	held := job(ns, "held", "true", envFrom("app"))
	held.Finalizers = []string{"example.com/hold"}
	create(t, configMap(ns, "app", map[string]string{"k": "v1"}), held)
	first := waitJobRecorded(t, ns, "held")
	updateConfigMap(t, ns, "app", map[string]string{"k": "v2"})
	testenv.Eventually(t, timeout, func() error {
		if getJob(t, ns, "held").DeletionTimestamp.IsZero() {
			return fmt.Errorf("Job not deleted yet")
		}
		return nil
	})
	stuck := getJob(t, ns, "held")
	stuck.Finalizers = nil
	if err := env.Client.Update(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, timeout, func() error {
		j := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, j); err != nil {
			return err
		}
		if j.UID == first.UID || j.Annotations[v1alpha1.ConfigStateAnnotation] == first.Annotations[v1alpha1.ConfigStateAnnotation] {
			return fmt.Errorf("Job not re-created yet")
		}
		return nil
	})
}
