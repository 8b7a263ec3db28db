package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The namespace and label of the VPA recommender's Pod, which the recommender suite's restart
// specs delete (deleteRecommender) to restart the recommender, as its Deployment would.
const (
	vpaNamespace       = "kube-system"
	recommenderLabel   = "app.kubernetes.io/component"
	recommenderLabelIs = "recommender"
)

// recommenderStandIn is a Pod of the VPA recommender's namespace and label, on a kwok node.
// Switchboard's manager runs beside the cluster, not in a Pod: the runner restarts the manager
// when the specs delete this Pod, and puts another in its place.
func recommenderStandIn() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "vpa-recommender-stand-in-", Namespace: vpaNamespace,
			Labels: map[string]string{recommenderLabel: recommenderLabelIs, "app.kubernetes.io/managed-by": "vpasuite"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "recommender", Image: "switchboard-stand-in"}}},
	}
}

// superviseRecommenderStandIn keeps a recommenderStandIn in place until ctx ends: whenever the
// one it made is deleted (or being deleted), it calls restart, then makes another. Failures are
// told on stderr and retried: a spec that needs the restart then fails, and says why.
func superviseRecommenderStandIn(ctx context.Context, c client.Client, restart func() error) {
	var current types.UID
	for {
		if current == "" {
			pod := recommenderStandIn()
			if err := c.Create(ctx, pod); err != nil {
				if ctx.Err() != nil {
					return
				}
				fmt.Fprintf(os.Stderr, "Creating the stand-in of the VPA recommender's Pod failed (retrying): %v\n", err)
			} else {
				current = pod.UID
			}
		} else if gone, err := deleted(ctx, c, current); err != nil {
			if ctx.Err() != nil {
				return
			}
			fmt.Fprintf(os.Stderr, "Reading the stand-in of the VPA recommender's Pod failed (retrying): %v\n", err)
		} else if gone {
			fmt.Fprintln(os.Stderr, "The stand-in of the VPA recommender's Pod was deleted: restarting the manager, as the recommender's Deployment would restart it")
			if err := restart(); err != nil {
				fmt.Fprintf(os.Stderr, "Restarting the manager failed: %v\n", err)
			}
			current = ""
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// deleted says whether the stand-in of UID uid is gone or being deleted.
func deleted(ctx context.Context, c client.Client, uid types.UID) (bool, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(vpaNamespace), client.MatchingLabels{recommenderLabel: recommenderLabelIs}); err != nil {
		return false, err
	}
	for _, p := range pods.Items {
		if p.UID == uid {
			return p.DeletionTimestamp != nil, nil
		}
	}
	return true, nil
}
