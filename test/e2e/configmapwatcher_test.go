package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/internal/podrefs"
	"github.com/example/switchboard/internal/testenv"
)

// TestConfigMapWatcherRollsPods deploys the configmapwatcher overlay and runs the manager as
// its ServiceAccount on a cluster where kube-controller-manager runs the workload controllers
// and kwok the Pods: a Deployment, a StatefulSet and a DaemonSet, opted in with our annotation
// and Reloader's, get their Pods and are recorded without being rolled; a change of the Secret
// they use replaces every Pod of the three, and each workload's Event and the manager's log
// (through `manager logs trace`) say which key changed; a CronJob gets the new hash on its job
// template and runs no Job.
func TestConfigMapWatcherRollsPods(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCluster(t)
	args := c.Deploy(t, "overlays/configmapwatcher")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	m := startManager(t, kubeconfig, args)
	eventually(t, 90*time.Second, readyCheck(m))
	ns := testenv.Namespace(t, c.admin, "e2e-rolls-")

	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"LOG_LEVEL": "info"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, StringData: map[string]string{"password": "one"}},
	} {
		if err := c.admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	spec := podSpecUsing("app", "db")
	replicas := int32(2)
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: selectorOf("web"), Template: templateOf("web", spec)},
	}
	statefulSet := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "store", Annotations: map[string]string{v1alpha1.ReloaderAutoAnnotation: "true"}},
		Spec:       appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: "store", Selector: selectorOf("store"), Template: templateOf("store", spec)},
	}
	daemonSet := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec:       appsv1.DaemonSetSpec{Selector: selectorOf("agent"), Template: templateOf("agent", spec)},
	}
	// Reloader's annotation on the Pod template, as some charts put it.
	daemonSet.Spec.Template.Annotations = map[string]string{v1alpha1.ReloaderSecretReloadAnnotation: "db"}
	jobSpec := spec
	jobSpec.RestartPolicy = corev1.RestartPolicyOnFailure
	cronJob := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report", Annotations: map[string]string{v1alpha1.ReloadAnnotation: "secret/db"}},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: jobSpec}}}},
	}
	workloads := []client.Object{deployment, statefulSet, daemonSet, cronJob}
	for _, obj := range workloads {
		if err := c.admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// Every Pod runs and every workload is recorded, without a roll.
	before := map[string][]types.UID{}
	for _, w := range workloads[:3] {
		before[w.GetName()] = waitPodsReady(t, c, w, nil)
	}
	eventually(t, 60*time.Second, func() error {
		for _, w := range workloads {
			if err := c.admin.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return err
			}
			if w.GetAnnotations()[v1alpha1.ConfigStateAnnotation] == "" {
				return fmt.Errorf("%T %s not recorded yet", w, w.GetName())
			}
			if hash := podrefs.PodTemplate(w).Annotations[v1alpha1.ConfigHashAnnotation]; hash != "" {
				return fmt.Errorf("%T %s rolled at first sight: config hash %q", w, w.GetName(), hash)
			}
		}
		return nil
	})
	for _, w := range workloads[:3] {
		if now := podUIDs(t, c, w); !sameUIDs(now, before[w.GetName()]) {
			t.Errorf("%T %s: Pods %v replaced by %v at first sight", w, w.GetName(), before[w.GetName()], now)
		}
	}

	// The Secret changes: every Pod of the three is replaced, and they say why.
	secret := &corev1.Secret{}
	if err := c.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"password": []byte("two")}
	if err := c.admin.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for _, w := range workloads[:3] {
		waitPodsReady(t, c, w, before[w.GetName()])
		waitRollEvent(t, c, ns, w.GetName(), "Secret db: password changed")
	}
	eventually(t, 60*time.Second, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(cronJob), cronJob); err != nil {
			return err
		}
		if cronJob.Spec.JobTemplate.Spec.Template.Annotations[v1alpha1.ConfigHashAnnotation] == "" {
			return fmt.Errorf("no config hash on the CronJob's job template yet")
		}
		return nil
	})
	var jobs batchv1.JobList
	if err := c.admin.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 0 {
		t.Errorf("%d Jobs ran: the CronJob must not run before its schedule", len(jobs.Items))
	}

	// `manager logs trace` of a workload shows its roll and why.
	trace := logsTrace(t, m, ns, "store")
	for _, want := range []string{"Rolled StatefulSet", "Secret db: password changed"} {
		if !strings.Contains(trace, want) {
			t.Errorf("manager logs trace %s/store does not show %q:\n%s", ns, want, trace)
		}
	}
}

// podSpecUsing takes its environment from a ConfigMap and a Secret.
func podSpecUsing(configMap, secret string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}},
	}}}}
}

func selectorOf(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
}

func templateOf(name string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec}
}

// waitPodsReady waits until the workload's controller reports every Pod of its current
// template ready, none of them among replaced (the Pods of an earlier template), and returns
// their UIDs.
func waitPodsReady(t *testing.T, c *testCluster, w client.Object, replaced []types.UID) []types.UID {
	t.Helper()
	ctx := context.Background()
	var uids []types.UID
	eventually(t, 3*time.Minute, func() error {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		var want, ready int32
		switch o := w.(type) {
		case *appsv1.Deployment:
			if o.Status.ObservedGeneration < o.Generation || o.Status.UpdatedReplicas != *o.Spec.Replicas {
				return fmt.Errorf("Deployment %s: %d of %d replicas updated", o.Name, o.Status.UpdatedReplicas, *o.Spec.Replicas)
			}
			want, ready = *o.Spec.Replicas, o.Status.ReadyReplicas
		case *appsv1.StatefulSet:
			if o.Status.ObservedGeneration < o.Generation || o.Status.CurrentRevision != o.Status.UpdateRevision {
				return fmt.Errorf("StatefulSet %s: revision %s rolling out over %s", o.Name, o.Status.UpdateRevision, o.Status.CurrentRevision)
			}
			want, ready = *o.Spec.Replicas, o.Status.ReadyReplicas
		case *appsv1.DaemonSet:
			if o.Status.ObservedGeneration < o.Generation || o.Status.UpdatedNumberScheduled != o.Status.DesiredNumberScheduled {
				return fmt.Errorf("DaemonSet %s: %d of %d Pods updated", o.Name, o.Status.UpdatedNumberScheduled, o.Status.DesiredNumberScheduled)
			}
			want, ready = o.Status.DesiredNumberScheduled, o.Status.NumberReady
		}
		if want == 0 || ready != want {
			return fmt.Errorf("%T %s: %d of %d Pods ready", w, w.GetName(), ready, want)
		}
		uids = podUIDs(t, c, w)
		if len(uids) != int(want) {
			return fmt.Errorf("%T %s: %d Pods, want %d", w, w.GetName(), len(uids), want)
		}
		for _, uid := range uids {
			if slices.Contains(replaced, uid) {
				return fmt.Errorf("%T %s: Pod %s of the old template still runs", w, w.GetName(), uid)
			}
		}
		return nil
	})
	return uids
}

// podUIDs returns the UIDs of the workload's Pods that are not being deleted, sorted.
func podUIDs(t *testing.T, c *testCluster, w client.Object) []types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := c.admin.List(context.Background(), &pods, client.InNamespace(w.GetNamespace()), client.MatchingLabels{"app": w.GetName()}); err != nil {
		t.Fatal(err)
	}
	var uids []types.UID
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			uids = append(uids, p.UID)
		}
	}
	slices.Sort(uids)
	return uids
}

func sameUIDs(a, b []types.UID) bool { return slices.Equal(a, b) }

// waitRollEvent waits for the configmapwatcher's Event about a roll of the workload ns/name
// whose note contains note.
func waitRollEvent(t *testing.T, c *testCluster, ns, name, note string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		var list eventsv1.EventList
		if err := c.admin.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var notes []string
		for _, e := range list.Items {
			if e.Reason == v1alpha1.ReasonConfigChanged && e.Regarding.Name == name {
				if strings.Contains(e.Note, note) {
					return nil
				}
				notes = append(notes, e.Note)
			}
		}
		return fmt.Errorf("no %s Event about %s with %q among %q", v1alpha1.ReasonConfigChanged, name, note, notes)
	})
}

// logsTrace runs `manager logs trace NS/NAME` on the manager's output so far.
func logsTrace(t *testing.T, m *testenv.Process, ns, name string) string {
	t.Helper()
	cmd := exec.Command(manager, "logs", "trace", ns+"/"+name)
	cmd.Stdin = strings.NewReader(m.Output())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("manager logs trace: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// TestConfigMapWatcherJobs runs the configmapwatcher overlay's manager as its ServiceAccount on
// a cluster where kube-controller-manager runs Jobs and kwok their Pods: an opted-in Job runs
// to completion and is recorded; when its ConfigMap changes it is deleted and created again
// under its name, and kube-controller-manager runs the new one's Pod (the old one's goes with
// it); a CronJob with app.example.com/run-job-on-change runs a Job at once, whose Pod runs.
func TestConfigMapWatcherJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCluster(t)
	args := c.Deploy(t, "overlays/configmapwatcher")
	kubeconfig, _ := c.ServiceAccountKubeconfig(t)
	m := startManager(t, kubeconfig, args)
	eventually(t, 90*time.Second, readyCheck(m))
	ns := testenv.Namespace(t, c.admin, "e2e-jobs-")

	if err := c.admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"LOG_LEVEL": "info"}}); err != nil {
		t.Fatal(err)
	}
	spec := podSpecUsing("app", "absent")
	spec.Containers[0].EnvFrom = spec.Containers[0].EnvFrom[:1]
	spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migrate", Annotations: map[string]string{v1alpha1.ReloadAnnotation: "true"}},
		Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}},
	}
	cronJob := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report", Annotations: map[string]string{
			v1alpha1.ReloadAnnotation: "true", v1alpha1.RunJobOnChangeAnnotation: "true"}},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}},
	}
	for _, obj := range []client.Object{job, cronJob} {
		if err := c.admin.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	first := waitJobPod(t, c, ns, "migrate", "")
	eventually(t, 60*time.Second, func() error {
		for _, obj := range []client.Object{job, cronJob} {
			if err := c.admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			if obj.GetAnnotations()[v1alpha1.ConfigStateAnnotation] == "" {
				return fmt.Errorf("%T %s not recorded yet", obj, obj.GetName())
			}
		}
		return nil
	})

	cm := &corev1.ConfigMap{}
	if err := c.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"LOG_LEVEL": "debug"}
	if err := c.admin.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	second := waitJobPod(t, c, ns, "migrate", first)
	waitRollEvent(t, c, ns, "migrate", "Recreated Job migrate: ConfigMap app: LOG_LEVEL changed")
	eventually(t, 60*time.Second, func() error {
		var pods corev1.PodList
		if err := c.admin.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: "migrate"}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if owner := metav1.GetControllerOf(&p); owner != nil && owner.UID != second && p.DeletionTimestamp == nil {
				return fmt.Errorf("Pod %s of the old Job is still there", p.Name)
			}
		}
		return nil
	})

	// The CronJob's Job, run at once from the new job template: its Pod runs.
	var ran string
	eventually(t, 60*time.Second, func() error {
		var jobs batchv1.JobList
		if err := c.admin.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, j := range jobs.Items {
			if owner := metav1.GetControllerOf(&j); owner != nil && owner.Kind == "CronJob" && owner.Name == "report" {
				ran = j.Name
				return nil
			}
		}
		return fmt.Errorf("no Job of CronJob report yet")
	})
	waitJobPod(t, c, ns, ran, "")
	waitRollEvent(t, c, ns, "report", "ran Job "+ran+" at once")
}

// waitJobPod waits until the Job ns/name, other than the one of UID not, has a Pod that ran to
// completion, and returns the Job's UID.
func waitJobPod(t *testing.T, c *testCluster, ns, name string, not types.UID) types.UID {
	t.Helper()
	ctx := context.Background()
	var uid types.UID
	eventually(t, 3*time.Minute, func() error {
		j := &batchv1.Job{}
		if err := c.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, j); err != nil {
			return err
		}
		if j.UID == not {
			return fmt.Errorf("Job %s not re-created yet", name)
		}
		uid = j.UID
		var pods corev1.PodList
		if err := c.admin.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{batchv1.ControllerUidLabel: string(j.UID)}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodRunning {
				return nil
			}
		}
		return fmt.Errorf("Job %s (%s): no Pod running or done among %d", name, j.UID, len(pods.Items))
	})
	return uid
}
