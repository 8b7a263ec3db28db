package recommender

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/switchboard/apis/v1alpha1"
	"github.com/example/switchboard/sources"
)

// Source names the verticalscaler's usage poller in the channel-source registry.
const Source sources.Name = "metrics"

// DefaultUsageInterval is how often the metrics producer reads usage: metrics-server scrapes
// every 15 to 60 seconds, so reading more often would only read the same sample again.
const DefaultUsageInterval = time.Minute

// UsageProducer is the verticalscaler's usage poller, the producer of Source. Every Interval it
// reads the usage of the Pods of each Deployment some VerticalScaler names, adds it to that
// Deployment's compact per-container history (ContainerHistory), and has news for a
// VerticalScaler only when the recommendation moved by more than Threshold from what its status
// holds, or when usage cannot be read and its status does not say so yet. It stores the news in
// Reports and sends the VerticalScaler's key.
//
// The producer compares with the status the controller wrote, not with what it sent, so news
// whose event was dropped is sent again on the next cycle: level-triggered, like the periodic
// source.
type UsageProducer struct {
	// Cache lists VerticalScalers and reads Deployments; the manager's cache.
	Cache client.Reader
	// Usage reads the Pods' usage.
	Usage UsageReader
	// Interval is the time between two reads.
	Interval time.Duration
	// Threshold is the fraction by which a recommendation must move to be sent.
	Threshold float64
	// Reports receives the news; the controller reads it from there.
	Reports *Reports

	// histories are per Deployment; only Run's goroutine touches them.
	histories map[types.NamespacedName]*deploymentHistory
}

// deploymentHistory is the usage history of the containers of one Deployment's Pods.
type deploymentHistory struct {
	containers map[string]*ContainerHistory
	// lastSample is, per Pod, the timestamp of the last sample taken, so that a measurement
	// read twice counts once.
	lastSample map[string]time.Time
}

// Run reads usage every Interval until ctx ends.
func (p *UsageProducer) Run(ctx context.Context, producer *sources.Producer) error {
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) { p.cycle(ctx, producer) }, p.Interval, sources.PeriodicJitter, true)
	return nil
}

// cycle reads usage once for every targeted Deployment and sends what changed. A failed list of
// VerticalScalers is logged and retried on the next cycle.
func (p *UsageProducer) cycle(ctx context.Context, producer *sources.Producer) {
	log := logf.FromContext(ctx).WithValues("source", string(producer.Source()))
	if p.histories == nil {
		p.histories = map[types.NamespacedName]*deploymentHistory{}
	}
	var list v1alpha1.VerticalScalerList
	if err := p.Cache.List(ctx, &list); err != nil {
		log.Error(err, "Listing VerticalScalers failed")
		return
	}
	byDeployment := map[types.NamespacedName][]*v1alpha1.VerticalScaler{}
	for i := range list.Items {
		vs := &list.Items[i]
		key := types.NamespacedName{Namespace: vs.Namespace, Name: vs.Spec.DeploymentName}
		byDeployment[key] = append(byDeployment[key], vs)
	}
	for key, scalers := range byDeployment {
		estimates, readErr := p.observe(ctx, key)
		for _, vs := range scalers {
			r := report(vs, estimates, readErr, p.Threshold)
			if r == nil {
				continue
			}
			key := types.NamespacedName{Namespace: vs.Namespace, Name: vs.Name}
			p.Reports.Store(key, *r)
			// Only the key travels: the news is in Reports.
			news := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
			for _, controller := range producer.Consumers() {
				// A full buffer drops the event and counts it; the next cycle sends it again
				// because the status still differs.
				if err := producer.Send(controller, news); err != nil && !errors.Is(err, sources.ErrBufferFull) {
					log.Error(err, "Sending usage report failed", "controller", controller)
				}
			}
		}
	}
	// Forget the Deployments nobody targets any more.
	for key := range p.histories {
		if _, ok := byDeployment[key]; !ok {
			delete(p.histories, key)
		}
	}
}

// observe reads the usage of one Deployment's Pods into its history and returns the estimate
// per container of its Pod template. A Deployment that does not exist has nothing to say (the
// controller reports it) and loses its history.
func (p *UsageProducer) observe(ctx context.Context, key types.NamespacedName) (map[string]Estimate, error) {
	var d appsv1.Deployment
	if err := p.Cache.Get(ctx, key, &d); err != nil {
		if apierrors.IsNotFound(err) {
			delete(p.histories, key)
			return nil, nil
		}
		return nil, fmt.Errorf("reading Deployment %s: %w", key.Name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of Deployment %s: %w", key.Name, err)
	}
	pods, err := p.Usage.PodUsage(ctx, key.Namespace, selector)
	if err != nil {
		return nil, err
	}
	h := p.histories[key]
	if h == nil {
		h = &deploymentHistory{containers: map[string]*ContainerHistory{}, lastSample: map[string]time.Time{}}
		p.histories[key] = h
	}
	containers := map[string]bool{}
	for _, c := range d.Spec.Template.Spec.Containers {
		containers[c.Name] = true
	}
	h.add(pods, containers)
	estimates := map[string]Estimate{}
	for name, history := range h.containers {
		if e, ok := history.Estimate(len(containers)); ok {
			estimates[name] = e
		}
	}
	return estimates, nil
}

// add adds the new samples of the given containers, and forgets the Pods and containers that
// are gone.
func (h *deploymentHistory) add(pods []PodUsage, containers map[string]bool) {
	seen := map[string]bool{}
	for _, pod := range pods {
		seen[pod.Pod] = true
		if !pod.Timestamp.After(h.lastSample[pod.Pod]) {
			continue
		}
		h.lastSample[pod.Pod] = pod.Timestamp
		for name, usage := range pod.Containers {
			if !containers[name] {
				continue
			}
			if h.containers[name] == nil {
				h.containers[name] = NewContainerHistory()
			}
			h.containers[name].AddSample(usage, pod.Timestamp)
		}
	}
	for pod := range h.lastSample {
		if !seen[pod] {
			delete(h.lastSample, pod)
		}
	}
	for name := range h.containers {
		if !containers[name] {
			delete(h.containers, name)
		}
	}
}

// recommendedMessage is the message of RecommendationProvided=True; it does not change from one
// report to the next, so that a report changes the status only through the recommendation.
const recommendedMessage = "Recommended from the usage of the Deployment's Pods"

// report returns the news for vs, or nil when its status already says it: the estimates moved
// by no more than threshold from status.recommendation's uncapped targets, or usage cannot be
// read and the status already says MetricsUnavailable. With no estimate yet (no samples) there
// is nothing to say.
func report(vs *v1alpha1.VerticalScaler, estimates map[string]Estimate, readErr error, threshold float64) *Report {
	provided := meta.FindStatusCondition(vs.Status.Conditions, v1alpha1.ConditionRecommendationProvided)
	if readErr != nil {
		if provided != nil && provided.Reason == v1alpha1.ReasonMetricsUnavailable {
			return nil
		}
		return &Report{DeploymentName: vs.Spec.DeploymentName, Provided: metav1.Condition{Type: v1alpha1.ConditionRecommendationProvided,
			Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonMetricsUnavailable, Message: readErr.Error()}}
	}
	if len(estimates) == 0 {
		return nil
	}
	if provided != nil && provided.Reason == v1alpha1.ReasonRecommended && !moved(vs.Status.Recommendation, vs.Spec.DeploymentName, estimates, threshold) {
		return nil
	}
	names := make([]string, 0, len(estimates))
	for name := range estimates {
		names = append(names, name)
	}
	sort.Strings(names)
	rec := &v1alpha1.Recommendation{DeploymentName: vs.Spec.DeploymentName}
	for _, name := range names {
		e := estimates[name]
		rec.ContainerRecommendations = append(rec.ContainerRecommendations, v1alpha1.ContainerRecommendation{
			ContainerName: name, Target: e.Target, LowerBound: e.LowerBound, UpperBound: e.UpperBound,
			UncappedTarget: e.Target,
		})
	}
	return &Report{DeploymentName: vs.Spec.DeploymentName, Recommendation: rec, Provided: metav1.Condition{
		Type: v1alpha1.ConditionRecommendationProvided, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRecommended,
		Message: recommendedMessage}}
}

// moved says whether any container's estimate moved by more than threshold from the uncapped
// target in status, or has no recommendation there yet (none at all, or one for another
// Deployment than deploymentName).
func moved(status *v1alpha1.Recommendation, deploymentName string, estimates map[string]Estimate, threshold float64) bool {
	if status == nil || status.DeploymentName != deploymentName {
		return true
	}
	last := map[string]v1alpha1.ContainerRecommendation{}
	for _, c := range status.ContainerRecommendations {
		last[c.ContainerName] = c
	}
	for name, e := range estimates {
		c, ok := last[name]
		if !ok || Moved(c.UncappedTarget, e.Target, threshold) {
			return true
		}
	}
	return false
}
