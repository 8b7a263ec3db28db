package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Argo Rollouts controller does not run here (it is not built from the module proxy), so
// rolloutsStandIn plays what Reloader's suites see of it, as kube-controller-manager's
// ReplicaSet controller and kwok play the rest: for each Rollout, a ReplicaSet of its current
// Pod template scaled to spec.replicas, the ReplicaSets of its earlier templates scaled to zero
// (a canary whose one step is setWeight 100, as the suites' Rollouts are), and the Rollout's
// status replicas from its current ReplicaSet's. The suites wait for readyReplicas ==
// spec.replicas, find the Rollout's Pods by its labels (the SecretProviderClass specs find
// their statuses through them), and then watch the Rollout's spec.

var rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}

// podTemplateHashLabel is the label Argo Rollouts gives a Rollout's ReplicaSets and Pods.
const podTemplateHashLabel = "rollouts-pod-template-hash"

// rolloutsSyncInterval is how often the stand-in brings every Rollout to its template.
const rolloutsSyncInterval = 250 * time.Millisecond

type rolloutsStandIn struct{ c client.Client }

// startRolloutsStandIn starts the stand-in, which logs to logPath; the returned function stops
// it.
func startRolloutsStandIn(ctx context.Context, cfg *rest.Config, logPath string) (stop func(), err error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	r := &rolloutsStandIn{c: c}
	return startStandIn(ctx, logPath, rolloutsSyncInterval, r.sync)
}

func (r *rolloutsStandIn) sync(ctx context.Context) error {
	rollouts := &unstructured.UnstructuredList{}
	rollouts.SetGroupVersionKind(rolloutGVK.GroupVersion().WithKind(rolloutGVK.Kind + "List"))
	if err := r.c.List(ctx, rollouts); err != nil {
		return fmt.Errorf("listing Rollouts: %w", err)
	}
	var errs []error
	for i := range rollouts.Items {
		if err := r.syncRollout(ctx, &rollouts.Items[i]); err != nil {
			errs = append(errs, fmt.Errorf("rollout %s/%s: %w", rollouts.Items[i].GetNamespace(), rollouts.Items[i].GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// syncRollout brings one Rollout's ReplicaSets to its template and its status to theirs.
func (r *rolloutsStandIn) syncRollout(ctx context.Context, rollout *unstructured.Unstructured) error {
	if rollout.GetDeletionTimestamp() != nil {
		return nil
	}
	var spec struct {
		Replicas *int32                 `json:"replicas"`
		Selector *metav1.LabelSelector  `json:"selector"`
		Template corev1.PodTemplateSpec `json:"template"`
	}
	raw, _, _ := unstructured.NestedMap(rollout.Object, "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return fmt.Errorf("reading its spec: %w", err)
	}
	if spec.Selector == nil {
		return errors.New("no spec.selector")
	}
	replicas := int32(1)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	hash, err := templateHash(spec.Template)
	if err != nil {
		return err
	}
	var sets appsv1.ReplicaSetList
	if err := r.c.List(ctx, &sets, client.InNamespace(rollout.GetNamespace())); err != nil {
		return err
	}
	var current *appsv1.ReplicaSet
	for i := range sets.Items {
		rs := &sets.Items[i]
		if !metav1.IsControlledBy(rs, rollout) {
			continue
		}
		if rs.Labels[podTemplateHashLabel] == hash {
			current = rs
			continue
		}
		if rs.Spec.Replicas == nil || *rs.Spec.Replicas != 0 {
			rs.Spec.Replicas = new(int32(0))
			if err := r.c.Update(ctx, rs); err != nil {
				return fmt.Errorf("scaling ReplicaSet %s down: %w", rs.Name, err)
			}
		}
	}
	if current == nil {
		current = replicaSetOf(rollout, spec.Selector, spec.Template, hash, replicas)
		if err := r.c.Create(ctx, current); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ReplicaSet %s: %w", current.Name, err)
		}
	} else if current.Spec.Replicas == nil || *current.Spec.Replicas != replicas {
		current.Spec.Replicas = &replicas
		if err := r.c.Update(ctx, current); err != nil {
			return fmt.Errorf("scaling ReplicaSet %s: %w", current.Name, err)
		}
	}
	return r.writeStatus(ctx, rollout, current.Status)
}

// writeStatus sets the Rollout's status replicas from its current ReplicaSet's, when they
// differ.
func (r *rolloutsStandIn) writeStatus(ctx context.Context, rollout *unstructured.Unstructured, rs appsv1.ReplicaSetStatus) error {
	want := map[string]int64{
		"replicas":          int64(rs.Replicas),
		"updatedReplicas":   int64(rs.Replicas),
		"readyReplicas":     int64(rs.ReadyReplicas),
		"availableReplicas": int64(rs.AvailableReplicas),
	}
	status, _, _ := unstructured.NestedMap(rollout.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	changed := false
	for field, value := range want {
		if got, ok := status[field].(int64); !ok || got != value {
			status[field] = value
			changed = true
		}
	}
	if generation := strconv.FormatInt(rollout.GetGeneration(), 10); status["observedGeneration"] != generation {
		status["observedGeneration"] = generation
		changed = true
	}
	if !changed {
		return nil
	}
	if err := unstructured.SetNestedMap(rollout.Object, status, "status"); err != nil {
		return err
	}
	return r.c.Status().Update(ctx, rollout)
}

// replicaSetOf is the ReplicaSet of a Rollout's template, as Argo Rollouts names and labels it.
func replicaSetOf(rollout *unstructured.Unstructured, selector *metav1.LabelSelector, template corev1.PodTemplateSpec, hash string, replicas int32) *appsv1.ReplicaSet {
	labels := maps.Clone(template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[podTemplateHashLabel] = hash
	template.Labels = labels
	sel := selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[podTemplateHashLabel] = hash
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            rollout.GetName() + "-" + hash,
			Namespace:       rollout.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rollout, rolloutGVK)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: sel, Template: template},
	}
}

// templateHash is a short hash of a Pod template, which names and labels its ReplicaSet.
func templateHash(template corev1.PodTemplateSpec) (string, error) {
	data, err := json.Marshal(template)
	if err != nil {
		return "", err
	}
	h := fnv.New32a()
	_, _ = h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 36), nil
}
