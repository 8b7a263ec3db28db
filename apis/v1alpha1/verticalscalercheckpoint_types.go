package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VerticalScalerCheckpointSpec says whose usage history a checkpoint holds.
type VerticalScalerCheckpointSpec struct {
	// Target is the workload whose Pods' usage the history is of, as Kind.group/name
	// (Deployment.apps/web): the VerticalScaler's target when the checkpoint was written. A
	// checkpoint of another workload than the one the VerticalScaler names is not read back.
	// +optional
	// +kubebuilder:validation:MaxLength=400
	Target string `json:"target,omitempty"`

	// DeploymentName is the Deployment of the history, when the target is a Deployment: what
	// releases before targets wrote, and still read when Target is empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DeploymentName string `json:"deploymentName,omitempty"`
}

// CheckpointTarget returns the key of the workload a checkpoint holds the history of: its
// target, or for a checkpoint written before targets that Deployment.
func CheckpointTarget(s *VerticalScalerCheckpointSpec) string {
	switch {
	case s.Target != "":
		return s.Target
	case s.DeploymentName != "":
		return TargetKey("Deployment", "apps", s.DeploymentName)
	}
	return ""
}

// VerticalScalerCheckpointStatus is the usage history the verticalscaler keeps in memory for a
// workload, as it was when written. Without a status subresource: the checkpoint is written
// whole, in one request, by its one writer. Atomic for server-side apply: the writer always sends
// all of it, and one entry in managedFields for the whole status is less than the status itself,
// where an entry per container, Pod and field would be more.
// +structType=atomic
type VerticalScalerCheckpointStatus struct {
	// Version is the version of the encoding. The verticalscaler reads back only its own, and
	// reports a checkpoint of another version (or one it cannot decode) in an Event on the
	// VerticalScaler, then starts the history over.
	// +required
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`

	// WriteTime is when the checkpoint was written. The next write waits the checkpoint interval
	// after it, in a restarted or newly elected manager too.
	// +required
	WriteTime metav1.Time `json:"writeTime"`

	// Containers are the histories of the workload's recommended containers, by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Containers []ContainerCheckpoint `json:"containers,omitempty"`
}

// ContainerCheckpoint is the usage history of the containers of one name across a workload's
// Pods: what the recommendation is drawn from.
type ContainerCheckpoint struct {
	// Name is the container's name.
	// +required
	Name string `json:"name"`

	// Samples is how many CPU samples the history holds, and FirstSampleTime and LastSampleTime
	// the times of the first and the last: the history's length, by which the bounds widen when
	// it is short. In microseconds, as the bounds of a history of minutes depend on its length
	// to the second.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Samples int64 `json:"samples,omitempty"`
	// +optional
	FirstSampleTime *metav1.MicroTime `json:"firstSampleTime,omitempty"`
	// +optional
	LastSampleTime *metav1.MicroTime `json:"lastSampleTime,omitempty"`

	// LastOOMKillTime is when a container of this name was last killed for lack of memory.
	// +optional
	LastOOMKillTime *metav1.Time `json:"lastOOMKillTime,omitempty"`

	// CPU is the decaying histogram of CPU usage samples, in cores.
	// +required
	CPU HistogramCheckpoint `json:"cpu"`
	// Memory is the decaying histogram of memory peaks, in bytes: one per Pod and day.
	// +required
	Memory HistogramCheckpoint `json:"memory"`

	// Pods are the state of each live Pod's container, so that a restarted manager neither
	// counts twice what it has seen nor adds a second peak for the same day.
	// +optional
	// +listType=map
	// +listMapKey=name
	Pods []PodCheckpoint `json:"pods,omitempty"`
}

// HistogramCheckpoint is a decaying histogram in compact form: the weight of each bucket from
// FirstBucket on, as a whole number relative to the heaviest bucket's (which is 10,000; 0 for an
// empty bucket), and the weight of them all at ReferenceTime. Reading it back spreads the total
// over the buckets in those proportions. The buckets are the recommender's (5% wide), so the
// version of the encoding changes with them.
type HistogramCheckpoint struct {
	// ReferenceTime is the time the weights are taken at: a sample taken then weighs its own
	// weight, an older one half as much per day before it. A whole number of days; unset for an
	// empty histogram.
	// +optional
	ReferenceTime *metav1.Time `json:"referenceTime,omitempty"`

	// TotalWeightMicros is the weight of every bucket at ReferenceTime, in millionths. A CPU
	// sample weighs the container's CPU request in cores (at least 0.1), a memory peak 0.1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TotalWeightMicros int64 `json:"totalWeightMicros,omitempty"`

	// FirstBucket is the index of the bucket Weights starts with.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FirstBucket int32 `json:"firstBucket,omitempty"`

	// Weights are the relative weights of the buckets from FirstBucket on.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	Weights []int32 `json:"weights,omitempty"`
}

// PodCheckpoint is the state of one Pod's container in a ContainerCheckpoint.
type PodCheckpoint struct {
	// Name is the Pod's name.
	// +required
	Name string `json:"name"`

	// LastCPUSampleTime and LastMemorySampleTime are the times of the Pod's last samples: a
	// sample no newer, read again after a restart, is not counted twice.
	// +optional
	LastCPUSampleTime *metav1.MicroTime `json:"lastCPUSampleTime,omitempty"`
	// +optional
	LastMemorySampleTime *metav1.MicroTime `json:"lastMemorySampleTime,omitempty"`

	// MemoryWindowEnd ends the Pod's current day of memory samples, whose peak the memory
	// histogram holds: MemoryPeakBytes from the samples or OOMPeakBytes from an OOM kill,
	// whichever is larger. A higher sample before MemoryWindowEnd replaces that peak; a later one
	// starts a new day.
	// +optional
	MemoryWindowEnd *metav1.MicroTime `json:"memoryWindowEnd,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	MemoryPeakBytes int64 `json:"memoryPeakBytes,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	OOMPeakBytes int64 `json:"oomPeakBytes,omitempty"`

	// LastOOMKillTime is when the last OOM kill of the Pod's container that was recorded
	// finished: that kill, still shown in the Pod's lastState, is not counted again.
	// +optional
	LastOOMKillTime *metav1.Time `json:"lastOOMKillTime,omitempty"`
}

// VerticalScalerCheckpoint is the usage history behind a VerticalScaler's recommendation, written
// by the verticalscaler controller so that a restarted or newly elected manager recommends what
// the last one did instead of starting from nothing. One per VerticalScaler, of the same name,
// with the VerticalScaler as its controller owner, so that deleting the VerticalScaler deletes
// it. Written at most once per --checkpoint-interval, and only when the history changed.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vscheckpoint
// +kubebuilder:printcolumn:name="Target",type="string",JSONPath=".spec.target"
// +kubebuilder:printcolumn:name="Written",type="date",JSONPath=".status.writeTime"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type VerticalScalerCheckpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec VerticalScalerCheckpointSpec `json:"spec"`
	// +optional
	Status VerticalScalerCheckpointStatus `json:"status,omitempty"`
}

// VerticalScalerCheckpointList is a list of VerticalScalerCheckpoints.
//
// +kubebuilder:object:root=true
type VerticalScalerCheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VerticalScalerCheckpoint `json:"items"`
}
