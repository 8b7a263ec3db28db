package v1alpha1

// Annotations that are part of the API: users and other controllers read and write them.
const (
	// ReloadAnnotation opts a workload in to the configmapwatcher. "true" means every ConfigMap
	// and Secret the Pod template references; otherwise it is a comma-separated list of names:
	// ConfigMaps, unless written "secret/NAME" ("configmap/NAME" is accepted too), each matched
	// literally. A listed object counts whether or not the Pod template references it. It is
	// read on the workload only, not on its Pod template.
	ReloadAnnotation = "app.example.com/reload"

	// ConfigHashAnnotation is set on a workload's Pod template by the configmapwatcher when the
	// data the workload uses changed after the baseline: a keyed digest of ConfigStateAnnotation.
	// A new value rolls the Pods. (Releases before the configmapwatcher read Secrets wrote a plain
	// SHA-256 of the referenced ConfigMaps' data here, and wrote it at first sight.)
	ConfigHashAnnotation = "app.example.com/config-hash"

	// ConfigStateAnnotation is set on a workload's own metadata by the configmapwatcher: the
	// record of the data the workload last rolled to, or of the baseline it was first seen
	// with. It holds, per ConfigMap and Secret and per key the workload uses, a short keyed
	// digest (HMAC-SHA256 under a key only the manager reads), and the id of that key. Writing
	// it never rolls the Pods.
	ConfigStateAnnotation = "app.example.com/config-state"

	// RunJobOnChangeAnnotation on a CronJob: "true" makes the configmapwatcher run a Job from
	// the job template at once when the data the CronJob uses changes, besides updating the job
	// template (which the next scheduled Job takes); "false" only updates the template. Without
	// it, a CronJob opted in through Reloader's annotations (or --auto-reload-all) runs a Job, as
	// Reloader does, and one opted in through ReloadAnnotation does not.
	RunJobOnChangeAnnotation = "app.example.com/run-job-on-change"

	// UsageAnnotationPrefix starts the Pod annotations the verticalscaler reads usage from with
	// --usage-source=pod-annotations: one per container, "usage.app.example.com/<container>:
	// cpu=250m,memory=128Mi". For tests, kwok clusters and clusters without metrics-server,
	// where another tool writes them.
	UsageAnnotationPrefix = "usage.app.example.com/"
)

// Stakater Reloader's annotations, which the configmapwatcher honours (unless
// --reloader-annotations=false) so that a cluster can replace Reloader without editing a
// manifest. Their meaning is Reloader's; docs/migrating/from-reloader.md says where ours
// differs.
const (
	// ReloaderAutoAnnotation: "true" (any value strconv.ParseBool reads as true) rolls on every
	// ConfigMap and Secret the Pod template references.
	ReloaderAutoAnnotation = "reloader.stakater.com/auto"
	// ReloaderConfigMapAutoAnnotation is ReloaderAutoAnnotation for ConfigMaps only.
	ReloaderConfigMapAutoAnnotation = "configmap.reloader.stakater.com/auto"
	// ReloaderSecretAutoAnnotation is ReloaderAutoAnnotation for Secrets only.
	ReloaderSecretAutoAnnotation = "secret.reloader.stakater.com/auto"
	// ReloaderConfigMapReloadAnnotation is a comma-separated list of ConfigMaps to roll on
	// whether or not the Pod template references them. An entry that is a valid object name is
	// that name, matched literally (a dot is not a wildcard); any other entry is an anchored
	// regular expression.
	ReloaderConfigMapReloadAnnotation = "configmap.reloader.stakater.com/reload"
	// ReloaderSecretReloadAnnotation is ReloaderConfigMapReloadAnnotation for Secrets.
	ReloaderSecretReloadAnnotation = "secret.reloader.stakater.com/reload"
	// ReloaderSearchAnnotation: "true" on a workload rolls it on the referenced ConfigMaps and
	// Secrets that carry ReloaderMatchAnnotation "true".
	ReloaderSearchAnnotation = "reloader.stakater.com/search"
	// ReloaderMatchAnnotation: "true" on a ConfigMap or Secret makes the workloads with
	// ReloaderSearchAnnotation that reference it roll on it.
	ReloaderMatchAnnotation = "reloader.stakater.com/match"
	// ReloaderIgnoreAnnotation: "true" on a ConfigMap or Secret makes no workload roll on it.
	ReloaderIgnoreAnnotation = "reloader.stakater.com/ignore"
	// ReloaderConfigMapExcludeAnnotation is a comma-separated list of ConfigMap names a
	// workload never rolls on, whatever else it asks for.
	ReloaderConfigMapExcludeAnnotation = "configmaps.exclude.reloader.stakater.com/reload"
	// ReloaderSecretExcludeAnnotation is ReloaderConfigMapExcludeAnnotation for Secrets.
	ReloaderSecretExcludeAnnotation = "secrets.exclude.reloader.stakater.com/reload"
	// ReloaderSecretProviderClassReloadAnnotation is ReloaderConfigMapReloadAnnotation for
	// SecretProviderClasses (Secrets Store CSI driver), read with --enable-csi-integration.
	ReloaderSecretProviderClassReloadAnnotation = "secretproviderclass.reloader.stakater.com/reload"
	// ReloaderSecretProviderClassAutoAnnotation is ReloaderAutoAnnotation for
	// SecretProviderClasses only, read with --enable-csi-integration.
	ReloaderSecretProviderClassAutoAnnotation = "secretproviderclass.reloader.stakater.com/auto"
	// ReloaderSecretProviderClassExcludeAnnotation is ReloaderConfigMapExcludeAnnotation for
	// SecretProviderClasses, read with --enable-csi-integration.
	ReloaderSecretProviderClassExcludeAnnotation = "secretproviderclasses.exclude.reloader.stakater.com/reload"
	// ReloaderRolloutStrategyAnnotation on an Argo Rollout: "restart" rolls it through
	// spec.restartAt (Argo restarts its Pods in place) instead of a new Pod template.
	ReloaderRolloutStrategyAnnotation = "reloader.stakater.com/rollout-strategy"
	// ReloaderPausePeriodAnnotation on a Deployment: a Go duration ("5m"); a roll pauses the
	// Deployment for that long, so that the changes made meanwhile go out in one rollout when
	// it resumes.
	ReloaderPausePeriodAnnotation = "deployment.reloader.stakater.com/pause-period"
	// ReloaderPausedAtAnnotation is set on a Deployment paused for its pause period, with the
	// time of the pause (RFC 3339); it goes when the Deployment resumes.
	ReloaderPausedAtAnnotation = "deployment.reloader.stakater.com/paused-at"
	// ReloaderLastReloadedFromAnnotation is written on a rolled Pod template, as Reloader writes
	// it: which source the roll was for, as JSON {"type", "name", "namespace", "hash",
	// "containerRefs", "observedAt"}. The hash is the configmapwatcher's keyed digest of the
	// source's data, not Reloader's plain SHA-1 of it.
	ReloaderLastReloadedFromAnnotation = "reloader.stakater.com/last-reloaded-from"
)

// ReloaderEnvVarPrefix starts the container environment variables Reloader's env-vars strategy
// rolls a Pod template with (--reload-strategy=env-vars): STAKATER_<NAME>_CONFIGMAP or
// STAKATER_<NAME>_SECRET, valued with a digest of the source's data.
const ReloaderEnvVarPrefix = "STAKATER_"
