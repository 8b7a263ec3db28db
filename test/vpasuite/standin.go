package main

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The names the VPA's admission controller registers its webhook under, which the
// admission-controller suite waits for before each spec (waitForVpaWebhookRegistration).
const (
	vpaWebhookConfiguration = "vpa-webhook-config"
	vpaWebhook              = "vpa.k8s.io"
)

// webhookStandIn is a MutatingWebhookConfiguration of the VPA admission controller's names
// with no rules: the API server calls it for nothing. Switchboard sizes new Pods with a
// MutatingAdmissionPolicy instead, and the specs only look for the registration. The manager
// runs with --vpa-detect-components=false, since this registration is what it takes for the
// VPA's own admission controller otherwise.
func webhookStandIn() *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	url := "https://vpa-webhook-stand-in.invalid/"
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: vpaWebhookConfiguration, Labels: map[string]string{"app.kubernetes.io/managed-by": "vpasuite"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    vpaWebhook,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &ignore,
		}},
	}
}

// registerWebhookStandIn creates webhookStandIn, or leaves it when it exists.
func registerWebhookStandIn(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, webhookStandIn()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering the stand-in for the VPA's webhook: %w", err)
	}
	return nil
}
