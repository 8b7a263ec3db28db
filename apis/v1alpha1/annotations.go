package v1alpha1

// Annotations that are part of the API: users and other controllers read and write them.
const (
	// ReloadAnnotation opts a workload in to the configmapwatcher. "true" means every ConfigMap
	// and Secret the Pod template references; otherwise it is a comma-separated list of names:
	// ConfigMaps, unless written "secret/NAME" ("configmap/NAME" is accepted too). A listed
	// object counts whether or not the Pod template references it.
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
	// ReloaderConfigMapReloadAnnotation is a comma-separated list of ConfigMap names, each an
	// anchored regular expression, to roll on whether or not the Pod template references them.
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
)
