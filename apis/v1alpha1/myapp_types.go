package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MyAppPhase is a one-word summary of a MyApp, derived from its conditions.
// +kubebuilder:validation:Enum=Pending;Running;Failed;Terminating
type MyAppPhase string

// The phases of a MyApp.
const (
	// MyAppPending means the Deployment does not have every replica ready yet.
	MyAppPending MyAppPhase = "Pending"
	// MyAppRunning means every replica is ready and the Deployment is available.
	MyAppRunning MyAppPhase = "Running"
	// MyAppFailed means the spec cannot be carried out (for example a name conflict) or the
	// rollout is stuck; the Ready condition says why.
	MyAppFailed MyAppPhase = "Failed"
	// MyAppTerminating means the MyApp is being deleted.
	MyAppTerminating MyAppPhase = "Terminating"
)

// MyAppFinalizer is held on every MyApp the myapp controller has acted on, so that the
// controller can release what owner references do not cover before the MyApp goes away.
const MyAppFinalizer = "app.example.com/finalizer"

// MyAppSpec is what the user asks for: run this image, this many times, on this port.
// +kubebuilder:validation:XValidation:rule="!has(self.env) || !has(self.envFrom) || size(self.env) + size(self.envFrom) <= 128",message="env and envFrom together may hold at most 128 entries"
type MyAppSpec struct {
	// Image is the container image reference: an optional registry host (with an optional
	// port), a slash-separated lowercase path, then a tag, a digest, or both. Examples:
	// "nginx:1.27", "registry.example.com:5000/team/app:v1.2", "app@sha256:<64 hex digits>".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^(([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?)/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*(:[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$')",message="must be an image reference: [registry[:port]/]path[:tag][@digest], lowercase path, for example nginx:1.27 or registry.example.com:5000/team/app@sha256:<hex>"
	Image string `json:"image"`

	// Replicas is the number of Pods to run.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Replicas int32 `json:"replicas,omitempty"`

	// Port is the container port the application listens on; the Service exposes it under the
	// same number.
	// +optional
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Env sets environment variables in the container, by name. Names follow the rules for
	// environment variable names in Pods.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[-._a-zA-Z][-._a-zA-Z0-9]*$'))",message="environment variable names must start with a letter, '_', '-' or '.', and hold only letters, digits, '_', '-' and '.'"
	Env map[string]string `json:"env,omitempty"`

	// EnvFrom takes environment variables from ConfigMaps in the MyApp's namespace. The
	// Deployment is opted in to the configmapwatcher, so that a change of the data of one of
	// these ConfigMaps rolls the Pods.
	// +optional
	// +listType=map
	// +listMapKey=configMapName
	// +kubebuilder:validation:MaxItems=32
	EnvFrom []ConfigMapEnvSource `json:"envFrom,omitempty"`
}

// ConfigMapEnvSource names a ConfigMap whose keys become environment variables.
type ConfigMapEnvSource struct {
	// ConfigMapName is the name of a ConfigMap in the MyApp's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a ConfigMap name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	ConfigMapName string `json:"configMapName"`

	// Optional lets the Pods start when the ConfigMap does not exist.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// MyAppStatus is what the myapp controller observed, computed from the owned Deployment.
type MyAppStatus struct {
	// Phase is a one-word summary derived from the conditions.
	// +optional
	Phase MyAppPhase `json:"phase,omitempty"`

	// ReadyReplicas is the owned Deployment's count of ready Pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// ObservedGeneration is the generation of the spec that the controller last carried out
	// without error.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Available and Progressing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MyApp runs a container image as a Deployment with a Service in front of it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ma
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Ready",type="integer",JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type MyApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MyAppSpec `json:"spec"`
	// +optional
	Status MyAppStatus `json:"status,omitempty"`
}

// MyAppList is a list of MyApps.
//
// +kubebuilder:object:root=true
type MyAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MyApp `json:"items"`
}
