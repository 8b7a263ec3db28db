package verticalscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// UpdateLimits guard the changes to running Pods, manager-wide: the controller's flags.
type UpdateLimits struct {
	// MinReplicas is the default of spec.updatePolicy.minReplicas.
	MinReplicas int32
	// MaxUnavailablePerWorkload is how many of one target's Pods may be unavailable (not ready,
	// or terminating) for the controller to evict another.
	MaxUnavailablePerWorkload int
	// MinApplyInterval is the least time between two template writes of one target, and
	// between two resizes of one Pod.
	MinApplyInterval time.Duration
	// DeferredResizeTimeout and ResizeTimeout are how long a resize may stay Deferred, or in
	// progress, before the Pod is evicted instead.
	DeferredResizeTimeout, ResizeTimeout time.Duration
	// PodUpdates limits the resizes and evictions of the whole manager; nil for no limit.
	PodUpdates *rate.Limiter
}

// resizeLog remembers when the controller last resized each Pod, so that a Pod is resized at
// most once per MinApplyInterval. In memory: a new manager may resize a Pod once sooner.
type resizeLog struct {
	mu   sync.Mutex
	last map[types.UID]time.Time
}

func (l *resizeLog) at(uid types.UID) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[uid]
}

func (l *resizeLog) record(uid types.UID, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[types.UID]time.Time{}
	}
	l.last[uid] = at
	// Forget Pods resized long ago: they no longer hold anything back.
	for k, t := range l.last {
		if at.Sub(t) > 24*time.Hour {
			delete(l.last, k)
		}
	}
}

// admissionLag is how long after the controller computes what new Pods get (status.podResources)
// a Pod may still be created without it: the status write, and the API server's admission
// policy reading it, take a moment.
const admissionLag = 10 * time.Second

// sizingHistory is how many of a VerticalScaler's latest podResources the controller remembers,
// to judge a Pod by what new Pods were to get when it was created.
const sizingHistory = 8

// sizedSince is what the admission policy was to give a target's new Pods (status.podResources)
// from since on, until the next one.
type sizedSince struct {
	resources []v1alpha1.ContainerResources
	since     time.Time
}

// admissionSizing is what the admission policy was to give the target's new Pods lately, oldest
// first.
type admissionSizing []sizedSince

// missed says whether pod lacks a request that the admission policy was to give it when it was
// created: then the policy did not size it. A Pod created before the oldest remembered
// podResources, or within admissionLag of a change, is not judged.
func (s admissionSizing) missed(pod *corev1.Pod) bool {
	created := pod.CreationTimestamp.Time
	i := len(s) - 1
	for i >= 0 && s[i].since.After(created) {
		i--
	}
	if i < 0 || created.Before(s[i].since.Add(admissionLag)) {
		return false
	}
	containers := recommender.RecommendedContainers(&pod.Spec)
	for _, r := range s[i].resources {
		j := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == r.ContainerName })
		if j < 0 {
			continue
		}
		for name, want := range r.Requests {
			if have, ok := containers[j].Resources.Requests[name]; !ok || have.Cmp(want) != 0 {
				return true
			}
		}
	}
	return false
}

// sizingLog remembers, per VerticalScaler, what the admission policy was to give its target's
// new Pods lately, so that an eviction can tell whether replacements get it.
type sizingLog struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]admissionSizing
}

// observe records that key's new Pods are to get resources as of now, and returns what they
// were to get lately. Resources equal but for how a quantity is written are no change.
func (l *sizingLog) observe(key types.NamespacedName, resources []v1alpha1.ContainerResources, now time.Time) admissionSizing {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = map[types.NamespacedName]admissionSizing{}
	}
	history := l.entries[key]
	if len(history) == 0 || !equality.Semantic.DeepEqual(history[len(history)-1].resources, resources) {
		history = append(history, sizedSince{resources: resources, since: now})
		if len(history) > sizingHistory {
			history = slices.Clone(history[len(history)-sizingHistory:])
		}
		l.entries[key] = history
	}
	return slices.Clone(history)
}

// forget drops key, a VerticalScaler that is gone.
func (l *sizingLog) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, key)
}

// podAction is what a running Pod needs.
type podAction int

const (
	// podCarries: its requests carry the recommendation; nothing to do.
	podCarries podAction = iota
	// podOff: a request is off (offRequests): resize it in place, or evict it.
	podOff
	// podResizing: a resize is pending (Deferred within its timeout) or in progress.
	podResizing
	// podResizeFailed: the kubelet reports the resize Infeasible, or Deferred or in progress
	// past its timeout: evict it.
	podResizeFailed
)

// podPlan is what one running Pod needs, and why.
type podPlan struct {
	pod    *corev1.Pod
	action podAction
	// containers are its recommended containers, and desired what each should be given.
	containers []corev1.Container
	desired    map[string]corev1.ResourceRequirements
	// why says which requests are off, or what the kubelet said of the resize.
	why string
	// recheck is when a pending resize times out: when to look again.
	recheck time.Time
}

// resizeCondition returns the Pod's condition of type t when it is True.
func resizeCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// planPod decides what pod needs to carry rec at now. In place (InPlaceOrRecreate), a Pod whose
// spec already asks for the recommendation may still wait for the kubelet, or have failed to
// get it.
func planPod(spec *v1alpha1.VerticalScalerSpec, rec *v1alpha1.Recommendation, ranges limitRanges, pod *corev1.Pod, inPlace bool, limits UpdateLimits, now time.Time) podPlan {
	p := podPlan{pod: pod, containers: recommender.RecommendedContainers(&pod.Spec)}
	rec, p.desired = desiredResourcesOf(spec, p.containers, rec, ranges)
	if off := offRequests(p.containers, p.desired, rec); len(off) > 0 {
		p.action, p.why = podOff, strings.Join(off, "; ")
		return p
	}
	if !inPlace {
		return p
	}
	if c := resizeCondition(pod, corev1.PodResizePending); c != nil {
		switch {
		case c.Reason == corev1.PodReasonInfeasible:
			p.action, p.why = podResizeFailed, fmt.Sprintf("the kubelet reports the resize Infeasible: %s", c.Message)
		case now.Sub(c.LastTransitionTime.Time) >= limits.DeferredResizeTimeout:
			p.action, p.why = podResizeFailed, fmt.Sprintf("the resize has been %s for more than %s: %s", c.Reason, limits.DeferredResizeTimeout, c.Message)
		default:
			p.action, p.recheck = podResizing, c.LastTransitionTime.Add(limits.DeferredResizeTimeout)
		}
		return p
	}
	if c := resizeCondition(pod, corev1.PodResizeInProgress); c != nil {
		if now.Sub(c.LastTransitionTime.Time) >= limits.ResizeTimeout {
			p.action, p.why = podResizeFailed, fmt.Sprintf("the resize has been in progress for more than %s", limits.ResizeTimeout)
		} else {
			p.action, p.recheck = podResizing, c.LastTransitionTime.Add(limits.ResizeTimeout)
		}
		return p
	}
	// Asked for, not reported yet: the kubelet has not seen the resize. The Pod watch brings
	// its answer.
	if !runningAsAsked(pod) {
		p.action = podResizing
	}
	return p
}

// runningAsAsked says whether the resources the kubelet reports each container runs with are
// those its spec asks for; true when it reports none.
func runningAsAsked(pod *corev1.Pod) bool {
	spec := map[string]corev1.ResourceRequirements{}
	for _, c := range recommender.RecommendedContainers(&pod.Spec) {
		spec[c.Name] = c.Resources
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, s := range statuses {
			want, ok := spec[s.Name]
			if !ok || s.Resources == nil {
				continue
			}
			for name, q := range want.Requests {
				if got, ok := s.Resources.Requests[name]; !ok || got.Cmp(q) != 0 {
					return false
				}
			}
		}
	}
	return true
}

// unmetRequirements says which of vs's eviction requirements the change of the containers to
// desired does not meet; empty when all are met (or there are none). A requirement is met when,
// for one of its resources and one container, the target moves the request its way.
func unmetRequirements(vs *v1alpha1.VerticalScaler, containers []corev1.Container, desired map[string]corev1.ResourceRequirements) string {
	if vs.Spec.UpdatePolicy == nil {
		return ""
	}
	var unmet []string
	for _, req := range vs.Spec.UpdatePolicy.EvictionRequirements {
		met := false
		for _, c := range containers {
			want, ok := desired[c.Name]
			if !ok {
				continue
			}
			for _, res := range req.Resources {
				name := corev1.ResourceName(res)
				target, ok := want.Requests[name]
				if !ok {
					continue
				}
				have, hasRequest := requestOf(c, name)
				higher := !hasRequest || target.Cmp(have) > 0
				lower := hasRequest && target.Cmp(have) < 0
				if (req.ChangeRequirement == v1alpha1.TargetHigherThanRequests && higher) ||
					(req.ChangeRequirement == v1alpha1.TargetLowerThanRequests && lower) {
					met = true
				}
			}
		}
		if !met {
			unmet = append(unmet, fmt.Sprintf("%s for %s", req.ChangeRequirement, joinResources(req.Resources)))
		}
	}
	if len(unmet) == 0 {
		return ""
	}
	return "spec.updatePolicy.evictionRequirements are not met: " + strings.Join(unmet, ", ")
}

func joinResources(rs []v1alpha1.ControlledResource) string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, string(r))
	}
	return strings.Join(out, " or ")
}

// available says whether pod serves: ready, and not terminating.
func available(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// live says whether pod counts toward minReplicas: not terminating, and not finished.
func live(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// updatePods brings the target's running Pods to rec: in place (InPlaceOrRecreate), each Pod
// whose requests are off is resized through its resize subresource, at most once per
// MinApplyInterval, and a Pod the kubelet cannot resize is evicted; otherwise (Recreate and
// Auto for the kinds whose template a write does not roll) each is evicted. Every change meets
// the eviction requirements and waits for the manager's rate limit; an eviction also waits
// until the target has minReplicas live Pods and fewer than MaxUnavailablePerWorkload
// unavailable ones, and none while a Pod shows that the admission policy does not size new
// ones (sizing); the Eviction API honours PodDisruptionBudgets. What the Pods are given stays
// within the namespace's LimitRanges (ranges). It returns what happened, as the Applied
// condition says it.
func (r *Reconciler) updatePods(ctx context.Context, vs *v1alpha1.VerticalScaler, w *workload, rec *v1alpha1.Recommendation, ranges limitRanges,
	sizing admissionSizing, inPlace bool) (applyState, error) {
	selector, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return applyState{}, fmt.Errorf("the Pod selector of %s: %w", w.key, err)
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(vs.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return applyState{}, fmt.Errorf("listing the Pods of %s: %w", w.key, err)
	}
	now := time.Now()
	var plans []podPlan
	var unsized *corev1.Pod
	liveCount, unavailable, liveByJob := 0, 0, map[string]int{}
	for i := range list.Items {
		pod := &list.Items[i]
		if !live(pod) {
			if pod.DeletionTimestamp != nil {
				unavailable++
			}
			continue
		}
		liveCount++
		liveByJob[jobOf(pod)]++
		if !available(pod) {
			unavailable++
		}
		// The first by name, so that the condition's message stays the same from one pass to
		// the next.
		if sizing.missed(pod) && (unsized == nil || pod.Name < unsized.Name) {
			unsized = pod
		}
		// A Pod not scheduled yet is sized by admission, not here.
		if pod.Spec.NodeName == "" {
			continue
		}
		plans = append(plans, planPod(&vs.Spec, rec, ranges, pod, inPlace, r.Limits, now))
	}
	slices.SortFunc(plans, func(a, b podPlan) int { return strings.Compare(a.pod.Name, b.pod.Name) })
	// A Pod the workload wants and has not created yet (an evicted one's replacement, between
	// the one's going and the other's coming) is unavailable too, as the VPA's updater counts
	// the replicas its controller wants: otherwise that moment lets a second eviction through.
	if w.knowsReplicas && int(w.replicas) > liveCount {
		unavailable += int(w.replicas) - liveCount
	}

	u := podUpdate{r: r, vs: vs, w: w, unsized: unsized, now: now, live: liveCount, liveByJob: liveByJob, unavailable: unavailable}
	for i := range plans {
		p := &plans[i]
		switch {
		case p.action == podOff && inPlace:
			if err := u.resize(ctx, p); err != nil {
				return applyState{}, err
			}
		case p.action == podOff || p.action == podResizeFailed:
			if err := u.evict(ctx, p); err != nil {
				return applyState{}, err
			}
		case p.action == podResizing:
			u.waiting++
			if !p.recheck.IsZero() {
				u.recheckAt(p.recheck)
			}
		}
	}
	return u.state(), nil
}

// podUpdate is one reconcile's changes to a target's running Pods, and what held them back.
type podUpdate struct {
	r  *Reconciler
	vs *v1alpha1.VerticalScaler
	w  *workload
	// unsized is a live Pod of the target that the admission policy should have sized and did
	// not (admissionSizing.missed), if there is one: evictions would only bring Pods back as
	// they were.
	unsized *corev1.Pod
	now     time.Time
	// live and unavailable count the target's Pods; evictions add to unavailable.
	live, unavailable int
	// liveByJob counts the live Pods of each of a CronJob's Jobs (jobOf).
	liveByJob map[string]int
	// resized and evicted count this reconcile's changes, waiting the Pods whose change is
	// under way.
	resized, evicted, waiting int
	// held is the first reason a change was held back, and heldWhy its message.
	held, heldWhy string
	// wait is when to look again (the earliest timeout or interval), zero for no need.
	wait time.Duration
}

// replicasOf returns how many live Pods minReplicas counts for pod, and of what: the target's,
// or for a CronJob those of pod's own Job, as the VPA's updater counts the replicas of a Pod's
// controller, so that a CronJob whose Jobs run one Pod each is left alone however many Jobs
// overlap.
func (u *podUpdate) replicasOf(pod *corev1.Pod) (int, string) {
	if u.w.kind.Kind != "CronJob" {
		return u.live, u.w.key
	}
	job := jobOf(pod)
	return u.liveByJob[job], fmt.Sprintf("Job %s of %s", job, u.w.key)
}

// jobOf names the Job whose Pod pod is, by the label the Job controller gives its Pods (the
// older one before Kubernetes 1.27).
func jobOf(pod *corev1.Pod) string {
	if job, ok := pod.Labels[batchv1.JobNameLabel]; ok {
		return job
	}
	return pod.Labels["job-name"]
}

func (u *podUpdate) recheckAt(at time.Time) {
	if d := max(at.Sub(u.now), time.Second); u.wait == 0 || d < u.wait {
		u.wait = d
	}
}

// hold records that a change was held back for reason, counts it, and keeps the first reason
// for the condition.
func (u *podUpdate) hold(reason, message string) {
	skippedApplies.WithLabelValues(reason).Inc()
	if u.held == "" {
		u.held, u.heldWhy = reason, message
	}
}

// allowed takes a token of the manager's rate limit of Pod changes; without one it holds the
// change back and looks again when one is due.
func (u *podUpdate) allowed(p *podPlan) bool {
	limiter := u.r.Limits.PodUpdates
	if limiter == nil {
		return true
	}
	if limiter.Allow() {
		return true
	}
	u.hold(v1alpha1.ReasonRateLimited, fmt.Sprintf("Pod %s: %s; the manager's rate limit of Pod changes holds it back for now", p.pod.Name, p.why))
	u.recheckAt(u.now.Add(max(time.Second, time.Duration(float64(time.Second)/float64(limiter.Limit())))))
	return false
}

// resize resizes p's Pod in place to the recommendation.
func (u *podUpdate) resize(ctx context.Context, p *podPlan) error {
	if unmet := unmetRequirements(u.vs, p.containers, p.desired); unmet != "" {
		u.hold(v1alpha1.ReasonEvictionRequirements, fmt.Sprintf("Pod %s: %s; %s", p.pod.Name, p.why, unmet))
		return nil
	}
	if last := u.r.resizes.at(p.pod.UID); !last.IsZero() && u.now.Sub(last) < u.r.Limits.MinApplyInterval {
		u.hold(v1alpha1.ReasonWaitingForMinApplyInterval, fmt.Sprintf("Pod %s: %s; it was resized at %s, the next resize is allowed %s after it",
			p.pod.Name, p.why, last.UTC().Format(time.RFC3339), u.r.Limits.MinApplyInterval))
		u.recheckAt(last.Add(u.r.Limits.MinApplyInterval))
		return nil
	}
	if !u.allowed(p) {
		return nil
	}
	patch, err := resizePatch(p.pod, p.desired)
	if err != nil {
		return err
	}
	if err := u.r.Client.SubResource("resize").Patch(ctx, p.pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or changed meanwhile: the Pod watch brings it back.
			return nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			// The API server refuses this resize (a change it does not allow in place): replace
			// the Pod instead, as a resize the kubelet cannot make.
			// evict records the ResizeFailed Event, and counts the eviction as ResizeFailed.
			podResizesTotal.WithLabelValues("refused").Inc()
			p.action, p.why = podResizeFailed, fmt.Sprintf("the API server refused the resize: %v", err)
			return u.evict(ctx, p)
		}
		podResizesTotal.WithLabelValues("failed").Inc()
		return fmt.Errorf("resizing Pod %s: %w", p.pod.Name, err)
	}
	u.r.resizes.record(p.pod.UID, u.now)
	podResizesTotal.WithLabelValues("requested").Inc()
	u.resized++
	ctrl.LoggerFrom(ctx).Info("Resized Pod in place", "pod", p.pod.Name, "target", u.w.key)
	u.r.Recorder.Eventf(u.vs, p.pod, corev1.EventTypeNormal, v1alpha1.ReasonPodResized, "Resize", "Resized Pod %s in place: %s", p.pod.Name, p.why)
	return nil
}

// evict evicts p's Pod through the Eviction API, if the guards allow it.
func (u *podUpdate) evict(ctx context.Context, p *podPlan) error {
	if p.action == podResizeFailed {
		u.r.Recorder.Eventf(u.vs, p.pod, corev1.EventTypeWarning, v1alpha1.ReasonResizeFailed, "Resize", "Pod %s: %s", p.pod.Name, p.why)
	}
	if unmet := unmetRequirements(u.vs, p.containers, p.desired); unmet != "" && p.action == podOff {
		u.hold(v1alpha1.ReasonEvictionRequirements, fmt.Sprintf("Pod %s: %s; %s", p.pod.Name, p.why, unmet))
		return nil
	}
	if p.action == podOff && u.unsized != nil {
		u.hold(v1alpha1.ReasonReplacementsUnsized, fmt.Sprintf("Pod %s: %s; but Pod %s, created at %s, since new Pods of %s are to get the recommendation at admission, "+
			"did not get it: the admission policy does not size them (is switchboard-verticalscaler-pod-resources installed and bound?), "+
			"so a replacement would come back the same, and none is evicted",
			p.pod.Name, p.why, u.unsized.Name, u.unsized.CreationTimestamp.UTC().Format(time.RFC3339), u.w.key))
		return nil
	}
	minReplicas := u.r.Limits.MinReplicas
	if policy := u.vs.Spec.UpdatePolicy; policy != nil && policy.MinReplicas != nil {
		minReplicas = *policy.MinReplicas
	}
	if live, of := u.replicasOf(p.pod); live < int(minReplicas) {
		u.hold(v1alpha1.ReasonMinReplicas, fmt.Sprintf("Pod %s: %s; %s has %d live Pods, fewer than minReplicas %d, so none is evicted",
			p.pod.Name, p.why, of, live, minReplicas))
		return nil
	}
	if u.unavailable >= u.r.Limits.MaxUnavailablePerWorkload {
		u.hold(v1alpha1.ReasonDisruptionLimit, fmt.Sprintf("Pod %s: %s; %d of the Pods of %s are unavailable or not created yet, at most %d may be (--max-unavailable-per-workload)",
			p.pod.Name, p.why, u.unavailable, u.w.key, u.r.Limits.MaxUnavailablePerWorkload))
		return nil
	}
	if !u.allowed(p) {
		return nil
	}
	eviction := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.pod.Namespace, Name: p.pod.Name}}
	// Not retried: client-go would wait out a refusal's Retry-After (10 s) up to ten times,
	// holding a worker; the Pod watch and the next reconcile try again.
	err := u.r.CoreV1.Post().Namespace(p.pod.Namespace).Resource("pods").Name(p.pod.Name).SubResource("eviction").
		Body(eviction).MaxRetries(0).Do(ctx).Error()
	if err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsTooManyRequests(err):
			// A PodDisruptionBudget allows no disruption now; its status changes bring the
			// Pods' events, and the next reconcile tries again.
			u.hold(v1alpha1.ReasonPodDisruptionBudget, fmt.Sprintf("Pod %s: %s; the Eviction API refused: %v", p.pod.Name, p.why, err))
			u.recheckAt(u.now.Add(10 * time.Second))
			return nil
		}
		return fmt.Errorf("evicting Pod %s: %w", p.pod.Name, err)
	}
	reason := "Recreate"
	if p.action == podResizeFailed {
		reason = "ResizeFailed"
	}
	evictionsTotal.WithLabelValues(reason).Inc()
	u.evicted++
	u.unavailable++
	ctrl.LoggerFrom(ctx).Info("Evicted Pod", "pod", p.pod.Name, "target", u.w.key, "reason", reason)
	u.r.Recorder.Eventf(u.vs, p.pod, corev1.EventTypeNormal, v1alpha1.ReasonPodEvicted, "Evict",
		"Evicted Pod %s to replace it at the recommended size: %s", p.pod.Name, p.why)
	return nil
}

// state is the Applied condition of the reconcile: Applied when every Pod carries the
// recommendation, Updating while changes are under way, else the first thing that held one
// back.
func (u *podUpdate) state() applyState {
	updating := fmt.Sprintf("%d Pods resized in place and %d evicted now, %d resizes under way", u.resized, u.evicted, u.waiting)
	switch {
	case u.resized+u.evicted > 0 && u.held != "":
		return applyState{reason: v1alpha1.ReasonUpdating, wait: u.wait, message: updating + "; " + u.heldWhy}
	case u.held != "":
		return applyState{reason: u.held, message: u.heldWhy, wait: u.wait}
	case u.resized+u.evicted+u.waiting > 0:
		return applyState{reason: v1alpha1.ReasonUpdating, wait: u.wait, message: updating}
	}
	return applyState{reason: v1alpha1.ReasonApplied, message: appliedMessage}
}

// resizePatch is the strategic merge patch of the resize subresource that gives pod's containers
// and native sidecars the desired resources.
func resizePatch(pod *corev1.Pod, desired map[string]corev1.ResourceRequirements) ([]byte, error) {
	type entry struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources"`
	}
	entries := func(cs []corev1.Container, sidecarsOnly bool) []entry {
		var out []entry
		for _, c := range cs {
			want, ok := desired[c.Name]
			if !ok || (sidecarsOnly && !recommender.IsNativeSidecar(c)) {
				continue
			}
			out = append(out, entry{Name: c.Name, Resources: want})
		}
		return out
	}
	spec := map[string]any{}
	if e := entries(pod.Spec.Containers, false); len(e) > 0 {
		spec["containers"] = e
	}
	if e := entries(pod.Spec.InitContainers, true); len(e) > 0 {
		spec["initContainers"] = e
	}
	return json.Marshal(map[string]any{"spec": spec})
}
