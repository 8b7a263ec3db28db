package verticalscaler

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/switchboard/controllers/verticalscaler/recommender"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get,resourceNames=vpa-webhook-config

// vpaWebhookConfiguration is the MutatingWebhookConfiguration the VPA's admission controller
// registers itself under, and the VPA's uninstall deletes.
const vpaWebhookConfiguration = "vpa-webhook-config"

// vpaRecommenderActiveWithin is how recently a VerticalPodAutoscalerCheckpoint must have been
// written for its recommender to count as running: the VPA's recommender rewrites the
// checkpoints of its VPAs on every loop (a minute by default), a few at a time.
const vpaRecommenderActiveWithin = 10 * time.Minute

// vpaComponentsRunning says which of the Vertical Pod Autoscaler's own components seem to run,
// so that the verticalpodautoscaler controller, which does their work, does not fight them; ""
// when none does. The admission controller registers vpa-webhook-config; the recommender
// rewrites its VerticalPodAutoscalerCheckpoints every minute or so. The updater evicts nothing
// without a live admission controller, so the two tell whether a VPA acts on Pods. namespaces
// are the manager's (none for all), where checkpoints are listed.
func vpaComponentsRunning(ctx context.Context, reader client.Reader, namespaces []string, now time.Time) (string, error) {
	webhook := &metav1.PartialObjectMetadata{}
	webhook.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"))
	err := reader.Get(ctx, client.ObjectKey{Name: vpaWebhookConfiguration}, webhook)
	switch {
	case err == nil:
		return fmt.Sprintf("the VPA's admission controller is registered (MutatingWebhookConfiguration %s exists): remove the VPA's components, or delete that leftover; the manager looks again every minute", vpaWebhookConfiguration), nil
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", vpaWebhookConfiguration, err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	// In pages, as the look is made every minute and stops at the first fresh checkpoint.
	// Without the VPA CRDs there are none: no VPA recommender writes anything.
	running := ""
	for _, ns := range namespaces {
		if err := recommender.EachVPACheckpointPage(ctx, reader, ns, func(page []unstructured.Unstructured) bool {
			running = freshCheckpoint(page, now)
			return running != ""
		}); err != nil || running != "" {
			return running, err
		}
	}
	return "", nil
}

// freshCheckpoint says that the VPA's recommender runs if one of checkpoints was written less
// than vpaRecommenderActiveWithin before now; "" otherwise.
func freshCheckpoint(checkpoints []unstructured.Unstructured, now time.Time) string {
	for i := range checkpoints {
		written, _, _ := unstructured.NestedString(checkpoints[i].Object, "status", "lastUpdateTime")
		at, err := time.Parse(time.RFC3339, written)
		if err == nil && now.Sub(at) < vpaRecommenderActiveWithin {
			return fmt.Sprintf("the VPA's recommender runs (it wrote VerticalPodAutoscalerCheckpoint %s/%s at %s): remove the VPA's components; the manager looks again every minute, and takes over from %s if none is written until then",
				checkpoints[i].GetNamespace(), checkpoints[i].GetName(), written, at.Add(vpaRecommenderActiveWithin).Format(time.RFC3339))
		}
	}
	return ""
}
