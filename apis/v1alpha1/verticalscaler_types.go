package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdateMode says whether and how a VerticalScaler applies its recommendation: the Vertical Pod
// Autoscaler's modes.
// +kubebuilder:validation:Enum=Off;Initial;Recreate;InPlaceOrRecreate;Auto
type UpdateMode string

// The update modes.
const (
	// UpdateModeOff writes the recommendation to status only.
	UpdateModeOff UpdateMode = "Off"
	// UpdateModeInitial gives the recommendation to the Pods created from now on (through the
	// admission policy), and never changes a running Pod.
	UpdateModeInitial UpdateMode = "Initial"
	// UpdateModeRecreate replaces the Pods whose requests are off: it writes the Pod template of
	// a workload whose own controller then replaces its Pods (Deployment, StatefulSet,
	// DaemonSet, CronJob), and evicts, through the Eviction API, the Pods of the others
	// (ReplicaSet, custom workloads), which the admission policy sizes as they come back.
	UpdateModeRecreate UpdateMode = "Recreate"
	// UpdateModeInPlaceOrRecreate resizes running Pods in place through their resize
	// subresource, without a restart, and evicts one only when the kubelet reports its resize
	// Infeasible, or Deferred or in progress past a timeout; new Pods get the recommendation at
	// admission. It never writes the workload's Pod template.
	UpdateModeInPlaceOrRecreate UpdateMode = "InPlaceOrRecreate"
	// UpdateModeAuto is Recreate, as in the Vertical Pod Autoscaler, which deprecates the name.
	UpdateModeAuto UpdateMode = "Auto"
)

// ChangeRequirement is a direction of change of a request, which an EvictionRequirement asks
// for.
// +kubebuilder:validation:Enum=TargetHigherThanRequests;TargetLowerThanRequests
type ChangeRequirement string

// The change requirements.
const (
	// TargetHigherThanRequests: the recommendation raises the request.
	TargetHigherThanRequests ChangeRequirement = "TargetHigherThanRequests"
	// TargetLowerThanRequests: the recommendation lowers the request.
	TargetLowerThanRequests ChangeRequirement = "TargetLowerThanRequests"
)

// EvictionRequirement is a condition a running Pod's change must meet, as the Vertical Pod
// Autoscaler's: it holds when, for at least one of its resources and one container, the
// recommended target moves the request in the direction it names.
type EvictionRequirement struct {
	// Resources are the resources the requirement looks at.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	Resources []ControlledResource `json:"resources"`
	// ChangeRequirement is the direction of change that lets the Pod be changed.
	// +required
	ChangeRequirement ChangeRequirement `json:"changeRequirement"`
}

// RecreateMethod says how Recreate and Auto replace the Pods of a workload whose controller
// replaces its Pods on a change of its Pod template.
// +kubebuilder:validation:Enum=Rollout;Eviction
type RecreateMethod string

// The recreate methods.
const (
	// RecreateByRollout writes the workload's Pod template; its controller replaces the Pods as
	// its update strategy says.
	RecreateByRollout RecreateMethod = "Rollout"
	// RecreateByEviction leaves the Pod template alone and evicts the Pods whose requests are
	// off through the Eviction API, as the Vertical Pod Autoscaler's updater does; the
	// admission policy sizes their replacements.
	RecreateByEviction RecreateMethod = "Eviction"
)

// UpdatePolicy guards the changes to a target's running Pods.
type UpdatePolicy struct {
	// RecreateBy says how Recreate and Auto replace the Pods of a Deployment, StatefulSet,
	// DaemonSet or CronJob. Rollout (the default) writes the Pod template, and the workload's
	// controller rolls the Pods out as its update strategy says. Eviction leaves the template
	// alone and evicts the Pods through the Eviction API, within minReplicas,
	// --max-unavailable-per-workload and PodDisruptionBudgets, as the Vertical Pod Autoscaler
	// does, and the admission policy sizes their replacements; where the API server serves no
	// MutatingAdmissionPolicy, which would size them, the template is written instead, and the
	// Applied condition says so. The Pods of other kinds are always evicted. A VerticalScaler
	// made from a VerticalPodAutoscaler says Eviction.
	// +optional
	RecreateBy RecreateMethod `json:"recreateBy,omitempty"`

	// MinReplicas is the least number of the target's live Pods for the controller to evict
	// one; default --min-replicas (2), as the Vertical Pod Autoscaler's. A resize in place
	// needs none.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// EvictionRequirements must all hold for a running Pod to be changed, by eviction or by a
	// resize in place: with [{resources: [memory], changeRequirement: TargetHigherThanRequests}]
	// only a rise of memory changes a Pod, and a fall waits for its next replacement.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	EvictionRequirements []EvictionRequirement `json:"evictionRequirements,omitempty"`
}

// ControlledValues says which of a container's resource values a VerticalScaler sets.
// +kubebuilder:validation:Enum=RequestsOnly;RequestsAndLimits
type ControlledValues string

// The controlled values.
const (
	// ControlledRequestsOnly sets requests and leaves limits alone.
	ControlledRequestsOnly ControlledValues = "RequestsOnly"
	// ControlledRequestsAndLimits sets requests, and scales limits in proportion to requests.
	ControlledRequestsAndLimits ControlledValues = "RequestsAndLimits"
)

// ContainerMode says whether a container gets a recommendation.
// +kubebuilder:validation:Enum=Auto;Off
type ContainerMode string

// The container modes.
const (
	// ContainerModeAuto recommends, and applies as the update mode says.
	ContainerModeAuto ContainerMode = "Auto"
	// ContainerModeOff leaves the container alone: no recommendation, no change.
	ContainerModeOff ContainerMode = "Off"
)

// DefaultContainerPolicyName is the containerName of the policy that applies to every container
// without a policy of its own.
const DefaultContainerPolicyName = "*"

// VerticalScalerSpec names a workload and says how to size its containers.
// +kubebuilder:validation:XValidation:rule="has(self.deploymentName) != has(self.targetRef)",message="set exactly one of deploymentName and targetRef"
type VerticalScalerSpec struct {
	// TargetRef names the workload whose Pods the VerticalScaler sizes, in its namespace: a
	// Deployment, StatefulSet, DaemonSet or ReplicaSet (apps/v1), a CronJob (batch/v1; its job
	// template's Pods) or a Job (batch/v1), or any custom workload whose CRD has a scale subresource with a label
	// selector. The VerticalScaler does not own it: deleting the VerticalScaler leaves it alone.
	// Set exactly one of targetRef and deploymentName.
	// +optional
	TargetRef *TargetReference `json:"targetRef,omitempty"`

	// DeploymentName is a shorthand for a targetRef of the Deployment (apps/v1) of this name.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="must be a Deployment name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	DeploymentName string `json:"deploymentName,omitempty"`

	// UpdateMode is Off (recommend only), Initial (size new Pods), Recreate (replace the Pods
	// whose requests are off), InPlaceOrRecreate (resize running Pods in place, replacing one
	// only when it cannot be resized), or Auto, which is Recreate.
	// +optional
	// +kubebuilder:default=Off
	UpdateMode UpdateMode `json:"updateMode,omitempty"`

	// UpdatePolicy guards the changes to the target's running Pods.
	// +optional
	UpdatePolicy *UpdatePolicy `json:"updatePolicy,omitempty"`

	// ContainerPolicies bound and scope the recommendation per container; containerName "*"
	// applies to every container without a policy of its own. At most 7: the API server's
	// budget for the CEL rule that checks minAllowed against maxAllowed allows no more.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	// +kubebuilder:validation:MaxItems=7
	ContainerPolicies []ContainerPolicy `json:"containerPolicies,omitempty"`

	// RecommenderPolicy changes, for this VerticalScaler only, the percentiles of usage and the
	// safety margin the recommendation is drawn from; what it leaves out keeps the default (the
	// Vertical Pod Autoscaler's: 50, 90 and 95, and 15%).
	// +optional
	RecommenderPolicy *RecommenderPolicy `json:"recommenderPolicy,omitempty"`

	// Recommenders name the recommenders whose recommendation the VerticalScaler applies, as
	// the Vertical Pod Autoscaler's field: when they name the manager's own (its
	// --recommender-name), it recommends from usage as without them; when they name only
	// others, it recommends nothing and applies status.recommendation as another recommender
	// wrote it, bounded by the container policies, as the VPA's updater and admission
	// controller do. Empty is the manager's own recommender.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Recommenders []RecommenderSelector `json:"recommenders,omitempty"`
}

// RecommenderSelector names a recommender.
type RecommenderSelector struct {
	// Name is the recommender's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// TargetReference names a workload in the VerticalScaler's namespace, as the Vertical Pod
// Autoscaler's targetRef does.
type TargetReference struct {
	// APIVersion is the workload's group and version, for example apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`
	// Kind is the workload's kind, for example StatefulSet.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name is the workload's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// The defaults of RecommenderPolicy, the Vertical Pod Autoscaler recommender's.
const (
	// DefaultTargetPercentile is the default of targetPercentile.
	DefaultTargetPercentile = 90
	// DefaultLowerBoundPercentile is the default of lowerBoundPercentile.
	DefaultLowerBoundPercentile = 50
	// DefaultUpperBoundPercentile is the default of upperBoundPercentile.
	DefaultUpperBoundPercentile = 95
	// DefaultSafetyMarginPercent is the default of safetyMarginPercent.
	DefaultSafetyMarginPercent = 15
)

// RecommenderPolicy says how the recommendation is drawn from the usage history, for CPU and
// memory alike: each of the target and the bounds is a percentile of the (decayed) usage
// samples, plus a safety margin. The rules compare with the defaults (the DefaultX constants)
// for a field left out.
// +kubebuilder:validation:XValidation:rule="(has(self.lowerBoundPercentile) ? self.lowerBoundPercentile : 50) <= (has(self.targetPercentile) ? self.targetPercentile : 90)",message="lowerBoundPercentile must not exceed targetPercentile (defaults 50 and 90)"
// +kubebuilder:validation:XValidation:rule="(has(self.targetPercentile) ? self.targetPercentile : 90) <= (has(self.upperBoundPercentile) ? self.upperBoundPercentile : 95)",message="targetPercentile must not exceed upperBoundPercentile (defaults 90 and 95)"
type RecommenderPolicy struct {
	// TargetPercentile is the percentile of usage the target rests on: 90 means 90% of the
	// samples fit under the target before the margin. Default 90.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetPercentile *int32 `json:"targetPercentile,omitempty"`

	// LowerBoundPercentile is the percentile of usage the lower bound rests on. Default 50.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	LowerBoundPercentile *int32 `json:"lowerBoundPercentile,omitempty"`

	// UpperBoundPercentile is the percentile of usage the upper bound rests on. Default 95.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	UpperBoundPercentile *int32 `json:"upperBoundPercentile,omitempty"`

	// SafetyMarginPercent is added on top of each percentile, in percent of it, for the usage
	// the samples missed. Default 15.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	SafetyMarginPercent *int32 `json:"safetyMarginPercent,omitempty"`
}

// ContainerPolicy bounds and scopes the recommendation for one container.
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !('cpu' in self.minAllowed) || !('cpu' in self.maxAllowed) || quantity(string(self.minAllowed['cpu'])).compareTo(quantity(string(self.maxAllowed['cpu']))) <= 0",message="minAllowed.cpu must not exceed maxAllowed.cpu"
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !('memory' in self.minAllowed) || !('memory' in self.maxAllowed) || quantity(string(self.minAllowed['memory'])).compareTo(quantity(string(self.maxAllowed['memory']))) <= 0",message="minAllowed.memory must not exceed maxAllowed.memory"
type ContainerPolicy struct {
	// ContainerName is the name of a container of the Deployment's Pod template or of one of
	// its native sidecars (init containers with restartPolicy Always), or "*".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == '*' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a container name (lowercase letters, digits and '-') or '*'"
	ContainerName string `json:"containerName"`

	// Mode is Auto (the default) or Off: a container whose policy is Off gets no
	// recommendation, so that nothing of it is changed (a sidecar sized by hand), as the
	// Vertical Pod Autoscaler's containerPolicies mode.
	// +optional
	Mode ContainerMode `json:"mode,omitempty"`

	// MinAllowed is the smallest recommendation that is applied, per resource.
	// +optional
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(r, r == 'cpu' || r == 'memory')",message="only cpu and memory are supported"
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`

	// MaxAllowed is the largest recommendation that is applied, per resource.
	// +optional
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(r, r == 'cpu' || r == 'memory')",message="only cpu and memory are supported"
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`

	// ControlledResources are the resources the VerticalScaler sets; default cpu and memory.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	ControlledResources []ControlledResource `json:"controlledResources,omitempty"`

	// ControlledValues is RequestsOnly or RequestsAndLimits (default).
	// +optional
	// +kubebuilder:default=RequestsAndLimits
	ControlledValues ControlledValues `json:"controlledValues,omitempty"`

	// OOMBumpUpRatio is how much more memory than it had a container killed for lack of memory
	// needs, as a ratio: the memory it ran with (its request, or its peak usage if higher) times
	// this, unless OOMMinBumpUp asks for more. At least 1; default 1.2, the Vertical Pod
	// Autoscaler's.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1')) >= 0",message="must be at least 1"
	OOMBumpUpRatio *resource.Quantity `json:"oomBumpUpRatio,omitempty"`

	// OOMMinBumpUp is the least memory added after an OOM kill. Default 100Mi, the Vertical Pod
	// Autoscaler's; 0 with an oomBumpUpRatio of 1 makes OOM kills raise nothing.
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('-1'))",message="must not be negative"
	OOMMinBumpUp *resource.Quantity `json:"oomMinBumpUp,omitempty"`

	// MemoryAggregationInterval is the window of which each Pod's container contributes one
	// memory sample, its peak; memory is sized for the peaks. Default 24h, the Vertical Pod
	// Autoscaler's; at least a minute.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="must be at least 1m"
	MemoryAggregationInterval *metav1.Duration `json:"memoryAggregationInterval,omitempty"`

	// MemoryAggregationIntervalCount is how many windows the history keeps: a container without
	// a sample for that many is forgotten. Default 8.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MemoryAggregationIntervalCount *int32 `json:"memoryAggregationIntervalCount,omitempty"`
}

// ControlledResource is a resource a VerticalScaler may set.
// +kubebuilder:validation:Enum=cpu;memory
type ControlledResource string

// VerticalScalerStatus is what the verticalscaler controller observed and recommends.
type VerticalScalerStatus struct {
	// Target is the workload the status is about, as Kind.group/name (Deployment.apps/web);
	// set once the workload was found.
	// +optional
	Target string `json:"target,omitempty"`

	// TargetSelector selects the target's Pods, as the target says: its spec.selector, the
	// labels of a CronJob's job template, or the label selector of a custom workload's scale
	// subresource. Usage is read from the Pods it selects.
	// +optional
	TargetSelector *metav1.LabelSelector `json:"targetSelector,omitempty"`

	// PodResources are the resources the verticalscaler's admission policy
	// (config/components/verticalscaler/pod_resources_policy.yaml) gives the containers of the
	// target's Pods as they are created: the recommendation, bounded by the container policies,
	// as the Pod template's containers would carry it (limits scaled as the template's). Set in
	// every mode but Off.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	// +kubebuilder:validation:MaxItems=32
	PodResources []ContainerResources `json:"podResources,omitempty"`

	// Recommendation is the latest recommendation, kept when metrics become unavailable.
	// +optional
	Recommendation *Recommendation `json:"recommendation,omitempty"`

	// Applied is "True" when the target carries the recommendation; it feeds a printer column.
	// +optional
	Applied bool `json:"applied,omitempty"`

	// LastAppliedTime is when the recommendation was last written to the target's Pod template;
	// the next write waits a minimum interval after it, because every write rolls the Pods.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`

	// ObservedGeneration is the generation of the spec last carried out without error.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are TargetFound, RecommendationProvided, Applied and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ContainerResources are the resources of one container.
type ContainerResources struct {
	// ContainerName is the container's name: a container, or a native sidecar (an init
	// container with restartPolicy Always).
	ContainerName string `json:"containerName"`
	// Requests are the controlled resources' requests.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Limits are the controlled resources' limits, for the containers whose limits are scaled
	// with their requests.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// Recommendation holds one recommendation per container.
type Recommendation struct {
	// Target is the workload whose Pods' usage the recommendation comes from, as
	// Kind.group/name. When the spec names another one, the recommendation is dropped rather
	// than applied to a different workload.
	// +optional
	Target string `json:"target,omitempty"`

	// DeploymentName is the Deployment the recommendation comes from, when the target is a
	// Deployment: what releases before targetRef wrote, and still read when Target is empty.
	// +optional
	DeploymentName string `json:"deploymentName,omitempty"`

	// Policy is the percentiles and the margin the recommendation was drawn with: the spec's
	// recommenderPolicy with the defaults filled in.
	// +optional
	Policy *RecommenderPolicy `json:"policy,omitempty"`

	// ContainerRecommendations are per container, by name: the Pod template's containers and
	// its native sidecars (init containers with restartPolicy Always). Other init containers
	// get none: they run to completion before the others start, so their requests rarely
	// decide the Pod's, and their usage is too short-lived to sample.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	ContainerRecommendations []ContainerRecommendation `json:"containerRecommendations,omitempty"`
}

// ContainerRecommendation is the recommended requests for one container.
type ContainerRecommendation struct {
	// ContainerName is the container's name.
	ContainerName string `json:"containerName"`
	// Target is the recommended requests, clamped to the policy's bounds.
	Target corev1.ResourceList `json:"target"`
	// LowerBound is the smallest requests that still look safe.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// UpperBound is the largest requests worth giving.
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// UncappedTarget is the target before clamping to the policy's bounds.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`

	// Samples is how many CPU usage samples of the container (one per Pod and read) the
	// recommendation rests on. Memory counts one peak per Pod and day.
	// +optional
	Samples int64 `json:"samples,omitempty"`
	// FirstSampleTime and LastSampleTime bound the history the recommendation rests on. Under
	// a day of it, the bounds are wide: the upper bound is the percentile times 1 + 1/days.
	// +optional
	FirstSampleTime *metav1.Time `json:"firstSampleTime,omitempty"`
	// +optional
	LastSampleTime *metav1.Time `json:"lastSampleTime,omitempty"`
	// LastOOMKillTime is when a container of this name was last killed for lack of memory,
	// which raised the memory recommendation.
	// +optional
	LastOOMKillTime *metav1.Time `json:"lastOOMKillTime,omitempty"`
}

// VerticalScaler keeps the CPU and memory of a workload's containers right, from their usage.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vs
// +kubebuilder:printcolumn:name="Target",type="string",JSONPath=".status.target",description="The workload sized, once found: Kind.group/name"
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.updateMode"
// +kubebuilder:printcolumn:name="Recommended",type="string",JSONPath=".status.conditions[?(@.type==\"RecommendationProvided\")].status",description="Whether a recommendation comes from the Pods' usage"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.recommendation.containerRecommendations[0].target.cpu",description="The first container's recommended CPU request"
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.recommendation.containerRecommendations[0].target.memory",description="The first container's recommended memory request"
// +kubebuilder:printcolumn:name="Applied",type="boolean",JSONPath=".status.applied"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type VerticalScaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec VerticalScalerSpec `json:"spec"`
	// +optional
	Status VerticalScalerStatus `json:"status,omitempty"`
}

// VerticalScalerList is a list of VerticalScalers.
//
// +kubebuilder:object:root=true
type VerticalScalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VerticalScaler `json:"items"`
}
