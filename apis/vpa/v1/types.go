// Package v1 is the Vertical Pod Autoscaler's API, autoscaling.k8s.io/v1, as Switchboard reads
// and writes it: the VerticalPodAutoscaler's spec and status, field for field as VPA v1.8.1
// serves them. Switchboard does not own this API (the VPA's CRD defines it), so nothing here is
// a CRD or registered with a scheme: the verticalscaler reads VerticalPodAutoscalers as
// unstructured objects and converts their spec into these types strictly, so that a field this
// package does not know (one a newer VPA added) is refused by name instead of dropped.
//
// These are Switchboard's own types rather than the VPA's Go module: that module requires newer
// versions of libraries the manager shares with the kube-apiserver that `make test` builds
// (kube-openapi, go-openapi, cbor, prometheus), and a second version of each would be compiled
// on every cold build.
//
// +kubebuilder:skip
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

// Spec is a VerticalPodAutoscaler's spec.
type Spec struct {
	// TargetRef names the workload whose Pods are sized.
	TargetRef *autoscalingv1.CrossVersionObjectReference `json:"targetRef,omitempty"`
	// UpdatePolicy says how recommendations reach the Pods.
	UpdatePolicy *PodUpdatePolicy `json:"updatePolicy,omitempty"`
	// ResourcePolicy bounds and scopes the recommendation per container.
	ResourcePolicy *PodResourcePolicy `json:"resourcePolicy,omitempty"`
	// Recommenders names the recommender meant to act on the object: none means the default.
	Recommenders []*RecommenderSelector `json:"recommenders,omitempty"`
	// StartupBoost raises CPU while a Pod starts; kept raw, as Switchboard does not do it.
	StartupBoost map[string]any `json:"startupBoost,omitempty"`
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
	UpdateMode *string `json:"updateMode,omitempty"`
	// MinReplicas is the least number of live Pods for one to be evicted.
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// EvictionRequirements must all hold for a Pod to be evicted.
	EvictionRequirements []*EvictionRequirement `json:"evictionRequirements,omitempty"`
	// EvictAfterOOMSeconds lets a Pod OOM-killed this soon after its start be evicted early.
	EvictAfterOOMSeconds *int32 `json:"evictAfterOOMSeconds,omitempty"`
}

// EvictionRequirement holds when, for one of its resources, the recommendation moves the
// request in the direction it names.
type EvictionRequirement struct {
	// Resources are the resources it looks at.
	Resources []corev1.ResourceName `json:"resources"`
	// ChangeRequirement is TargetHigherThanRequests or TargetLowerThanRequests.
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
	Mode *string `json:"mode,omitempty"`
	// MinAllowed is the least recommendation, per resource.
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`
	// MaxAllowed is the largest recommendation, per resource.
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`
	// ControlledResources are the resources recommended; cpu and memory when unset, none when
	// set and empty.
	ControlledResources *[]corev1.ResourceName `json:"controlledResources,omitempty"`
	// ControlledValues is RequestsAndLimits (default) or RequestsOnly.
	ControlledValues *string `json:"controlledValues,omitempty"`
	// OOMBumpUpRatio multiplies the memory of a container killed for lack of it.
	OOMBumpUpRatio *resource.Quantity `json:"oomBumpUpRatio,omitempty"`
	// OOMMinBumpUp is the least memory added after such a kill.
	OOMMinBumpUp *resource.Quantity `json:"oomMinBumpUp,omitempty"`
	// MemoryAggregationIntervalSeconds is the window of one memory peak.
	MemoryAggregationIntervalSeconds *int32 `json:"memoryAggregationIntervalSeconds,omitempty"`
	// MemoryAggregationIntervalCount is how many windows the history keeps.
	MemoryAggregationIntervalCount *int64 `json:"memoryAggregationIntervalCount,omitempty"`
	// StartupBoost is the container's own startup boost; kept raw, as Switchboard does not do
	// it.
	StartupBoost map[string]any `json:"startupBoost,omitempty"`
}

// Status is a VerticalPodAutoscaler's status.
type Status struct {
	// Recommendation is the latest recommendation.
	Recommendation *RecommendedPodResources `json:"recommendation,omitempty"`
	// Conditions are the condition types below, at most one of each, sorted by type.
	Conditions []Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the spec the status is about.
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
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// CheckpointKind is the kind of the VPA recommender's checkpoints, one per VerticalPodAutoscaler
// and container, of the usage history it draws that container's recommendation from.
const CheckpointKind = "VerticalPodAutoscalerCheckpoint"

// CheckpointVersion is the version of the checkpoints' encoding that Switchboard reads, VPA
// v1.8.1's.
const CheckpointVersion = "v3"

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
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
	// Version is the version of the encoding, CheckpointVersion.
	Version string `json:"version,omitempty"`
	// CPUHistogram is the decaying histogram of CPU usage, in cores.
	CPUHistogram HistogramCheckpoint `json:"cpuHistogram,omitempty"`
	// MemoryHistogram is the decaying histogram of memory peaks, in bytes.
	MemoryHistogram HistogramCheckpoint `json:"memoryHistogram,omitempty"`
	// FirstSampleStart and LastSampleStart bound the history.
	FirstSampleStart *metav1.Time `json:"firstSampleStart,omitempty"`
	LastSampleStart  *metav1.Time `json:"lastSampleStart,omitempty"`
	// TotalSamplesCount is how many samples the history holds.
	TotalSamplesCount int64 `json:"totalSamplesCount,omitempty"`
}

// HistogramCheckpoint is a decaying histogram: each bucket's weight relative to the heaviest
// one's (10000), by bucket index, and the weight of them all at the reference time.
type HistogramCheckpoint struct {
	// ReferenceTimestamp is the time the weights are taken at.
	ReferenceTimestamp *metav1.Time `json:"referenceTimestamp,omitempty"`
	// BucketWeights are the relative weights by bucket index, written as a decimal string: a
	// JSON object's keys are strings.
	BucketWeights map[string]int64 `json:"bucketWeights,omitempty"`
	// TotalWeight is the weight of every bucket at ReferenceTimestamp.
	TotalWeight float64 `json:"totalWeight,omitempty"`
}
