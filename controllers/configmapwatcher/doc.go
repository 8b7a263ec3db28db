// Package configmapwatcher is the configmapwatcher: six controllers, one per workload kind
// (Deployments, StatefulSets, DaemonSets, CronJobs, Jobs, Argo Rollouts), that roll a workload
// when the data of a ConfigMap or Secret it uses changes. They are one group in the controller
// table, "configmapwatcher", built from one generic Reconciler over a small per-kind adapter
// (Kind). It is a drop-in for Stakater Reloader: reloader.go says what of Reloader's it reads,
// accepts or reports.
//
// Primary kind: the workload, only those opted in: with app.example.com/reload ("true" for
// every ConfigMap and Secret the Pod template references, or a list of names, Secrets written
// "secret/NAME"), or, unless --reloader-annotations=false, with Stakater Reloader's annotations,
// read as Reloader reads them (package podrefs says how), or every workload that references a
// source with --auto-reload-all (a workload opts out with "false"). How a roll reaches a
// workload depends on its kind: a new config hash on the Pod template (a CronJob's job
// template, which may also run a Job at once: jobs.go); a Job is deleted and created again
// (jobs.go); an Argo Rollout, read and written as an unstructured object, either way or, with
// Reloader's rollout-strategy "restart", through spec.restartAt. The Rollouts' controller is
// optional: without the CRD it is idle.
//
// Scope (scope.go): --namespace-selector, --namespaces-to-ignore, --resource-label-selector
// and --resources-to-ignore, as Reloader's flags, narrow what the cache lists (CacheScope) and
// what the watches ask for; the namespaces a selector selects are read at start, and a change
// of them stops the manager (ErrNamespacesChanged) so that a new one watches them.
//
// Watches: ConfigMaps and Secrets, metadata only and uncached, one watch per kind of source and
// namespace shared by the controllers (changes, created once by the table through Shared),
// mapped to each controller's workloads through the shared index of sources
// (indexers.WorkloadSourcesField). A change queues the workloads once their sources have not
// changed for --reload-debounce (a quiet period, restarted by each change, at most ten delays
// long): changes made together (a helm upgrade) are read by one reconcile and roll once. The
// workloads' own events are not delayed. A reconcile reads a workload's sources in parallel.
// The controllers keep nothing of any ConfigMap or Secret: the data of the few a workload uses
// is read from the API server when that workload is reconciled, and only keyed digests of it
// outlive the reconcile. Memory does not grow with the number of ConfigMaps and Secrets. When
// no other selected controller watches a workload kind, the cache keeps of each workload only
// what this controller reads (Kind.Trim).
//
// The record: the workload's own metadata carries app.example.com/config-state, per source
// and per key the workload uses (all of them for envFrom or a volume without items, the named
// ones for key references and items) a short HMAC-SHA256 digest under a key only the manager
// reads (DigestKeys: a Secret of the manager's namespace, created with random bytes when
// missing), and that key's id. Writing the record does not roll the Pods. The Pod template's
// app.example.com/config-hash, a digest of the record, is written only when the data changed
// since the record: that rolls the Pods. So (decide, in state.go):
//   - the first sight of a workload (at install, or when it is created opted in) records a
//     baseline and rolls nothing;
//   - a workload a release before the record rolled carries a config hash of that release's
//     format and no record: if the hash still matches the data, it gets a baseline without a
//     roll, otherwise it rolls once;
//   - a restart or a leader change rolls exactly the workloads whose data changed meanwhile,
//     and a label-only change of a source rolls nothing;
//   - a change of keys the workload does not take rolls nothing;
//   - sources added to or dropped from what the workload uses are recorded without a roll;
//   - a source of the record deleted since keeps its digests in the record: it rolls nothing
//     (unless --reload-on-delete, which rolls and records it as missing), holds back no other
//     source's change, and its return rolls only if its data differs; a source missing at
//     first sight is recorded as missing, so that its creation rolls once. Either way a Warning
//     Event names it;
//   - a record made with another digest key is replaced by a baseline, without a roll, and an
//     Event says so;
//   - an equal record writes nothing.
//
// Before a roll: a Deployment with Reloader's pause-period is paused for that long (pause.go),
// and --max-rollouts-per-minute puts off a roll over the limit (ratelimit.go); after it, the
// roll is posted to --webhook-url (notify.go) and counted (metrics.go).
//
// Writes: server-side apply under the field manager "configmapwatcher", owning only the
// record and the config hash (or a Rollout's restartAt). An apply that does not roll sends the
// current config hash, if any, as it is: an owned field left out of an apply is removed, and
// removing the hash would roll the Pods.
//
// An annotation entry that cannot be read gives a Warning Event that names it, and nothing
// else: no error, so no retry loop; the workload's other entries still count.
// Each warning is said once per problem: a periodic resync or an event that changes nothing
// of it does not say it again (the controllers remember the last warning of each workload, in
// memory: a new leader says a lasting problem once more).
//
// Every roll says why: its Event names each source and key that changed ("ConfigMap
// app-config: LOG_LEVEL changed"), and so does its log line ("Rolled Deployment", key
// "changes"), which `manager logs trace` shows.
//
// Events from channel sources (the periodic resync, the HTTP trigger) bypass the For
// predicate: controller-runtime applies no predicate to a raw source, and such an event
// carries only a namespace and a name. Reconcile therefore checks the opt-in and the scope
// itself: a trigger for a workload that did not opt in reconciles it and changes nothing.
//
// BenchmarkMemoryAndLatency measures the manager process with this group alone at two sizes
// of ConfigMaps and Secrets (resident memory, Go heap, and the latency from a change to the
// Pod template's), and counts the rolls at install, at workload creation, at a restart, for
// label-only changes and for bursts; BenchmarkAutoReloadAll and BenchmarkRateLimit measure
// --auto-reload-all and --max-rollouts-per-minute.
package configmapwatcher
