{{/* The chart's name. */}}
{{- define "switchboard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object's name: the release's name, with the chart's unless it has it. */}}
{{- define "switchboard.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "switchboard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "switchboard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that tell this release's objects from others'. */}}
{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of the manager's Pods, and what selects them. */}}
{{- define "switchboard.managerSelectorLabels" -}}
{{ include "switchboard.selectorLabels" . }}
app.kubernetes.io/component: controller-manager
{{- end }}

{{/* The manager's ServiceAccount. */}}
{{- define "switchboard.serviceAccountName" -}}
{{- default (printf "%s-controller-manager" (include "switchboard.fullname" .)) (include "switchboard.values" . | fromJson).serviceAccount.name }}
{{- end }}

{{/*
The components turned on, in the controller table's order, as a JSON list: each is a directory
of files/components (its CRDs and generated RBAC) and a controller group of the manager.
*/}}
{{- define "switchboard.components" -}}
{{- $on := list }}
{{- range $name := list "myapp" "verticalscaler" "configmapwatcher" }}
{{- if (index $.Values.controllers $name).enabled }}
{{- $on = append $on $name }}
{{- end }}
{{- end }}
{{- if not $on }}
{{- fail "controllers: every controller is off; turn one on (controllers.<name>.enabled)" }}
{{- end }}
{{- toJson $on }}
{{- end }}

{{/*
The manager's --controllers: the components on, less the verticalpodautoscaler when
verticalPodAutoscalers is false and the configmapwatcher's kinds off. The kinds are listed in the
controller table's order.
*/}}
{{- define "switchboard.controllersFlag" -}}
{{- $selected := include "switchboard.components" . | fromJsonArray }}
{{- $vs := (include "switchboard.values" . | fromJson).controllers.verticalscaler }}
{{- if and $vs.enabled (not $vs.verticalPodAutoscalers) }}
{{- $selected = append $selected "-verticalpodautoscaler" }}
{{- end }}
{{- $cmw := (include "switchboard.values" . | fromJson).controllers.configmapwatcher }}
{{- if $cmw.enabled }}
{{- $off := list }}
{{- $kinds := list "deployments" "statefulsets" "daemonsets" "cronjobs" "jobs" "rollouts" }}
{{- range $kind := $kinds }}
{{- if not (index $cmw.kinds $kind) }}
{{- $off = append $off (printf "-configmapwatcher-%s" $kind) }}
{{- end }}
{{- end }}
{{- if eq (len $off) (len $kinds) }}
{{- fail "controllers.configmapwatcher.kinds: every kind is off; set controllers.configmapwatcher.enabled=false instead" }}
{{- end }}
{{- $selected = concat $selected $off }}
{{- end }}
{{- join "," $selected }}
{{- end }}

{{/*
The rules and Roles controller-gen writes for a component from its package's RBAC markers
(config/components/<name>/rbac/role.yaml, copied by make manifests), as a JSON list of objects.
*/}}
{{- define "switchboard.generatedRBAC" -}}
{{- $objs := list }}
{{- range $doc := regexSplit "(?m)^---\\s*$" (.root.Files.Get (printf "files/components/%s/rbac/role.yaml" .component)) -1 }}
{{- if trim $doc }}
{{- $objs = append $objs ($doc | fromYaml) }}
{{- end }}
{{- end }}
{{- toJson $objs }}
{{- end }}

{{/*
The manager's Deployments, as a JSON list: one for every object when sharding.shards is empty;
otherwise one per listed shard and one for the rest (the objects labelled with no listed shard,
or not at all). Each with the suffix of its name, its shard (its Pods' app.example.com/shard
label; empty when unsharded), its --watch-label-selector, its --leader-elect-resource-name
(switchboard.leaseName) and, for a rollout from the fixed Lease names, its
--leader-elect-fixed-names-holder-prefix.
*/}}
{{- define "switchboard.managers" -}}
{{- $sharding := .Values.sharding }}
{{- $fullname := include "switchboard.fullname" . }}
{{- if not $sharding.shards }}
{{- $leases := include "switchboard.leaseName" . }}
{{- /*
Before the Leases took the release's name, every unsharded release held the fixed ones: a
replica of the release's earlier chart may still hold them during the upgrade, and is a Pod of
the same Deployment, whose name starts its Pods' names.
*/}}
{{- $fixedNamesHolders := "" }}
{{- if $leases }}
{{- $fixedNamesHolders = printf "%s-controller-manager-" $fullname }}
{{- end }}
{{- toJson (list (dict "suffix" "" "shard" "" "selector" "" "leases" $leases "fixedNamesHolders" $fixedNamesHolders)) }}
{{- else }}
{{- $managers := list (dict "suffix" "" "shard" "rest" "selector" (printf "%s notin (%s)" $sharding.key (join "," $sharding.shards)) "leases" (printf "%s-rest" $fullname) "fixedNamesHolders" "") }}
{{- range $shard := $sharding.shards }}
{{- $managers = append $managers (dict "suffix" (printf "-%s" $shard) "shard" $shard "selector" (printf "%s=%s" $sharding.key $shard) "leases" (printf "%s-%s" $fullname $shard) "fixedNamesHolders" "") }}
{{- end }}
{{- toJson $managers }}
{{- end }}
{{- end }}

{{/*
The --leader-elect-resource-name of an unsharded release: its fullname, so that two releases in
one namespace elect through Leases of their own. A release whose fullname is switchboard (the
release name of the install docs) keeps the fixed names (switchboard.app.example.com and
switchboard-<group>, the manager's defaults, as config/default's): no other release of one
namespace can have that fullname, and its upgrades need not move its Leases. Empty for it.
*/}}
{{- define "switchboard.leaseName" -}}
{{- $fullname := include "switchboard.fullname" . }}
{{- if ne $fullname "switchboard" }}
{{- $fullname }}
{{- end }}
{{- end }}

{{/* Labels of a manager's Pods, and what selects them: .root's, and .manager's shard. */}}
{{- define "switchboard.shardSelectorLabels" -}}
{{ include "switchboard.managerSelectorLabels" .root }}
{{- with .manager.shard }}
app.example.com/shard: {{ . }}
{{- end }}
{{- end }}

{{/*
The leader election Leases the managers may hold, as a JSON list: each manager's, and one per
component, named after its --leader-elect-resource-name, or the fixed names without one.
*/}}
{{- define "switchboard.leases" -}}
{{- $leases := list }}
{{- range $m := include "switchboard.managers" . | fromJsonArray }}
{{- $leases = concat $leases (include "switchboard.leaseNames" (dict "root" $ "resourceName" $m.leases) | fromJsonArray) }}
{{- end }}
{{- toJson $leases }}
{{- end }}

{{/*
The Leases of the fixed names that a manager moving from them waits for while a replica of the
release's earlier chart holds one, and deletes once free (--leader-elect-fixed-names-holder-prefix),
as a JSON list: those that are not its own.
*/}}
{{- define "switchboard.fixedNameLeases" -}}
{{- $fixed := list }}
{{- $own := include "switchboard.leases" . | fromJsonArray }}
{{- range $m := include "switchboard.managers" . | fromJsonArray }}
{{- if $m.fixedNamesHolders }}
{{- range $name := include "switchboard.leaseNames" (dict "root" $ "resourceName" "") | fromJsonArray }}
{{- if not (or (has $name $own) (has $name $fixed)) }}
{{- $fixed = append $fixed $name }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $fixed }}
{{- end }}

{{/*
The Leases of one manager with --leader-elect-resource-name .resourceName, as a JSON list, as
controllers.LeaseNames names them: the manager's (--leader-elect-scope=manager), and one per
component (--leader-elect-scope=controller); without a name, the manager's fixed defaults.
*/}}
{{- define "switchboard.leaseNames" -}}
{{- $lease := "switchboard.app.example.com" }}
{{- $prefix := "switchboard-" }}
{{- with .resourceName }}
{{- $lease = . }}
{{- $prefix = printf "%s-" . }}
{{- end }}
{{- $leases := list $lease }}
{{- range $name := include "switchboard.components" .root | fromJsonArray }}
{{- $leases = append $leases (printf "%s%s" $prefix $name) }}
{{- end }}
{{- toJson $leases }}
{{- end }}

{{/*
The Secret holding the metrics endpoint's certificate (tls.crt, tls.key and ca.crt): cert-manager's,
or the user's; empty when the manager makes a self-signed one.
*/}}
{{- define "switchboard.metricsCertSecret" -}}
{{- $cert := .Values.metrics.certificate }}
{{- if and $cert.certManager.enabled $cert.secretName }}
{{- fail "metrics.certificate: certManager.enabled and secretName are both set; choose one" }}
{{- end }}
{{- if and .Values.metrics.enabled $cert.certManager.enabled }}
{{- printf "%s-metrics-server-cert" (include "switchboard.fullname" .) }}
{{- else if .Values.metrics.enabled }}
{{- $cert.secretName }}
{{- end }}
{{- end }}

{{/* The metrics Service's DNS name in the cluster, which its certificate is issued for. */}}
{{- define "switchboard.metricsServiceDNSName" -}}
{{- printf "%s-controller-manager-metrics.%s.svc" (include "switchboard.fullname" .) .Release.Namespace }}
{{- end }}

{{/* Where the manager reads the metrics endpoint's certificate (--metrics-cert-path). */}}
{{- define "switchboard.metricsCertPath" -}}
/var/run/secrets/switchboard/metrics-certs
{{- end }}

{{/*
Where the manager reads the CA of trustedCA: a directory that SSL_CERT_DIR names, so that Go
reads it besides the image's CA bundle (config/trusted-ca mounts it at the same path).
*/}}
{{- define "switchboard.trustedCAPath" -}}
/etc/switchboard/trusted-ca
{{- end }}

{{/*
extraEnv and extraVolumes, refused where they would set what the chart sets or name one thing
twice: Kubernetes would take the last of two variables silently, and refuse two volumes of one
name only when it creates the Pods, after the install succeeded.
*/}}
{{- define "switchboard.checkExtras" -}}
{{- $names := list "POD_NAMESPACE" "SWITCHBOARD_WEBHOOK_URL" }}
{{- if .trustCA }}
{{- $names = append $names "SSL_CERT_DIR" }}
{{- end }}
{{- range .values.fromReloader.env }}
{{- $names = append $names .name }}
{{- end }}
{{- range .values.extraEnv }}
{{- if has .name $names }}
{{- fail (printf "extraEnv: %s is set twice (the chart sets POD_NAMESPACE, SWITCHBOARD_WEBHOOK_URL, and SSL_CERT_DIR with trustedCA; reloader.deployment.env sets its own)" .name) }}
{{- end }}
{{- $names = append $names .name }}
{{- end }}
{{- $volumes := list "metrics-certs" "trusted-ca" }}
{{- range concat (.values.fromReloader.volumes | default list) .values.extraVolumes }}
{{- if has .name $volumes }}
{{- fail (printf "extraVolumes: the volume name %s is used twice (metrics-certs and trusted-ca are the chart's; reloader.deployment.volumes has its own)" .name) }}
{{- end }}
{{- $volumes = append $volumes .name }}
{{- end }}
{{- end }}

{{/*
Where the configmapwatcher's webhook URL comes from, when a Secret holds it: the container's
environment variable, which the args name as $(SWITCHBOARD_WEBHOOK_URL) for the kubelet to expand.
Empty when the URL is a value, or there is none.
*/}}
{{- define "switchboard.webhookURLVariable" -}}
{{- $cmw := (include "switchboard.values" . | fromJson).controllers.configmapwatcher }}
{{- if and $cmw.webhookUrl $cmw.webhookUrlSecret.name }}
{{- fail "controllers.configmapwatcher: webhookUrl and webhookUrlSecret.name are both set; choose one" }}
{{- end }}
{{- if and $cmw.webhookOnly (not (or $cmw.webhookUrl $cmw.webhookUrlSecret.name)) }}
{{- fail "controllers.configmapwatcher.webhookOnly needs webhookUrl or webhookUrlSecret.name: it posts there instead of rolling" }}
{{- end }}
{{- if and $cmw.enabled $cmw.webhookUrlSecret.name }}
{{- print "SWITCHBOARD_WEBHOOK_URL" }}
{{- end }}
{{- end }}

{{/*
The repository of Switchboard's image, values.yaml's image.repository (test/helm checks that
they are the same): what Reloader's image values stand for.
*/}}
{{- define "switchboard.defaultImageRepository" -}}
ghcr.io/example/switchboard
{{- end }}

{{/* Labels of the RBAC objects: every object's, and reloader.rbac.labels. */}}
{{- define "switchboard.rbacLabels" -}}
{{ include "switchboard.labels" . }}
{{- with (include "switchboard.values" . | fromJson).fromReloader.rbacLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The values every template reads, as JSON: .Values with Stakater Reloader's chart values folded
into ours (reloader.*, global.*, kubernetes.* and Reloader's image values; chart 2.2.16, Reloader
v1.4.21), so that a Reloader user's values file works unchanged and no template checks both
places. Each switchboard.reloader.* template below folds one area. A Reloader value means what
it means in Reloader, or is accepted at Reloader's default, or fails naming the value and what to
use instead; one that contradicts one of ours fails naming both. What ours has no value for is
under fromReloader: the configmapwatcher's flags (args) and the manager's (logArgs), the
container's environment (env) and the Secret it reads (envSecret), the probes, and the
Deployment's, ServiceAccount's, RBAC objects', ServiceMonitor's and NetworkPolicy's extras.
controllers/configmapwatcher/reloader_chart.go lists every value and what it becomes here.
*/}}
{{- define "switchboard.values" -}}
{{- $values := .Values | toJson | fromJson }}
{{- $from := dict "args" (list) "logArgs" (list) "env" (list) "envSecret" (dict) "serviceMonitor" (dict) }}
{{- $ctx := dict "root" . "values" $values "reloader" ($values.reloader | default dict) "from" $from }}
{{- include "switchboard.reloader.image" $ctx }}
{{- include "switchboard.reloader.namespaces" $ctx }}
{{- include "switchboard.reloader.configmapwatcher" $ctx }}
{{- include "switchboard.reloader.replicas" $ctx }}
{{- include "switchboard.reloader.pod" $ctx }}
{{- include "switchboard.reloader.environment" $ctx }}
{{- include "switchboard.reloader.access" $ctx }}
{{- include "switchboard.reloader.monitoring" $ctx }}
{{- include "switchboard.reloader.refused" $ctx }}
{{- range $key := list "reloader" "global" "kubernetes" }}
{{- $_ := unset $values $key }}
{{- end }}
{{- $_ := unset $values.image "name" }}
{{- $_ := set $values "fromReloader" $from }}
{{- toJson $values }}
{{- end }}

{{/*
Sets .into's .key to .value, a Reloader value (.theirs), unless ours (.ours) is set to another
value already.
*/}}
{{- define "switchboard.reloader.setOurs" -}}
{{- $current := get .into .key }}
{{- if and $current (ne (toJson $current) (toJson .value)) }}
{{- fail (printf "%s and %s are both set, and differ: set one of them" .theirs .ours) }}
{{- end }}
{{- $_ := set .into .key .value }}
{{- end }}

{{/*
Adds the entries of .value, a Reloader map (.theirs), to .into's map .key (ours, .ours), unless
ours has one of them with another value.
*/}}
{{- define "switchboard.reloader.mergeOurs" -}}
{{- $map := get .into .key | default dict }}
{{- range $k, $v := .value }}
{{- if and (hasKey $map $k) (ne (toJson (get $map $k)) (toJson $v)) }}
{{- fail (printf "%s and %s both set %s, to different values: set one of them" $.theirs $.ours $k) }}
{{- end }}
{{- $_ := set $map $k $v }}
{{- end }}
{{- $_ := set .into .key $map }}
{{- end }}

{{/*
Reloader's image values: Reloader's image (ghcr.io/stakater/reloader, at its chart's tag
v1.4.21) stands for Switchboard's, so that Reloader's default values install; another Reloader
image is refused, as is global.imageRegistry. global.imagePullSecrets join imagePullSecrets.
*/}}
{{- define "switchboard.reloader.image" -}}
{{- $image := .values.image }}
{{- $global := .values.global | default dict }}
{{- $reloaderRepository := "ghcr.io/stakater/reloader" }}
{{- $ours := include "switchboard.defaultImageRepository" .root }}
{{- if not (has ($image.name | default "") (list "" "stakater/reloader")) }}
{{- fail (printf "image.name %q: Reloader's chart reads it only with global.imageRegistry; Switchboard's image is image.repository (%s by default)" $image.name $ours) }}
{{- end }}
{{- with $global.imageRegistry }}
{{- fail (printf "global.imageRegistry %q: Switchboard's chart takes the registry as part of image.repository (for example %s/example/switchboard); set that instead" . .) }}
{{- end }}
{{- if eq $image.repository $reloaderRepository }}
{{- if not (has $image.tag (list "" "v1.4.21")) }}
{{- fail (printf "image.tag %q goes with Reloader's image (image.repository %s), which Switchboard's chart does not run: leave both out for Switchboard's image, or name Switchboard's" $image.tag $reloaderRepository) }}
{{- end }}
{{- if $image.digest }}
{{- fail (printf "image.digest goes with Reloader's image (image.repository %s), which Switchboard's chart does not run: leave both out for Switchboard's image, or name Switchboard's" $reloaderRepository) }}
{{- end }}
{{- $_ := set $image "repository" $ours }}
{{- $_ := set $image "tag" "" }}
{{- else if hasSuffix "/stakater/reloader" (printf "/%s" $image.repository) }}
{{- fail (printf "image.repository %q is Reloader's image, which Switchboard's chart does not run: name Switchboard's image (%s by default), or a mirror of it" $image.repository $ours) }}
{{- end }}
{{- $secrets := .values.imagePullSecrets }}
{{- $names := list }}
{{- range $secrets }}
{{- $names = append $names .name }}
{{- end }}
{{- range $s := $global.imagePullSecrets | default (list) }}
{{- $name := $s }}
{{- if kindIs "map" $s }}
{{- $name = $s.name }}
{{- end }}
{{- if not (has $name $names) }}
{{- $secrets = append $secrets (dict "name" $name) }}
{{- $names = append $names $name }}
{{- end }}
{{- end }}
{{- $_ := set .values "imagePullSecrets" $secrets }}
{{- end }}

{{/*
reloader.watchGlobally and reloader.namespaces: false watches the release's namespace and those
listed (trimmed, unique, sorted, as Reloader's chart builds its --namespaces), which become
watchNamespaces. Reloader ignores ignoreNamespaces and namespaceSelector then: refused.
*/}}
{{- define "switchboard.reloader.namespaces" -}}
{{- $r := .reloader }}
{{- $globally := true }}
{{- if hasKey $r "watchGlobally" }}
{{- $globally = $r.watchGlobally }}
{{- end }}
{{- $_ := set .from "watchGlobally" $globally }}
{{- $listed := list }}
{{- $namespaces := $r.namespaces | default (list) }}
{{- if kindIs "string" $namespaces }}
{{- $namespaces = splitList "," $namespaces }}
{{- end }}
{{- range $namespaces }}
{{- with . | toString | trim }}
{{- $listed = append $listed . }}
{{- end }}
{{- end }}
{{- if and $listed $globally }}
{{- fail "reloader.namespaces is set but reloader.watchGlobally is true: set reloader.watchGlobally=false to watch only the release's namespace and these, as Reloader's chart says" }}
{{- end }}
{{- if not $globally }}
{{- $want := concat (list .root.Release.Namespace) $listed | uniq | sortAlpha }}
{{- range $want }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .) }}
{{- fail (printf "reloader.namespaces: %q is not a namespace name" .) }}
{{- end }}
{{- end }}
{{- with .values.watchNamespaces }}
{{- if ne (toJson (sortAlpha .)) (toJson $want) }}
{{- fail (printf "watchNamespaces %s and reloader.watchGlobally=false (with reloader.namespaces: %s) contradict: set one of them" (toJson .) (join "," $want)) }}
{{- end }}
{{- end }}
{{- $_ := set .values "watchNamespaces" $want }}
{{- if $r.ignoreNamespaces }}
{{- fail "reloader.ignoreNamespaces: Reloader honours it only with reloader.watchGlobally=true, and ignores it here; remove it, or watch globally" }}
{{- end }}
{{- if $r.namespaceSelector }}
{{- fail "reloader.namespaceSelector: Reloader honours it only with reloader.watchGlobally=true, and ignores it here; remove it, or watch globally (controllers.configmapwatcher.namespaceSelector selects within watchNamespaces)" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Reloader's values that configure the configmapwatcher: ours where ours has them, otherwise the
manager's flags of Reloader's names (.from.args), which it reads as Reloader does; and the
logging flags (.from.logArgs). They need the configmapwatcher on.
*/}}
{{- define "switchboard.reloader.configmapwatcher" -}}
{{- $r := .reloader }}
{{- $cmw := .values.controllers.configmapwatcher }}
{{- $args := list }}
{{- $used := list }}
{{- if and $r.ignoreNamespaces .from.watchGlobally }}
{{- $ignored := $cmw.namespacesToIgnore | default (list) }}
{{- range splitList "," $r.ignoreNamespaces }}
{{- with trim . }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .) }}
{{- fail (printf "reloader.ignoreNamespaces: %q is not a namespace name" .) }}
{{- end }}
{{- if not (has . $ignored) }}
{{- $ignored = append $ignored . }}
{{- end }}
{{- end }}
{{- end }}
{{- $_ := set $cmw "namespacesToIgnore" $ignored }}
{{- $used = append $used "reloader.ignoreNamespaces" }}
{{- end }}
{{- range $key := list "namespaceSelector" "resourceLabelSelector" }}
{{- with get $r $key }}
{{- include "switchboard.reloader.setOurs" (dict "into" $cmw "key" $key "value" . "theirs" (printf "reloader.%s" $key) "ours" (printf "controllers.configmapwatcher.%s" $key)) }}
{{- $used = append $used (printf "reloader.%s" $key) }}
{{- end }}
{{- end }}
{{- if and $r.ignoreSecrets $r.ignoreConfigMaps }}
{{- fail "reloader.ignoreSecrets and reloader.ignoreConfigMaps are both true: the manager, as Reloader, ignores configmaps or secrets, not both (Reloader's chart renders a Reloader that stops at start); set one, or turn the configmapwatcher off" }}
{{- end }}
{{- range $key, $kind := dict "ignoreSecrets" "secrets" "ignoreConfigMaps" "configmaps" }}
{{- if get $r $key }}
{{- include "switchboard.reloader.setOurs" (dict "into" $cmw "key" "resourcesToIgnore" "value" $kind "theirs" (printf "reloader.%s" $key) "ours" "controllers.configmapwatcher.resourcesToIgnore") }}
{{- $used = append $used (printf "reloader.%s" $key) }}
{{- end }}
{{- end }}
{{- range $key, $kind := dict "ignoreJobs" "jobs" "ignoreCronJobs" "cronjobs" }}
{{- if get $r $key }}
{{- $_ := set $cmw.kinds $kind false }}
{{- end }}
{{- end }}
{{- if hasKey $r "isArgoRollouts" }}
{{- if and $r.isArgoRollouts (not $cmw.kinds.rollouts) }}
{{- fail "reloader.isArgoRollouts=true and controllers.configmapwatcher.kinds.rollouts=false contradict: set one of them" }}
{{- end }}
{{- $_ := set $cmw.kinds "rollouts" $r.isArgoRollouts }}
{{- end }}
{{- $strategy := $r.reloadStrategy | default "default" }}
{{- if ne $strategy "default" }}
{{- if not (has $strategy (list "env-vars" "annotations")) }}
{{- fail (printf "reloader.reloadStrategy %q: default, env-vars or annotations" $strategy) }}
{{- end }}
{{- $args = append $args (printf "--reload-strategy=%s" $strategy) }}
{{- $used = append $used "reloader.reloadStrategy" }}
{{- end }}
{{- range $key, $flag := dict "reloadOnCreate" "--reload-on-create=true" "syncAfterRestart" "--sync-after-restart=true" }}
{{- if get $r $key }}
{{- $args = append $args $flag }}
{{- $used = append $used (printf "reloader.%s" $key) }}
{{- end }}
{{- end }}
{{- range $key := list "reloadOnDelete" "autoReloadAll" }}
{{- if get $r $key }}
{{- $_ := set $cmw $key true }}
{{- $used = append $used (printf "reloader.%s" $key) }}
{{- end }}
{{- end }}
{{- if $r.enableCSIIntegration }}
{{- $_ := set $cmw "csiIntegration" true }}
{{- $used = append $used "reloader.enableCSIIntegration" }}
{{- end }}
{{- with $r.webhookUrl }}
{{- if or $cmw.webhookUrl $cmw.webhookUrlSecret.name }}
{{- fail "reloader.webhookUrl and controllers.configmapwatcher.webhookUrl (or webhookUrlSecret) are both set: set one of them (reloader.webhookUrl is webhookUrl with webhookOnly: true)" }}
{{- end }}
{{- $_ := set $cmw "webhookUrl" . }}
{{- $_ := set $cmw "webhookOnly" true }}
{{- $used = append $used "reloader.webhookUrl" }}
{{- end }}
{{- $flags := dict "configmap" "configmap-annotation" "secret" "secret-annotation" "auto" "auto-annotation" "secret_auto" "secret-auto-annotation" "configmap_auto" "configmap-auto-annotation" "search" "auto-search-annotation" "match" "search-match-annotation" "ignore" "ignore-annotation" "pausePeriod" "pause-deployment-annotation" "pauseTime" "pause-deployment-time-annotation" }}
{{- $custom := $r.custom_annotations | default dict }}
{{- range $key := keys $custom | sortAlpha }}
{{- if not (hasKey $flags $key) }}
{{- fail (printf "reloader.custom_annotations.%s: Reloader's chart knows %s" $key (keys $flags | sortAlpha | join ", ")) }}
{{- end }}
{{- end }}
{{- range $key := list "configmap" "secret" "auto" "secret_auto" "configmap_auto" "search" "match" "ignore" "pausePeriod" "pauseTime" }}
{{- with get $custom $key }}
{{- $args = append $args (printf "--%s=%s" (get $flags $key) .) }}
{{- $used = append $used (printf "reloader.custom_annotations.%s" $key) }}
{{- end }}
{{- end }}
{{- if and $used (not $cmw.enabled) }}
{{- fail (printf "%s configures the configmapwatcher, which is off (controllers.configmapwatcher.enabled=false)" (first $used)) }}
{{- end }}
{{- $_ := set .from "args" $args }}
{{- $logArgs := list }}
{{- with $r.logFormat }}
{{- $logArgs = append $logArgs (printf "--log-format=%s" .) }}
{{- end }}
{{- $level := $r.logLevel | default "info" | toString }}
{{- if ne (lower $level) "info" }}
{{- if .values.logLevel }}
{{- fail "reloader.logLevel and logLevel are both set: logLevel is the manager's --zap-log-level, reloader.logLevel Reloader's --log-level; set one of them" }}
{{- end }}
{{- $logArgs = append $logArgs (printf "--log-level=%s" $level) }}
{{- end }}
{{- $_ := set .from "logArgs" $logArgs }}
{{- end }}

{{/*
reloader.enableHA is leader election, with reloader.deployment.replicas replicas (replicaCount)
and, as Reloader's chart, a preferred anti-affinity between them unless an affinity is set. More
than one replica without it is refused: Reloader's chart renders one Pod that stops at start.
*/}}
{{- define "switchboard.reloader.replicas" -}}
{{- $r := .reloader }}
{{- $values := .values }}
{{- $deployment := $r.deployment | default dict }}
{{- $replicas := 1 }}
{{- if hasKey $deployment "replicas" }}
{{- $replicas = int $deployment.replicas }}
{{- end }}
{{- if $r.enableHA }}
{{- if not $values.leaderElection.enabled }}
{{- fail "reloader.enableHA=true and leaderElection.enabled=false contradict: reloader.enableHA is leader election here; set one of them" }}
{{- end }}
{{- if not (or $values.affinity $deployment.affinity) }}
{{- $term := dict "labelSelector" (dict "matchLabels" (include "switchboard.managerSelectorLabels" .root | fromYaml)) "topologyKey" "kubernetes.io/hostname" }}
{{- $_ := set $values "affinity" (dict "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term)))) }}
{{- end }}
{{- else if gt $replicas 1 }}
{{- fail (printf "reloader.deployment.replicas=%d without reloader.enableHA: Reloader's chart renders one Pod that stops at start there; set reloader.enableHA=true (leader election) to run %d replicas" $replicas $replicas) }}
{{- end }}
{{- if ne $replicas 1 }}
{{- $ours := int $values.replicaCount }}
{{- if and (ne $ours 1) (ne $ours $replicas) }}
{{- fail (printf "reloader.deployment.replicas=%d and replicaCount=%d differ: set one of them" $replicas $ours) }}
{{- end }}
{{- $_ := set $values "replicaCount" $replicas }}
{{- end }}
{{- end }}

{{/*
reloader.deployment's Pod and Deployment settings: ours where ours has them, the others in
.from. Reloader's defaults that would change ours (its labels, its Pod securityContext, its
revisionHistoryLimit) leave ours. The probes are ours, with Reloader's timings laid over them.
*/}}
{{- define "switchboard.reloader.pod" -}}
{{- $values := .values }}
{{- $from := .from }}
{{- $deployment := .reloader.deployment | default dict }}
{{- range $key := list "nodeSelector" "affinity" "tolerations" "topologySpreadConstraints" "priorityClassName" }}
{{- with get $deployment $key }}
{{- include "switchboard.reloader.setOurs" (dict "into" $values "key" $key "value" . "theirs" (printf "reloader.deployment.%s" $key) "ours" $key) }}
{{- end }}
{{- end }}
{{- with $deployment.resources }}
{{- $_ := set $values "resources" . }}
{{- end }}
{{- with ($deployment.pod | default dict).annotations }}
{{- include "switchboard.reloader.mergeOurs" (dict "into" $values "key" "podAnnotations" "value" . "theirs" "reloader.deployment.pod.annotations" "ours" "podAnnotations") }}
{{- end }}
{{- with .reloader.matchLabels }}
{{- include "switchboard.reloader.mergeOurs" (dict "into" $values "key" "podLabels" "value" . "theirs" "reloader.matchLabels" "ours" "podLabels") }}
{{- end }}
{{- $reloaderLabels := dict "provider" "stakater" "group" "com.stakater.platform" "version" "v1.4.21" }}
{{- with $deployment.labels }}
{{- if ne (toJson .) (toJson $reloaderLabels) }}
{{- $_ := set $from "deploymentLabels" . }}
{{- include "switchboard.reloader.mergeOurs" (dict "into" $values "key" "podLabels" "value" . "theirs" "reloader.deployment.labels" "ours" "podLabels") }}
{{- end }}
{{- end }}
{{- with $deployment.annotations }}
{{- $_ := set $from "deploymentAnnotations" . }}
{{- end }}
{{- $reloaderPodSecurity := dict "runAsNonRoot" true "runAsUser" 65534 "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- with $deployment.securityContext }}
{{- if ne (toJson .) (toJson $reloaderPodSecurity) }}
{{- $_ := set $values "podSecurityContext" (mergeOverwrite (deepCopy $values.podSecurityContext) .) }}
{{- /* Ours sets the user in the container, which would win over the Pod's. */}}
{{- $pod := . }}
{{- range $key := list "runAsUser" "runAsGroup" }}
{{- if hasKey $pod $key }}
{{- $_ := set $values.securityContext $key (get $pod $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- with $deployment.containerSecurityContext }}
{{- $_ := set $values "securityContext" (mergeOverwrite (deepCopy $values.securityContext) .) }}
{{- end }}
{{- if kindIs "bool" $deployment.hostUsers }}
{{- $_ := set $from "hostUsers" $deployment.hostUsers }}
{{- end }}
{{- if hasKey $deployment "automountServiceAccountToken" }}
{{- $_ := set $from "automountServiceAccountToken" $deployment.automountServiceAccountToken }}
{{- end }}
{{- range $key := list "dnsConfig" "runtimeClassName" "schedulerName" "volumeMounts" }}
{{- with get $deployment $key }}
{{- $_ := set $from $key . }}
{{- end }}
{{- end }}
{{- with $deployment.volumes }}
{{- range . }}
{{- if eq .name "metrics-certs" }}
{{- fail "reloader.deployment.volumes: the volume name metrics-certs is the chart's own; rename it" }}
{{- end }}
{{- end }}
{{- $_ := set $from "volumes" . }}
{{- end }}
{{- if and (hasKey $deployment "revisionHistoryLimit") (not (kindIs "invalid" $deployment.revisionHistoryLimit)) }}
{{- if ne (int $deployment.revisionHistoryLimit) 2 }}
{{- $_ := set $from "revisionHistoryLimit" (int $deployment.revisionHistoryLimit) }}
{{- end }}
{{- end }}
{{- $probes := dict "livenessProbe" (dict "httpGet" (dict "path" "/healthz" "port" "probes") "initialDelaySeconds" 15 "periodSeconds" 20) "readinessProbe" (dict "httpGet" (dict "path" "/readyz" "port" "probes") "initialDelaySeconds" 5 "periodSeconds" 10) }}
{{- range $probe, $ours := $probes }}
{{- range $key, $value := get $deployment $probe | default dict }}
{{- if $value }}
{{- $_ := set $ours $key $value }}
{{- end }}
{{- end }}
{{- $_ := set $from $probe $ours }}
{{- end }}
{{- end }}

{{/*
reloader.deployment.env and the GOMAXPROCS, GOMEMLIMIT overrides: the manager's environment, in
Reloader's chart's order (Reloader's ALERT_* variables mean to the manager what they mean to
Reloader). env.secret's values go into a Secret of the chart's, <fullname>-reloader-env.
*/}}
{{- define "switchboard.reloader.environment" -}}
{{- $deployment := .reloader.deployment | default dict }}
{{- $env := $deployment.env | default dict }}
{{- $secretName := printf "%s-reloader-env" (include "switchboard.fullname" .root) }}
{{- $vars := list }}
{{- range $name, $key := dict "GOMAXPROCS" "gomaxprocsOverride" "GOMEMLIMIT" "gomemlimitOverride" }}
{{- with get $deployment $key }}
{{- $vars = append $vars (dict "name" $name "value" (toString .)) }}
{{- end }}
{{- end }}
{{- range $name, $value := $env.open | default dict }}
{{- if not (empty $value) }}
{{- $vars = append $vars (dict "name" $name "value" (toString $value)) }}
{{- end }}
{{- end }}
{{- $secret := dict }}
{{- range $name, $value := $env.secret | default dict }}
{{- if not (empty $value) }}
{{- $vars = append $vars (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secretName "key" $name))) }}
{{- $_ := set $secret $name (toString $value) }}
{{- end }}
{{- end }}
{{- range $secretName, $keys := $env.existing | default dict }}
{{- range $name, $key := $keys | default dict }}
{{- if $name }}
{{- $vars = append $vars (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secretName "key" (toString $key)))) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $path := $env.field | default dict }}
{{- if not (empty $path) }}
{{- $vars = append $vars (dict "name" $name "valueFrom" (dict "fieldRef" (dict "fieldPath" (toString $path)))) }}
{{- end }}
{{- end }}
{{- $names := list "POD_NAMESPACE" "SWITCHBOARD_WEBHOOK_URL" }}
{{- range $vars }}
{{- if has .name $names }}
{{- fail (printf "reloader.deployment.env: %s is set twice (the chart sets POD_NAMESPACE and SWITCHBOARD_WEBHOOK_URL itself)" .name) }}
{{- end }}
{{- $names = append $names .name }}
{{- end }}
{{- $_ := set .from "env" $vars }}
{{- $_ := set .from "envSecret" $secret }}
{{- end }}

{{/*
reloader.rbac and reloader.serviceAccount: rbac.create and serviceAccount.*, and the labels ours
has no value for. reloader.serviceAccount.create=false without a name uses the namespace's
default ServiceAccount, as Reloader's chart does.
*/}}
{{- define "switchboard.reloader.access" -}}
{{- $values := .values }}
{{- $rbac := .reloader.rbac | default dict }}
{{- if and (hasKey $rbac "enabled") (not $rbac.enabled) }}
{{- $_ := set $values.rbac "create" false }}
{{- end }}
{{- with $rbac.labels }}
{{- $_ := set $.from "rbacLabels" . }}
{{- end }}
{{- $sa := .reloader.serviceAccount | default dict }}
{{- with $sa.name }}
{{- include "switchboard.reloader.setOurs" (dict "into" $values.serviceAccount "key" "name" "value" . "theirs" "reloader.serviceAccount.name" "ours" "serviceAccount.name") }}
{{- end }}
{{- if and (hasKey $sa "create") (not $sa.create) }}
{{- $_ := set $values.serviceAccount "create" false }}
{{- if not $values.serviceAccount.name }}
{{- $_ := set $values.serviceAccount "name" "default" }}
{{- end }}
{{- end }}
{{- with $sa.annotations }}
{{- include "switchboard.reloader.mergeOurs" (dict "into" $values.serviceAccount "key" "annotations" "value" . "theirs" "reloader.serviceAccount.annotations" "ours" "serviceAccount.annotations") }}
{{- end }}
{{- with $sa.labels }}
{{- $_ := set $.from "serviceAccountLabels" . }}
{{- end }}
{{- if hasKey $sa "automountServiceAccountToken" }}
{{- $_ := set .from "serviceAccountAutomount" $sa.automountServiceAccountToken }}
{{- end }}
{{- end }}

{{/*
reloader.serviceMonitor, podDisruptionBudget and netpol: ours, and what ours has no value for.
Our ServiceMonitor scrapes the manager's HTTPS endpoint with Prometheus's token in the release's
namespace: Reloader's namespace, scheme, tlsConfig and bearerTokenFile are refused. Our
NetworkPolicy guards the metrics port and restricts no egress: netpol.to is refused.
*/}}
{{- define "switchboard.reloader.monitoring" -}}
{{- $values := .values }}
{{- $metrics := $values.metrics }}
{{- $sm := .reloader.serviceMonitor | default dict }}
{{- range $key := list "namespace" "scheme" "tlsConfig" "bearerTokenFile" }}
{{- if get $sm $key }}
{{- fail (printf "reloader.serviceMonitor.%s: Switchboard's ServiceMonitor scrapes the manager's HTTPS endpoint with Prometheus's ServiceAccount token, in the release's namespace, and takes no %s (metrics.certificate sets the endpoint's certificate); remove it" $key $key) }}
{{- end }}
{{- end }}
{{- if $sm.enabled }}
{{- if not (and $metrics.enabled $metrics.service.enabled) }}
{{- fail "reloader.serviceMonitor.enabled needs metrics.enabled and metrics.service.enabled: the ServiceMonitor scrapes the metrics Service" }}
{{- end }}
{{- $_ := set $metrics.serviceMonitor "enabled" true }}
{{- end }}
{{- with $sm.labels }}
{{- include "switchboard.reloader.mergeOurs" (dict "into" $metrics.serviceMonitor "key" "labels" "value" . "theirs" "reloader.serviceMonitor.labels" "ours" "metrics.serviceMonitor.labels") }}
{{- end }}
{{- with $sm.interval }}
{{- include "switchboard.reloader.setOurs" (dict "into" $metrics.serviceMonitor "key" "interval" "value" . "theirs" "reloader.serviceMonitor.interval" "ours" "metrics.serviceMonitor.interval") }}
{{- end }}
{{- $monitor := dict }}
{{- range $key, $field := dict "annotations" "annotations" "timeout" "scrapeTimeout" "metricRelabelings" "metricRelabelings" "relabelings" "relabelings" "targetLabels" "targetLabels" }}
{{- with get $sm $key }}
{{- $_ := set $monitor $field . }}
{{- end }}
{{- end }}
{{- if and (hasKey $sm "honorLabels") (kindIs "bool" $sm.honorLabels) }}
{{- $_ := set $monitor "honorLabels" $sm.honorLabels }}
{{- end }}
{{- $_ := set .from "serviceMonitor" $monitor }}
{{- $pdb := .reloader.podDisruptionBudget | default dict }}
{{- if $pdb.enabled }}
{{- $_ := set $values.podDisruptionBudget "enabled" true }}
{{- end }}
{{- if $pdb.maxUnavailable }}
{{- $_ := set $values.podDisruptionBudget "maxUnavailable" $pdb.maxUnavailable }}
{{- $_ := set $values.podDisruptionBudget "minAvailable" nil }}
{{- else if $pdb.minAvailable }}
{{- $_ := set $values.podDisruptionBudget "minAvailable" $pdb.minAvailable }}
{{- end }}
{{- $netpol := .reloader.netpol | default dict }}
{{- if $netpol.to }}
{{- fail "reloader.netpol.to: Switchboard's NetworkPolicy restricts no egress (Reloader's lets only port 443 out, not even DNS); remove it" }}
{{- end }}
{{- if $netpol.enabled }}
{{- if not $metrics.enabled }}
{{- fail "reloader.netpol.enabled needs metrics.enabled: Switchboard's NetworkPolicy guards the metrics port" }}
{{- end }}
{{- $_ := set $values.networkPolicy "enabled" true }}
{{- $_ := set .from "networkPolicyFrom" ($netpol.from | default (list)) }}
{{- end }}
{{- end }}

{{/* The Reloader values that ask for what Switchboard does not do, at other than their default. */}}
{{- define "switchboard.reloader.refused" -}}
{{- $r := .reloader }}
{{- if $r.enablePProf }}
{{- fail "reloader.enablePProf: not supported: the manager serves no pprof (profiling costs resident memory); remove it" }}
{{- end }}
{{- if $r.isOpenshift }}
{{- fail "reloader.isOpenshift: not supported: Reloader v1.4.21 no longer reloads DeploymentConfigs, nor does Switchboard; remove it" }}
{{- end }}
{{- if ($r.podMonitor | default dict).enabled }}
{{- fail "reloader.podMonitor.enabled: not supported: Switchboard's chart ships a ServiceMonitor; set reloader.serviceMonitor.enabled (or metrics.serviceMonitor.enabled) instead" }}
{{- end }}
{{- if ($r.verticalPodAutoscaler | default dict).enabled }}
{{- fail "reloader.verticalPodAutoscaler.enabled: not supported: remove it; a VerticalScaler of Switchboard's verticalscaler can size the manager's Deployment" }}
{{- end }}
{{- if $r.service }}
{{- fail "reloader.service: Switchboard's chart has its own metrics Service (<fullname>-controller-manager-metrics, HTTPS on metrics.port; metrics.service.enabled); remove it" }}
{{- end }}
{{- end }}

{{/*
The API version of MutatingAdmissionPolicy that the cluster serves, or nothing: v1 from
Kubernetes 1.36; v1beta1 on 1.34 and 1.35 where the MutatingAdmissionPolicy feature gate and the
admissionregistration.k8s.io/v1beta1 API are on. Installed on a cluster, Helm lists the kinds the
cluster serves. `helm template` without a cluster lists no kinds (only what --api-versions adds):
then --kube-version decides, v1 from 1.36 and nothing before.
*/}}
{{- define "switchboard.mutatingAdmissionPolicyAPIVersion" -}}
{{- $api := .Capabilities.APIVersions }}
{{- if $api.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" }}
{{- "admissionregistration.k8s.io/v1" }}
{{- else if $api.Has "admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy" }}
{{- "admissionregistration.k8s.io/v1beta1" }}
{{- else if and (not ($api.Has "v1/ConfigMap")) (semverCompare ">=1.36.0-0" .Capabilities.KubeVersion.Version) }}
{{- "admissionregistration.k8s.io/v1" }}
{{- end }}
{{- end }}
