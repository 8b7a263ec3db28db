// Package verticalscaler is the verticalscaler controller: a VerticalScaler names a workload in
// its namespace (spec.targetRef, or spec.deploymentName for a Deployment) that it does not own,
// and the controller recommends CPU and memory requests for that workload's containers from
// their usage, and applies them as its update mode says.
//
// Targets (target.go): Deployments, StatefulSets, DaemonSets, ReplicaSets, CronJobs (their
// job template's Pods) and Jobs are read from the cache (TemplateKinds); any other kind must be served
// with a scale subresource whose status has a label selector, read uncached, as the Vertical Pod
// Autoscaler reads it. A missing or unsupported target is TargetFound=False with a reason and a
// message that names it, and no retry. The controller records the target (status.target) and
// the selector of its Pods (status.targetSelector), which the usage poller reads them by.
//
// Watches: VerticalScaler (primary; spec changes only), and every kind of TemplateKinds, mapped
// back to the VerticalScalers that name an object through the shared index
// indexers.VerticalScalerByTarget: an in-memory lookup on the cache, no owner reference and no
// annotation on the workload. WorkloadChanged filters their events first: only creation,
// deletion and changes to the Pods' selector or the Pod template's containers' names or
// resources reach the map function. Custom workloads are not watched: the periodic resync and
// the poller bring their VerticalScalers back. Deleting a VerticalScaler never touches its
// target.
//
// Sources: periodic, and metrics (the usage poller, recommender.UsageProducer, this controller's
// own producer), which reads each target's Pods (uncached) and their usage, keeps the usage
// history with the Vertical Pod Autoscaler's model (recommender.ContainerHistory), and has news
// for a VerticalScaler only when its target or bounds moved, an OOM kill came, its
// recommenderPolicy changed, or usage cannot be read. The news goes into recommender.Reports and the event carries only the
// VerticalScaler's key. The controller reads the latest report when it reconciles, and falls
// back to the recommendation in status (its uncappedTarget) when there is none, so metrics going
// away keep the last recommendation.
//
// Recommended: the Pod template's containers and its native sidecars (init containers with
// restartPolicy Always); plain init containers are not (recommender.RecommendedContainers).
//
// Update modes (the Vertical Pod Autoscaler's): Off recommends only; Initial leaves running
// Pods alone (new ones get the recommendation at admission); Recreate, and Auto, which is
// Recreate, write the Pod template of the kinds whose own controller then replaces the Pods
// (Deployments, StatefulSets, DaemonSets, CronJobs) and evict the Pods of the others
// (ReplicaSets, Jobs, custom workloads) through the Eviction API; InPlaceOrRecreate resizes running
// Pods through their resize subresource and evicts one only when its resize is refused, reported
// Infeasible, or Deferred or in progress past --in-place-deferred-resize-timeout and
// --in-place-resize-timeout (update.go). Every change is guarded: a request is changed only when
// it lies outside [lowerBound, upperBound] or, after EnoughHistory, more than
// recommender.Tolerance off the target (offRequests); spec.updatePolicy.evictionRequirements
// must hold; an eviction needs minReplicas live Pods and fewer than
// --max-unavailable-per-workload unavailable ones; resizes and evictions share the manager's
// rate limit (--pod-update-rate-limit); a Pod template is written, and a Pod resized, at most
// once per --min-apply-interval. What held a change back is the Applied condition's reason and
// counts in switchboard_verticalscaler_skipped_applies_total.
//
// Owns on the target's Pod template in Recreate and Auto modes, through server-side apply under
// the field manager "verticalscaler": only the template's containers[name].resources and, for
// native sidecars, initContainers[name].resources, and within them only the controlled
// resources' requests (and, with RequestsAndLimits, their limits scaled in proportion to the
// requests). Every other field, an image set by myapp, Helm or Argo CD, keeps its manager. Each
// write is a RecommendationApplied Event on the VerticalScaler naming the requests that were
// off. In InPlaceOrRecreate, it writes Pods' resize subresources (PodResized Events) and
// evicts Pods (PodEvicted Events), never the template.
//
// Owns a VerticalScalerCheckpoint per VerticalScaler, of its name, written by the usage poller
// (server-side apply, field manager "verticalscaler") with the VerticalScaler as its controller
// owner, so that the garbage collector deletes it with the VerticalScaler: the usage history,
// written at most once per --checkpoint-interval and only when it changed, read back by a
// restarted or newly elected manager. One that cannot be read back is a CheckpointInvalid
// Warning Event on the VerticalScaler, and the history starts over.
//
// Status: TargetFound, RecommendationProvided, Applied and Ready, computed in one place
// (computeStatus), and the recommendation with what it rests on (samples, history window, last
// OOM kill, the percentiles used). A policy naming a container the Pod template does not have, or
// one of its plain init containers, is reported in Ready, with a warning Event when the
// condition newly says it (once per change, whatever resyncs or replicas come), and not
// retried: the workload's watch brings the VerticalScaler back when its containers change.
package verticalscaler
