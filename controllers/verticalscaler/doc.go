// Package verticalscaler is the verticalscaler controller: a VerticalScaler names a Deployment
// in its namespace (spec.deploymentName) that it does not own, and the controller recommends
// CPU and memory requests for that Deployment's containers from their usage; in updateMode Auto
// it also writes them to the Deployment.
//
// Watches: VerticalScaler (primary; spec changes only), and Deployments, mapped back to the
// VerticalScalers that name them through the shared index indexers.VerticalScalerByDeploymentName:
// an in-memory lookup on the cache, no owner reference and no annotation on the Deployment.
// DeploymentChanged filters the Deployment events first: only creation, deletion and changes
// to the containers' names or resources reach the map function. Deleting a VerticalScaler never
// touches its Deployment.
//
// Sources: periodic, and metrics (the usage poller, recommender.UsageProducer, this controller's
// own producer), which reads each targeted Deployment's Pods (uncached) and their usage, keeps
// the usage history with the Vertical Pod Autoscaler's model (recommender.ContainerHistory), and
// has news for a VerticalScaler only when its target moved by more than recommender.Tolerance,
// an OOM kill came, its recommenderPolicy changed, its bounds moved (at most hourly), or usage
// cannot be read. The news goes into recommender.Reports and the event carries only the
// VerticalScaler's key. The controller reads the latest report when it reconciles, and falls
// back to the recommendation in status (its uncappedTarget) when there is none, so metrics going
// away keep the last recommendation.
//
// Recommended: the Pod template's containers and its native sidecars (init containers with
// restartPolicy Always); plain init containers are not (recommender.RecommendedContainers).
//
// Owns on the Deployment, through server-side apply under the field manager "verticalscaler":
// only spec.template.spec.containers[name].resources and, for native sidecars,
// spec.template.spec.initContainers[name].resources, and within them only the controlled
// resources' requests (and, with RequestsAndLimits, their limits scaled in proportion to the
// requests). Every other field, an image set by myapp, Helm or Argo CD, keeps its manager.
// Every write rolls the Pods, so a write happens only when a request is more than
// recommender.Tolerance off the recommendation and MinApplyInterval has passed since the last one
// (status.lastAppliedTime); an unchanged recommendation writes nothing. Each write is a
// RecommendationApplied Event on the VerticalScaler naming the requests that moved.
//
// Owns a VerticalScalerCheckpoint per VerticalScaler, of its name, written by the usage poller
// (server-side apply, field manager "verticalscaler") with the VerticalScaler as its controller
// owner, so that the garbage collector deletes it with the VerticalScaler: the usage history,
// written at most once per --checkpoint-interval and only when it changed, read back by a
// restarted or newly elected manager. One that cannot be read back is a CheckpointInvalid
// Warning Event on the VerticalScaler, and the history starts over.
//
// Status: DeploymentFound, RecommendationProvided, Applied and Ready, computed in one place
// (computeStatus), and the recommendation with what it rests on (samples, history window, last
// OOM kill, the percentiles used). A policy naming a container the Deployment does not have, or
// one of its plain init containers, is reported in Ready, with a warning Event when the
// condition newly says it (once per change, whatever resyncs or replicas come), and not
// retried: the Deployment watch brings the VerticalScaler back when its containers change.
package verticalscaler
