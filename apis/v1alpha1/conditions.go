package v1alpha1

// This file holds the words of the API's status and Events: condition types and the reasons the
// controllers give, in one place, so that users, dashboards and alerts have one list to read.
// Types are adjectives, as the Kubernetes API conventions ask, so that "True" always reads as
// the good state; reasons are PascalCase.

// Condition types shared by the kinds of this package.
const (
	// ConditionReady is True when the object's controller has done everything the spec asks and
	// the result is serving.
	ConditionReady = "Ready"
)

// MyApp condition types, besides ConditionReady. They mirror the owned Deployment's conditions of
// the same names, once it reports them, so that "kubectl get ma -o yaml" answers without a
// second lookup.
const (
	// ConditionAvailable mirrors the Deployment's Available condition: enough Pods are ready.
	ConditionAvailable = "Available"
	// ConditionProgressing mirrors the Deployment's Progressing condition: a rollout is moving or
	// has completed.
	ConditionProgressing = "Progressing"
)

// Reasons of a MyApp's Ready condition, and of Available and Progressing when the Deployment
// has not reported them (otherwise those carry the Deployment's own reasons).
const (
	// ReasonAllReplicasReady: every replica of the Deployment is ready and updated.
	ReasonAllReplicasReady = "AllReplicasReady"
	// ReasonDeploymentConflict: a Deployment of the MyApp's name is controlled by someone else.
	ReasonDeploymentConflict = "DeploymentConflict"
	// ReasonServiceConflict: a Service of the MyApp's name is controlled by someone else.
	ReasonServiceConflict = "ServiceConflict"
	// ReasonDeploymentPending: the Deployment has not been observed yet.
	ReasonDeploymentPending = "DeploymentPending"
	// ReasonRolloutPending: the Deployment controller has not observed the latest generation.
	ReasonRolloutPending = "RolloutPending"
	// ReasonReplicasNotReady: fewer replicas are ready or updated than the spec asks.
	ReasonReplicasNotReady = "ReplicasNotReady"
	// ReasonNotAvailable: the Deployment is not available.
	ReasonNotAvailable = "NotAvailable"
	// ReasonProgressDeadlineExceeded: the rollout made no progress within its deadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNotReportedByDeployment: the Deployment no longer reports the mirrored condition
	// (it was deleted and created anew); a mirrored condition appears only once the Deployment
	// first reports it.
	ReasonNotReportedByDeployment = "NotReportedByDeployment"
)

// Reasons of a MyApp's normal Events.
const (
	// ReasonCreated: the controller created the Deployment or the Service.
	ReasonCreated = "Created"
	// ReasonUpdated: the controller changed the Deployment or the Service.
	ReasonUpdated = "Updated"
)

// VerticalScaler condition types, besides ConditionReady.
const (
	// ConditionTargetFound is True when the workload the spec names exists and is one the
	// verticalscaler can size.
	ConditionTargetFound = "TargetFound"
	// ConditionDeploymentFound was TargetFound's type before targets other than Deployments;
	// the controller removes it from the status of a VerticalScaler written by such a release.
	ConditionDeploymentFound = "DeploymentFound"
	// ConditionRecommendationProvided is True when usage metrics gave a recommendation.
	ConditionRecommendationProvided = "RecommendationProvided"
	// ConditionApplied is True when the target carries the recommendation (always False in
	// updateMode Off).
	ConditionApplied = "Applied"
)

// Reasons of a VerticalScaler's conditions.
const (
	// ReasonTargetFound: the workload the spec names exists and can be sized.
	ReasonTargetFound = "TargetFound"
	// ReasonTargetNotFound: the workload the spec names does not exist.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetUnsupported: the spec names a kind the verticalscaler cannot size (not a
	// known workload kind, and no custom kind with a scale subresource that has a label
	// selector), or a workload without a way to select its Pods; the message says which.
	ReasonTargetUnsupported = "TargetUnsupported"
	// ReasonTargetConflict: an older VerticalScaler names the same workload and sizes it; this
	// one waits until it no longer does.
	ReasonTargetConflict = "TargetConflict"
	// ReasonRecommended: usage samples gave a recommendation.
	ReasonRecommended = "Recommended"
	// ReasonMetricsUnavailable: reading usage failed (metrics-server answered with an error,
	// or listing the Pods failed); the last recommendation is kept.
	ReasonMetricsUnavailable = "MetricsUnavailable"
	// ReasonMetricsAPIMissing: the cluster does not serve metrics.k8s.io (metrics-server is not
	// installed, or its APIService is not registered); the last recommendation is kept.
	ReasonMetricsAPIMissing = "MetricsAPIMissing"
	// ReasonMetricsTimeout: reading usage took longer than the poller allows; the last
	// recommendation is kept.
	ReasonMetricsTimeout = "MetricsTimeout"
	// ReasonRecommendedElsewhere: spec.recommenders name only other recommenders than the
	// manager's own, and one of them wrote the recommendation in status, which is applied as
	// written.
	ReasonRecommendedElsewhere = "RecommendedElsewhere"
	// ReasonNoUsageYet: no usage of the target's Pods has been read yet.
	ReasonNoUsageYet = "NoUsageYet"
	// ReasonContainerNotFound: a container policy names a container the target's Pods lack, or
	// one of their plain init containers, which get no recommendation.
	ReasonContainerNotFound = "ContainerNotFound"
	// ReasonApplied: the target's requests are within the tolerance of the recommendation.
	ReasonApplied = "Applied"
	// ReasonUpdateModeOff: updateMode is Off, so the recommendation is only reported.
	ReasonUpdateModeOff = "UpdateModeOff"
	// ReasonNoRecommendation: there is no recommendation to apply yet.
	ReasonNoRecommendation = "NoRecommendation"
	// ReasonWaitingForMinApplyInterval: the last write to the target is too recent.
	ReasonWaitingForMinApplyInterval = "WaitingForMinApplyInterval"
	// ReasonApplyFailed: writing the recommendation to the target failed.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonAppliedAtAdmission: updateMode is Initial: the admission policy gives the
	// recommendation to Pods as they are created, and running Pods are left alone.
	ReasonAppliedAtAdmission = "AppliedAtAdmission"
	// ReasonAdmissionPolicyUnavailable: the mode needs the admission policy to size new Pods
	// (Initial; Recreate for a kind that does not roll on a template change, whose evicted Pods
	// would come back unsized), and the API server serves no MutatingAdmissionPolicy.
	ReasonAdmissionPolicyUnavailable = "AdmissionPolicyUnavailable"
	// ReasonUpdating: running Pods are being changed: resizes the kubelet has not finished, or
	// evicted Pods whose replacements are not ready yet.
	ReasonUpdating = "Updating"
	// ReasonEvictionRequirements: a request is off, but the change does not meet
	// spec.updatePolicy.evictionRequirements.
	ReasonEvictionRequirements = "EvictionRequirements"
	// ReasonMinReplicas: a Pod would be evicted, but the target has fewer live Pods than
	// minReplicas.
	ReasonMinReplicas = "MinReplicas"
	// ReasonDisruptionLimit: a Pod would be evicted, but as many of the target's Pods as
	// --max-unavailable-per-workload allows are unavailable already.
	ReasonDisruptionLimit = "DisruptionLimit"
	// ReasonReplacementsUnsized: a Pod would be evicted, but a Pod of the target created since
	// the admission policy was to give new Pods the recommendation did not get it: the policy
	// is not installed or not bound, and a replacement would come back at the same size.
	ReasonReplacementsUnsized = "ReplacementsUnsized"
	// ReasonRateLimited: a Pod would be changed, but the manager-wide rate limit of changes to
	// running Pods (--pod-update-rate-limit) holds it back for now.
	ReasonRateLimited = "RateLimited"
	// ReasonPodDisruptionBudget: the Eviction API refused to evict a Pod: a PodDisruptionBudget
	// allows no disruption now.
	ReasonPodDisruptionBudget = "PodDisruptionBudget"
	// ReasonRecommendationCurrent is the reason of a VerticalScaler's Ready=True: the
	// recommendation is current (and, in a mode that applies it, applied).
	ReasonRecommendationCurrent = "Ready"
)

// Reasons of a VerticalScaler's Events, besides ReasonApplyFailed (Warning).
const (
	// ReasonRecommendationApplied: the controller wrote the recommendation to the target's Pod
	// template (Normal); the note says which requests moved from what to what.
	ReasonRecommendationApplied = "RecommendationApplied"
	// ReasonPodResized: the controller resized a running Pod in place (Normal); the note says
	// which requests moved.
	ReasonPodResized = "PodResized"
	// ReasonPodEvicted: the controller evicted a Pod through the Eviction API (Normal), to be
	// replaced at the recommended size; the note says why.
	ReasonPodEvicted = "PodEvicted"
	// ReasonResizeFailed: the kubelet reports a resize Infeasible, or Deferred or in progress
	// past its timeout, or the API server refused it (Warning); the Pod is evicted when the
	// guards allow.
	ReasonResizeFailed = "ResizeFailed"
	// ReasonCheckpointInvalid: the VerticalScalerCheckpoint of the VerticalScaler could not be
	// read back (another version of the encoding, or data that does not decode), so its usage
	// history starts over (Warning); the note says why. The next checkpoint replaces it.
	ReasonCheckpointInvalid = "CheckpointInvalid"
)

// Reasons of the configmapwatcher's Events on a workload.
const (
	// ReasonConfigChanged: the data the workload uses changed, and it was rolled.
	ReasonConfigChanged = "ConfigChanged"
	// ReasonConfigMapMissing (Warning): a ConfigMap the workload uses does not exist. Its
	// deletion rolls nothing (unless --reload-on-delete); its return rolls the workload when its
	// data differs from the record, and its first creation only with --reload-on-create; the
	// other sources' changes still roll it.
	ReasonConfigMapMissing = "ConfigMapMissing"
	// ReasonSecretMissing (Warning): ReasonConfigMapMissing for a Secret.
	ReasonSecretMissing = "SecretMissing"
	// ReasonInvalidReloadAnnotation (Warning): an annotation, or an entry of one, that says what
	// the workload rolls on, or how, cannot be read; the note names it. The entries that can be
	// read still count.
	ReasonInvalidReloadAnnotation = "InvalidReloadAnnotation"
	// ReasonPaused: the workload was paused for its pause period before a roll.
	ReasonPaused = "Paused"
	// ReasonResumed: the workload was resumed at the end of its pause period.
	ReasonResumed = "Resumed"
	// ReasonDigestKeyChanged: the key of the config digests is not the one the workload's record
	// was written with, so the record was written again, as a baseline, without rolling.
	ReasonDigestKeyChanged = "ConfigDigestKeyChanged"
)
