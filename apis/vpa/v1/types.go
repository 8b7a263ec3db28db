// Package v1 is the Vertical Pod Autoscaler's API, autoscaling.k8s.io/v1, as Switchboard reads
// and writes it: the VerticalPodAutoscaler's spec and status, field for field as VPA v1.8.1
// serves them. Switchboard does not own this API and registers nothing here with a scheme: the
// verticalscaler reads VerticalPodAutoscalers as unstructured objects and converts their spec
// into these types strictly, so that a field this package does not know (one a newer VPA added)
// is refused by name instead of dropped.
//
// The CRDs of config/crd/vpa are generated from these types, for a cluster that has none of the
// VPA's own (the Helm chart's crds.vpa): the markers give them the VPA v1.8.1 CRDs' names,
// columns and validation, and config/vpa_crds_test.go holds their schemas to those of the
// VPA's release.
//
// These are Switchboard's own types rather than the VPA's Go module: that module requires newer
// versions of libraries the manager shares with the kube-apiserver that `make test` builds
// (kube-openapi, go-openapi, cbor, prometheus), and a second version of each would be compiled
// on every cold build.
//
// +groupName=autoscaling.k8s.io
package v1

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of the VerticalPodAutoscaler.
var GroupVersion = schema.GroupVersion{Group: "autoscaling.k8s.io", Version: "v1"}

// Kind is the VerticalPodAutoscaler's kind.
const Kind = "VerticalPodAutoscaler"

// DefaultRecommenderName is the recommender a VerticalPodAutoscaler without recommenders is
// meant for.
const DefaultRecommenderName = "default"

// VerticalPodAutoscaler sizes the containers of a workload's Pods.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=vpa
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.updatePolicy.updateMode"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.recommendation.containerRecommendations[0].target.cpu"
// +kubebuilder:printcolumn:name="Mem",type="string",JSONPath=".status.recommendation.containerRecommendations[0].target.memory"
// +kubebuilder:printcolumn:name="Provided",type="string",JSONPath=".status.conditions[?(@.type=='RecommendationProvided')].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="MinReplicas",type="integer",JSONPath=".spec.updatePolicy.minReplicas",priority=1
// +kubebuilder:printcolumn:name="OOMSeconds",type="integer",JSONPath=".spec.updatePolicy.evictAfterOOMSeconds",priority=1
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes/kubernetes/pull/63797"
type VerticalPodAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says which workload is sized and how.
	Spec Spec `json:"spec"`
	// Status is the latest recommendation and the conditions.
	Status Status `json:"status,omitempty"`
}

// VerticalPodAutoscalerList is a list of VerticalPodAutoscalers.
//
// +kubebuilder:object:root=true
type VerticalPodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VerticalPodAutoscaler `json:"items"`
}

// Spec is a VerticalPodAutoscaler's spec.
type Spec struct {
	// TargetRef names the workload whose Pods are sized.
	// +required
	TargetRef *autoscalingv1.CrossVersionObjectReference `json:"targetRef,omitempty"`
	// UpdatePolicy says how recommendations reach the Pods.
	UpdatePolicy *PodUpdatePolicy `json:"updatePolicy,omitempty"`
	// ResourcePolicy bounds and scopes the recommendation per container.
	ResourcePolicy *PodResourcePolicy `json:"resourcePolicy,omitempty"`
	// Recommenders names the recommender meant to act on the object: none means the default.
	Recommenders []*RecommenderSelector `json:"recommenders,omitempty"`
	// StartupBoost raises CPU while a Pod starts. Switchboard does not do it: an object that
	// asks for it is ConfigUnsupported.
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`
}

// StartupBoost raises a container's resources while it starts.
type StartupBoost struct {
	// CPU is the boost of CPU.
	CPU *StartupBoostOfResource `json:"cpu,omitempty"`
}

// StartupBoostOfResource is how much one resource is raised while a container starts, and for
// how long.
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'Factor') == has(self.factor)",message="factor goes with type Factor, and with no other type"
// +kubebuilder:validation:XValidation:rule="(self.type == 'Quantity') == has(self.quantity)",message="quantity goes with type Quantity, and with no other type"
type StartupBoostOfResource struct {
	// Type is Factor (the request multiplied by factor) or Quantity (the request raised to
	// quantity).
	// +kubebuilder:validation:Enum=Factor;Quantity
	Type string `json:"type"`
	// Factor multiplies the request, with type Factor.
	Factor *int32 `json:"factor,omitempty"`
	// Quantity is the request while starting, with type Quantity.
	Quantity *resource.Quantity `json:"quantity,omitempty"`
	// DurationSeconds is how long the boost lasts once the container is ready.
	DurationSeconds *int32 `json:"durationSeconds,omitempty"`
}

// RecommenderSelector names a recommender.
type RecommenderSelector struct {
	// Name is the recommender's name.
	Name string `json:"name"`
}

// The update modes of PodUpdatePolicy.
const (
	UpdateModeOff               = "Off"
	UpdateModeInitial           = "Initial"
	UpdateModeRecreate          = "Recreate"
	UpdateModeAuto              = "Auto"
	UpdateModeInPlaceOrRecreate = "InPlaceOrRecreate"
	UpdateModeInPlace           = "InPlace"
)

// PodUpdatePolicy says how recommendations reach the Pods.
type PodUpdatePolicy struct {
	// UpdateMode is one of the UpdateMode constants; Recreate when unset.
	// +kubebuilder:validation:Enum=Off;Initial;Recreate;InPlaceOrRecreate;InPlace;Auto
	UpdateMode *string `json:"updateMode,omitempty"`
	// MinReplicas is the least number of live Pods for one to be evicted.
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// EvictionRequirements must all hold for a Pod to be evicted.
	EvictionRequirements []*EvictionRequirement `json:"evictionRequirements,omitempty"`
	// EvictAfterOOMSeconds lets a Pod OOM-killed this soon after its start be evicted early.
	// +kubebuilder:validation:Minimum=1
	EvictAfterOOMSeconds *int32 `json:"evictAfterOOMSeconds,omitempty"`
}

// EvictionRequirement holds when, for one of its resources, the recommendation moves the
// request in the direction it names.
type EvictionRequirement struct {
	// Resources are the resources it looks at.
	Resources []corev1.ResourceName `json:"resources"`
	// ChangeRequirement is TargetHigherThanRequests or TargetLowerThanRequests.
	// +kubebuilder:validation:Enum=TargetHigherThanRequests;TargetLowerThanRequests
	ChangeRequirement string `json:"changeRequirement"`
}

// PodResourcePolicy holds the per-container policies.
type PodResourcePolicy struct {
	// ContainerPolicies are per container name, "*" for every container without its own.
	ContainerPolicies []ContainerResourcePolicy `json:"containerPolicies,omitempty"`
}

// The container scaling modes of ContainerResourcePolicy.
const (
	ContainerScalingModeAuto = "Auto"
	ContainerScalingModeOff  = "Off"
)

// ContainerResourcePolicy bounds and scopes the recommendation of one container.
type ContainerResourcePolicy struct {
	// ContainerName is a container's name, or "*".
	ContainerName string `json:"containerName,omitempty"`
	// Mode is Auto (default) or Off, which leaves the container without a recommendation.
	// +kubebuilder:validation:Enum=Auto;Off
	Mode *string `json:"mode,omitempty"`
	// MinAllowed is the least recommendation, per resource.
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`
	// MaxAllowed is the largest recommendation, per resource.
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`
	// ControlledResources are the resources recommended; cpu and memory when unset, none when
	// set and empty.
	ControlledResources *[]corev1.ResourceName `json:"controlledResources,omitempty"`
	// ControlledValues is RequestsAndLimits (default) or RequestsOnly.
	// +kubebuilder:validation:Enum=RequestsAndLimits;RequestsOnly
	ControlledValues *string `json:"controlledValues,omitempty"`
	// OOMBumpUpRatio multiplies the memory of a container killed for lack of it.
	OOMBumpUpRatio *resource.Quantity `json:"oomBumpUpRatio,omitempty"`
	// OOMMinBumpUp is the least memory added after such a kill.
	OOMMinBumpUp *resource.Quantity `json:"oomMinBumpUp,omitempty"`
	// MemoryAggregationIntervalSeconds is the window of one memory peak.
	// +kubebuilder:validation:Minimum=1
	MemoryAggregationIntervalSeconds *int32 `json:"memoryAggregationIntervalSeconds,omitempty"`
	// MemoryAggregationIntervalCount is how many windows the history keeps.
	// +kubebuilder:validation:Minimum=1
	MemoryAggregationIntervalCount *int64 `json:"memoryAggregationIntervalCount,omitempty"`
	// StartupBoost is the container's own startup boost. Switchboard does not do it: an object
	// that asks for it is ConfigUnsupported.
	StartupBoost *StartupBoost `json:"startupBoost,omitempty"`
}

// Status is a VerticalPodAutoscaler's status.
type Status struct {
	// Recommendation is the latest recommendation.
	Recommendation *RecommendedPodResources `json:"recommendation,omitempty"`
	// Conditions are the condition types below, at most one of each, sorted by type.
	Conditions []Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the status is about.
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
}

// RecommendedPodResources is the recommendation of every container that has one.
type RecommendedPodResources struct {
	// ContainerRecommendations are per container; none for a container whose mode is Off.
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`
}

// RecommendedContainerResources is the recommendation of one container.
type RecommendedContainerResources struct {
	// ContainerName is the container's name.
	ContainerName string `json:"containerName,omitempty"`
	// Target is the recommended requests, within the container's policy.
	Target corev1.ResourceList `json:"target"`
	// LowerBound is the least requests that still look safe, within the policy.
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// UpperBound is the most requests worth giving, within the policy.
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// UncappedTarget is the target before the policy's bounds.
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
}

// The condition types of a VerticalPodAutoscaler that Switchboard writes. The VPA also
// defines LowConfidence and FetchingHistory, which its recommender (v1.8.1) never sets, and
// neither does Switchboard.
const (
	// ConditionRecommendationProvided is True once the status holds a recommendation.
	ConditionRecommendationProvided = "RecommendationProvided"
	// ConditionNoPodsMatched is True while no Pod of the target exists; absent otherwise.
	ConditionNoPodsMatched = "NoPodsMatched"
	// ConditionConfigUnsupported is True, with a message, when the object cannot be acted on;
	// absent otherwise.
	ConditionConfigUnsupported = "ConfigUnsupported"
	// ConditionConfigDeprecated is never True in v1; a status that has it loses it.
	ConditionConfigDeprecated = "ConfigDeprecated"
)

// Condition is one condition of a VerticalPodAutoscaler.
type Condition struct {
	// Type is one of the condition types.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// LastTransitionTime is when Status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word reason.
	Reason string `json:"reason,omitempty"`
	// Message says it in words.
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the generation the condition was set at.
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// CheckpointKind is the kind of the VPA recommender's checkpoints, one per VerticalPodAutoscaler
// and container, of the usage history it draws that container's recommendation from.
const CheckpointKind = "VerticalPodAutoscalerCheckpoint"

// CheckpointVersion is the version of the checkpoints' encoding that Switchboard reads, VPA
// v1.8.1's.
const CheckpointVersion = "v3"

// VerticalPodAutoscalerCheckpoint is the usage history of one container of a
// VerticalPodAutoscaler's target, as the VPA's recommender saves it.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=vpacheckpoint
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubernetes/kubernetes/pull/63797"
type VerticalPodAutoscalerCheckpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says whose history it is.
	Spec CheckpointSpec `json:"spec,omitempty"`
	// Status is the history.
	Status CheckpointStatus `json:"status,omitempty"`
}

// VerticalPodAutoscalerCheckpointList is a list of VerticalPodAutoscalerCheckpoints.
//
// +kubebuilder:object:root=true
type VerticalPodAutoscalerCheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VerticalPodAutoscalerCheckpoint `json:"items"`
}

// CheckpointSpec says whose history a VerticalPodAutoscalerCheckpoint holds.
type CheckpointSpec struct {
	// VPAObjectName is the VerticalPodAutoscaler's name.
	VPAObjectName string `json:"vpaObjectName,omitempty"`
	// ContainerName is the container's name.
	ContainerName string `json:"containerName,omitempty"`
}

// CheckpointStatus is the usage history of one container of a VerticalPodAutoscaler's target.
type CheckpointStatus struct {
	// LastUpdateTime is when it was written.
	// +nullable
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// Version is the version of the encoding, CheckpointVersion.
	Version string `json:"version,omitempty"`
	// CPUHistogram is the decaying histogram of CPU usage, in cores.
	CPUHistogram HistogramCheckpoint `json:"cpuHistogram,omitempty"`
	// MemoryHistogram is the decaying histogram of memory peaks, in bytes.
	MemoryHistogram HistogramCheckpoint `json:"memoryHistogram,omitempty"`
	// FirstSampleStart and LastSampleStart bound the history.
	// +nullable
	FirstSampleStart *metav1.Time `json:"firstSampleStart,omitempty"`
	// +nullable
	LastSampleStart *metav1.Time `json:"lastSampleStart,omitempty"`
	// TotalSamplesCount is how many samples the history holds.
	// +kubebuilder:validation:Format=""
	TotalSamplesCount int64 `json:"totalSamplesCount,omitempty"`
}

// HistogramCheckpoint is a decaying histogram: each bucket's weight relative to the heaviest
// one's (10000), by bucket index, and the weight of them all at the reference time.
type HistogramCheckpoint struct {
	// ReferenceTimestamp is the time the weights are taken at.
	// +nullable
	ReferenceTimestamp *metav1.Time `json:"referenceTimestamp,omitempty"`
	// BucketWeights are the relative weights by bucket index, written as a decimal string: a
	// JSON object's keys are strings.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	BucketWeights map[string]int64 `json:"bucketWeights,omitempty"`
	// TotalWeight is the weight of every bucket at ReferenceTimestamp.
	TotalWeight float64 `json:"totalWeight,omitempty"`
}
