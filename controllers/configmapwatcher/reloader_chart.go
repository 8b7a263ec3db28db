package configmapwatcher

// This file lists the values of Stakater Reloader's Helm chart (chart 2.2.16, Reloader v1.4.21)
// and what Switchboard's chart (charts/switchboard) does with each, so that a Reloader user's
// values file installs unchanged. It is data only: the chart's templates do the mapping
// (templates/_helpers.tpl, switchboard.reloader.*), test/helm checks every entry against them
// by rendering, and hack/docgen writes the table into docs/migrating/from-reloader.md.

// ChartHandling says what Switchboard's chart does with one of Reloader's chart values.
type ChartHandling string

// The kinds of handling.
const (
	// ChartMapped: the value means what it means in Reloader; Ours says what it becomes.
	ChartMapped ChartHandling = "mapped"
	// ChartAccepted: any value is accepted and asks for nothing more: Reloader ignores it
	// too, or Switchboard always does what it asks.
	ChartAccepted ChartHandling = "accepted"
	// ChartDefaultOnly: Reloader's default is accepted, so that Reloader's whole values file
	// installs; any other value fails the install, naming the value and what to use instead.
	ChartDefaultOnly ChartHandling = "at its default only"
)

// ReloaderChartValue is one value of Reloader's chart.
type ReloaderChartValue struct {
	// Path is the value's path in Reloader's chart, for example reloader.watchGlobally; a
	// path that ends in a free-form object (an affinity, an env map) stands for all of it.
	Path string
	// Handling says what Switchboard's chart does with it.
	Handling ChartHandling
	// Ours is what it becomes: a value of ours, or a short sentence.
	Ours string
}

// ReloaderChartValues are every value Reloader's chart reads, in the order of its values.yaml,
// and the few it leaves commented out there.
var ReloaderChartValues = []ReloaderChartValue{
	{"global.imageRegistry", ChartDefaultOnly, "empty; put the registry in `image.repository`"},
	{"global.imagePullSecrets", ChartMapped, "added to `imagePullSecrets`; names or `{name: ...}`, as in Reloader's chart"},
	{"kubernetes.host", ChartAccepted, "read by neither chart"},
	{"nameOverride", ChartMapped, "`nameOverride` (our objects are named `<release>-switchboard-...`)"},
	{"fullnameOverride", ChartMapped, "`fullnameOverride`"},
	{"image.name", ChartDefaultOnly, "`stakater/reloader` or empty: Reloader's chart reads it only with `global.imageRegistry`; our image is `image.repository`"},
	{"image.repository", ChartMapped, "`image.repository`, Switchboard's image; Reloader's `ghcr.io/stakater/reloader` stands for ours, any other Reloader image fails"},
	{"image.tag", ChartMapped, "`image.tag`; with Reloader's repository only its `v1.4.21` (ours then), any other tag fails"},
	{"image.digest", ChartMapped, "`image.digest`; with Reloader's repository it fails"},
	{"image.pullPolicy", ChartMapped, "`image.pullPolicy`"},
	{"reloader.autoReloadAll", ChartMapped, "`controllers.configmapwatcher.autoReloadAll` (`--auto-reload-all`)"},
	{"reloader.isArgoRollouts", ChartMapped, "`controllers.configmapwatcher.kinds.rollouts`: `false`, Reloader's default, leaves Rollouts alone; unset, ours rolls them when their CRD is installed"},
	{"reloader.isOpenshift", ChartDefaultOnly, "`false`: Reloader no longer reloads DeploymentConfigs, nor does Switchboard"},
	{"reloader.ignoreSecrets", ChartMapped, "`controllers.configmapwatcher.resourcesToIgnore: secrets`"},
	{"reloader.ignoreConfigMaps", ChartMapped, "`controllers.configmapwatcher.resourcesToIgnore: configmaps`; with `ignoreSecrets` too it fails, as Reloader stops at start"},
	{"reloader.ignoreJobs", ChartMapped, "`controllers.configmapwatcher.kinds.jobs: false`"},
	{"reloader.ignoreCronJobs", ChartMapped, "`controllers.configmapwatcher.kinds.cronjobs: false`"},
	{"reloader.reloadOnCreate", ChartMapped, "`--reload-on-create=true`"},
	{"reloader.reloadOnDelete", ChartMapped, "`controllers.configmapwatcher.reloadOnDelete` (`--reload-on-delete`)"},
	{"reloader.syncAfterRestart", ChartMapped, "`--sync-after-restart=true`"},
	{"reloader.reloadStrategy", ChartMapped, "`env-vars` or `annotations`: `--reload-strategy`; `default` renders none: our default strategy ([why](#what-differs-and-why))"},
	{"reloader.ignoreNamespaces", ChartMapped, "added to `controllers.configmapwatcher.namespacesToIgnore`; Reloader reads it only with `watchGlobally`, so without it fails"},
	{"reloader.namespaceSelector", ChartMapped, "`controllers.configmapwatcher.namespaceSelector`, which the chart lets the manager read Namespaces for; without `watchGlobally` it fails, as Reloader ignores it"},
	{"reloader.resourceLabelSelector", ChartMapped, "`controllers.configmapwatcher.resourceLabelSelector`"},
	{"reloader.logFormat", ChartMapped, "`--log-format`"},
	{"reloader.logLevel", ChartMapped, "`--log-level`, but at `info`; with our `logLevel` (`--zap-log-level`) it fails"},
	{"reloader.watchGlobally", ChartMapped, "`false`: `watchNamespaces: [<the release's namespace>]`, with Roles there"},
	{"reloader.namespaces", ChartMapped, "with `watchGlobally: false`: `watchNamespaces`, the release's namespace and these, trimmed, unique, sorted; with `watchGlobally: true` it fails, as in Reloader's chart"},
	{"reloader.enableHA", ChartMapped, "`leaderElection.enabled` and `replicaCount: reloader.deployment.replicas`, the replicas preferably on different nodes unless an affinity is set"},
	{"reloader.enablePProf", ChartDefaultOnly, "`false`: the manager serves no pprof"},
	{"reloader.enableCSIIntegration", ChartMapped, "`controllers.configmapwatcher.csiIntegration` (`--enable-csi-integration`), with the permission to read SecretProviderClasses and their Pod statuses"},
	{"reloader.pprofAddr", ChartAccepted, "read only with `enablePProf`"},
	{"reloader.readOnlyRootFileSystem", ChartAccepted, "our root filesystem is always read-only"},
	{"reloader.legacy.rbac", ChartAccepted, "read by neither chart"},
	{"reloader.matchLabels", ChartMapped, "added to `podLabels` (on the Pods, not in the selector)"},
	{"reloader.enableMetricsByNamespace", ChartAccepted, "`reloader_reload_executed_total_by_namespace` is always served"},
	{"reloader.deployment.dnsConfig", ChartMapped, "the Pods' `dnsConfig`"},
	{"reloader.deployment.replicas", ChartMapped, "`replicaCount`; more than 1 needs `enableHA` (Reloader's chart renders a Pod that stops at start there)"},
	{"reloader.deployment.revisionHistoryLimit", ChartMapped, "the Deployment's `revisionHistoryLimit`; Reloader's default `2` leaves Kubernetes'"},
	{"reloader.deployment.hostUsers", ChartMapped, "the Pods' `hostUsers`"},
	{"reloader.deployment.nodeSelector", ChartMapped, "`nodeSelector`"},
	{"reloader.deployment.affinity", ChartMapped, "`affinity`"},
	{"reloader.deployment.volumeMounts", ChartMapped, "more volume mounts of the manager container, before those of our `extraVolumeMounts`"},
	{"reloader.deployment.volumes", ChartMapped, "more volumes of the Pods, before those of our `extraVolumes`"},
	{"reloader.deployment.securityContext", ChartMapped, "laid over `podSecurityContext`, its user and group the container's; Reloader's default leaves ours (user 65532). Never root"},
	{"reloader.deployment.containerSecurityContext", ChartMapped, "laid over `securityContext`: never root, no privilege escalation, read-only, every capability dropped"},
	{"reloader.deployment.tolerations", ChartMapped, "`tolerations`"},
	{"reloader.deployment.topologySpreadConstraints", ChartMapped, "`topologySpreadConstraints`"},
	{"reloader.deployment.annotations", ChartMapped, "the Deployment's annotations"},
	{"reloader.deployment.labels", ChartMapped, "the Deployment's labels, and added to `podLabels`; Reloader's default (`provider`, `group`, `version`) is left out"},
	{"reloader.deployment.env.open", ChartMapped, "the manager's environment variables, before those of our `extraEnv`; Reloader's `ALERT_*` mean the same to it"},
	{"reloader.deployment.env.secret", ChartMapped, "the manager's environment variables, from a Secret `<fullname>-reloader-env` the chart creates with these values"},
	{"reloader.deployment.env.field", ChartMapped, "the manager's environment variables, from fields of its Pod"},
	{"reloader.deployment.env.existing", ChartMapped, "the manager's environment variables, from keys of your Secrets"},
	{"reloader.deployment.livenessProbe", ChartMapped, "its timings, laid over our liveness probe's (`/healthz`)"},
	{"reloader.deployment.readinessProbe", ChartMapped, "its timings, laid over our readiness probe's (`/readyz`)"},
	{"reloader.deployment.resources", ChartMapped, "`resources`, in place of ours"},
	{"reloader.deployment.pod.annotations", ChartMapped, "added to `podAnnotations`"},
	{"reloader.deployment.priorityClassName", ChartMapped, "`priorityClassName`"},
	{"reloader.deployment.runtimeClassName", ChartMapped, "the Pods' `runtimeClassName`"},
	{"reloader.deployment.schedulerName", ChartMapped, "the Pods' `schedulerName`"},
	{"reloader.deployment.gomaxprocsOverride", ChartMapped, "`GOMAXPROCS`; empty leaves the Go runtime's (Reloader's chart sets the CPU limit)"},
	{"reloader.deployment.gomemlimitOverride", ChartMapped, "`GOMEMLIMIT`; empty leaves the Go runtime's (Reloader's chart sets the memory limit)"},
	{"reloader.deployment.automountServiceAccountToken", ChartMapped, "the Pods' `automountServiceAccountToken`"},
	{"reloader.service", ChartDefaultOnly, "empty: ours has its metrics Service (`metrics.service.enabled`, HTTPS on `metrics.port`)"},
	{"reloader.rbac.enabled", ChartMapped, "`rbac.create`"},
	{"reloader.rbac.labels", ChartMapped, "more labels of the RBAC objects"},
	{"reloader.serviceAccount.create", ChartMapped, "`serviceAccount.create`; `false` without a name uses the namespace's `default` ServiceAccount, as Reloader's chart does"},
	{"reloader.serviceAccount.labels", ChartMapped, "the ServiceAccount's labels"},
	{"reloader.serviceAccount.annotations", ChartMapped, "added to `serviceAccount.annotations`"},
	{"reloader.serviceAccount.name", ChartMapped, "`serviceAccount.name`"},
	{"reloader.serviceAccount.automountServiceAccountToken", ChartMapped, "the ServiceAccount's `automountServiceAccountToken`"},
	{"reloader.custom_annotations", ChartMapped, "`configmap`, `secret`, `auto`, `secret_auto`, `configmap_auto`, `search`, `match`, `ignore`, `pausePeriod`, `pauseTime`: Reloader's flags (`--configmap-annotation=...`); another key fails"},
	{"reloader.serviceMonitor.enabled", ChartMapped, "`metrics.serviceMonitor.enabled`: HTTPS, authenticated; bind the ClusterRole `<fullname>-metrics-reader` to Prometheus"},
	{"reloader.serviceMonitor.namespace", ChartDefaultOnly, "empty: ours is in the release's namespace"},
	{"reloader.serviceMonitor.interval", ChartMapped, "`metrics.serviceMonitor.interval`"},
	{"reloader.serviceMonitor.scheme", ChartDefaultOnly, "empty: ours scrapes HTTPS"},
	{"reloader.serviceMonitor.tlsConfig", ChartDefaultOnly, "empty: ours verifies the endpoint's certificate as `metrics.certificate` says"},
	{"reloader.serviceMonitor.bearerTokenFile", ChartDefaultOnly, "empty: ours presents Prometheus's ServiceAccount token"},
	{"reloader.serviceMonitor.timeout", ChartMapped, "the ServiceMonitor's `scrapeTimeout`"},
	{"reloader.serviceMonitor.labels", ChartMapped, "added to `metrics.serviceMonitor.labels`"},
	{"reloader.serviceMonitor.annotations", ChartMapped, "the ServiceMonitor's annotations"},
	{"reloader.serviceMonitor.honorLabels", ChartMapped, "the ServiceMonitor's `honorLabels`"},
	{"reloader.serviceMonitor.metricRelabelings", ChartMapped, "the ServiceMonitor's `metricRelabelings`"},
	{"reloader.serviceMonitor.relabelings", ChartMapped, "the ServiceMonitor's `relabelings`"},
	{"reloader.serviceMonitor.targetLabels", ChartMapped, "the ServiceMonitor's `targetLabels`"},
	{"reloader.podMonitor.enabled", ChartDefaultOnly, "`false`: ours ships a ServiceMonitor (`reloader.serviceMonitor.enabled`)"},
	{"reloader.podMonitor", ChartAccepted, "its other values: read only with `podMonitor.enabled`"},
	{"reloader.podDisruptionBudget.enabled", ChartMapped, "`podDisruptionBudget.enabled`"},
	{"reloader.podDisruptionBudget.minAvailable", ChartMapped, "`podDisruptionBudget.minAvailable`"},
	{"reloader.podDisruptionBudget.maxUnavailable", ChartMapped, "`podDisruptionBudget.maxUnavailable`, which wins over `minAvailable`, as in Reloader's chart"},
	{"reloader.netpol.enabled", ChartMapped, "`networkPolicy.enabled`: ingress to the metrics port only; egress is not restricted (Reloader's lets only port 443 out)"},
	{"reloader.netpol.from", ChartMapped, "the peers that may reach the metrics port, in place of `networkPolicy.metricsNamespaceSelector`; empty: any, as in Reloader's chart"},
	{"reloader.netpol.to", ChartDefaultOnly, "empty: ours restricts no egress"},
	{"reloader.verticalPodAutoscaler.enabled", ChartDefaultOnly, "`false`; a VerticalScaler can size the manager"},
	{"reloader.verticalPodAutoscaler", ChartAccepted, "its other values: read only with `verticalPodAutoscaler.enabled`"},
	{"reloader.webhookUrl", ChartMapped, "`--webhook-url`: posts instead of rolling, as in Reloader (with or without `custom_annotations`); with our `webhookUrl` or `webhookUrlSecret` it fails"},
}
