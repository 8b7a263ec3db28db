package configmapwatcher

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;patch;create;delete

// jobLabels are the labels the Job controller and the API server set on a Job's Pod template
// from its uid and name; a Job created anew gets them again, with its own uid.
var jobLabels = []string{"controller-uid", batchv1.ControllerUidLabel, "job-name", batchv1.JobNameLabel}

// recreatedJob returns the Job that replaces old: the same name, labels, annotations, owners,
// finalizers and spec, with the new record and the roll's marks; without what the API server set
// for old alone (uid, resourceVersion, creation time, managed fields, status) and, unless the
// Job chose its selector itself (spec.manualSelector), without the selector and the Pod
// template's labels derived from old's uid, which the API server generates again.
func recreatedJob(old *batchv1.Job, record string, m marks) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: old.Namespace, Name: old.Name,
			Labels: maps.Clone(old.Labels), Annotations: maps.Clone(old.Annotations),
			OwnerReferences: old.OwnerReferences, Finalizers: old.Finalizers,
		},
		Spec: *old.Spec.DeepCopy(),
	}
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[v1alpha1.ConfigStateAnnotation] = record
	template := &job.Spec.Template
	m.applyTo(template)
	if old.Spec.ManualSelector == nil || !*old.Spec.ManualSelector {
		job.Spec.Selector = nil
		for _, label := range jobLabels {
			delete(template.Labels, label)
		}
	}
	return job
}

// jobRecreator deletes and creates Jobs again. Between the deletion and the creation the Job
// lives only here: when the creation fails (the old Job is still being deleted, a quota, a
// webhook), the controller's next reconcile of the name, which finds no Job, creates it from
// here. A manager that stops in that gap loses it: the Event of the deletion names the Job.
type jobRecreator struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]*batchv1.Job
}

// recreate deletes old (only that very object: a Job created since under its name stays) and
// creates its replacement. When the creation fails (the old Job is still being deleted), the
// replacement stays pending and recreate returns the error as creationErr: the roll is under
// way, and the controller creates the Job once it can (finishRecreate).
func (j *jobRecreator) recreate(ctx context.Context, c client.Client, old, replacement *batchv1.Job) (creationErr, err error) {
	key := client.ObjectKeyFromObject(old)
	background := metav1.DeletePropagationBackground
	err = c.Delete(ctx, old, client.PropagationPolicy(background),
		client.Preconditions{UID: &old.UID, ResourceVersion: &old.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deleting Job %s to re-create it: %w", key, err)
	}
	j.mu.Lock()
	if j.pending == nil {
		j.pending = map[types.NamespacedName]*batchv1.Job{}
	}
	j.pending[key] = replacement
	j.mu.Unlock()
	return j.createPending(ctx, c, key), nil
}

// createPending creates the Job pending under key, if any, and forgets it once created.
func (j *jobRecreator) createPending(ctx context.Context, c client.Client, key types.NamespacedName) error {
	j.mu.Lock()
	job, ok := j.pending[key]
	j.mu.Unlock()
	if !ok {
		return nil
	}
	if err := c.Create(ctx, job.DeepCopy(), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("creating Job %s again: %w", key, err)
	}
	j.mu.Lock()
	delete(j.pending, key)
	j.mu.Unlock()
	return nil
}

// forget drops the Job pending under key.
func (j *jobRecreator) forget(key types.NamespacedName) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.pending, key)
}

// has says whether a Job is pending under key.
func (j *jobRecreator) has(key types.NamespacedName) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.pending[key]
	return ok
}

// runsJobOnChange says whether a roll of cj runs a Job at once (v1alpha1.RunJobOnChangeAnnotation);
// viaReloader says whether it opted in through Reloader's annotations or --auto-reload-all.
func runsJobOnChange(cj *batchv1.CronJob, viaReloader bool) (bool, error) {
	value, ok := cj.Annotations[v1alpha1.RunJobOnChangeAnnotation]
	if !ok {
		return viaReloader, nil
	}
	run, err := strconv.ParseBool(value)
	if err != nil {
		return viaReloader, fmt.Errorf("annotation %s: %q is not true or false", v1alpha1.RunJobOnChangeAnnotation, value)
	}
	return run, nil
}

// cronJobRun returns the Job a roll of cj runs at once, as `kubectl create job --from=cronjob/`
// and Reloader make it: from the job template (with the roll's marks), owned by the CronJob,
// annotated cronjob.kubernetes.io/instantiate: manual. Its name ends with digest, the record's,
// so that a reconcile repeated after a failed write creates no second Job for one change.
func cronJobRun(cj *batchv1.CronJob, m marks, digest string) *batchv1.Job {
	annotations := map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}
	maps.Copy(annotations, cj.Spec.JobTemplate.Annotations)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cj.Namespace, Name: cronJobRunName(cj.Name, digest),
			Labels: maps.Clone(cj.Spec.JobTemplate.Labels), Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	m.applyTo(podrefs.PodTemplate(job))
	return job
}

// cronJobRunName is NAME-HASH10: at most 63 characters, a Job name's limit, as a CronJob's
// name has at most 52.
func cronJobRunName(cronJob, hash string) string {
	return cronJob + "-" + hash[:min(10, len(hash))]
}
