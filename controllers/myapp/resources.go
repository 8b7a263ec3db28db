package myapp

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/example/switchboard/apis/v1alpha1"
)

// ContainerName is the name of the one container of a MyApp's Pods.
const ContainerName = "app"

// portName names the container port and the Service port.
const portName = "http"

// selectorLabels select a MyApp's Pods. They never change for a given MyApp, because a
// Deployment's selector is immutable.
func selectorLabels(app *v1alpha1.MyApp) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "myapp",
		"app.kubernetes.io/instance": app.Name,
	}
}

// objectLabels label the Deployment, the Service and the Pods.
func objectLabels(app *v1alpha1.MyApp) map[string]string {
	labels := selectorLabels(app)
	labels["app.kubernetes.io/managed-by"] = "switchboard"
	return labels
}

// metadataLabels label the Deployment and the Service: objectLabels and those of the MyApp's
// labels whose keys are in shardLabels (the keys --watch-label-selector names), so that the
// objects a MyApp owns fall in its shard and the shard's manager caches them. The Pods do not
// get them: moving a MyApp to another shard must not roll its Pods.
func metadataLabels(app *v1alpha1.MyApp, shardLabels []string) map[string]string {
	labels := objectLabels(app)
	for _, key := range shardLabels {
		if value, ok := app.Labels[key]; ok {
			labels[key] = value
		}
	}
	return labels
}

// ownerReference makes the MyApp the controller of what it creates.
func ownerReference(app *v1alpha1.MyApp) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("MyApp").
		WithName(app.Name).
		WithUID(app.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// desiredDeployment returns every field of the Deployment that the myapp field manager owns,
// and only those. Fields the API server would default are set explicitly, so that what the
// field manager owns reads back equal to this and a steady state sends nothing.
func desiredDeployment(app *v1alpha1.MyApp, shardLabels []string) *appsv1ac.DeploymentApplyConfiguration {
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(app.Spec.Image).
		WithPorts(corev1ac.ContainerPort().
			WithName(portName).
			WithContainerPort(app.Spec.Port).
			WithProtocol(corev1.ProtocolTCP))
	for _, name := range slices.Sorted(maps.Keys(app.Spec.Env)) {
		container.WithEnv(corev1ac.EnvVar().WithName(name).WithValue(app.Spec.Env[name]))
	}
	for _, from := range app.Spec.EnvFrom {
		source := corev1ac.ConfigMapEnvSource().WithName(from.ConfigMapName)
		if from.Optional {
			source.WithOptional(true)
		}
		container.WithEnvFrom(corev1ac.EnvFromSource().WithConfigMapRef(source))
	}

	deployment := appsv1ac.Deployment(app.Name, app.Namespace).
		WithLabels(metadataLabels(app, shardLabels)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(app.Spec.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(app))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(objectLabels(app)).
				WithSpec(corev1ac.PodSpec().WithContainers(container))))
	if len(app.Spec.EnvFrom) > 0 {
		// Opt the Deployment in to the configmapwatcher, so a change of the data of a
		// ConfigMap it takes env from rolls its Pods.
		deployment.WithAnnotations(map[string]string{v1alpha1.ReloadAnnotation: "true"})
	}
	return deployment
}

// desiredService returns every field of the Service that the myapp field manager owns.
func desiredService(app *v1alpha1.MyApp, shardLabels []string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(app.Name, app.Namespace).
		WithLabels(metadataLabels(app, shardLabels)).
		WithOwnerReferences(ownerReference(app)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(selectorLabels(app)).
			WithPorts(corev1ac.ServicePort().
				WithName(portName).
				WithPort(app.Spec.Port).
				WithTargetPort(intstr.FromString(portName)).
				WithProtocol(corev1.ProtocolTCP)))
}
