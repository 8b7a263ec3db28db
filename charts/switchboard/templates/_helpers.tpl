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
{{- default (printf "%s-controller-manager" (include "switchboard.fullname" .)) .Values.serviceAccount.name }}
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
The manager's --controllers: the components on, less the configmapwatcher's kinds off. The kinds
are listed in the controller table's order.
*/}}
{{- define "switchboard.controllersFlag" -}}
{{- $selected := include "switchboard.components" . | fromJsonArray }}
{{- $cmw := .Values.controllers.configmapwatcher }}
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
label; empty when unsharded), its --watch-label-selector and its --leader-elect-resource-name.
*/}}
{{- define "switchboard.managers" -}}
{{- $sharding := .Values.sharding }}
{{- if not $sharding.shards }}
{{- toJson (list (dict "suffix" "" "shard" "" "selector" "" "leases" "")) }}
{{- else }}
{{- $fullname := include "switchboard.fullname" . }}
{{- $managers := list (dict "suffix" "" "shard" "rest" "selector" (printf "%s notin (%s)" $sharding.key (join "," $sharding.shards)) "leases" (printf "%s-rest" $fullname)) }}
{{- range $shard := $sharding.shards }}
{{- $managers = append $managers (dict "suffix" (printf "-%s" $shard) "shard" $shard "selector" (printf "%s=%s" $sharding.key $shard) "leases" (printf "%s-%s" $fullname $shard)) }}
{{- end }}
{{- toJson $managers }}
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
The leader election Leases the managers may hold: each manager's, and one per component; a shard
names its own (--leader-elect-resource-name).
*/}}
{{- define "switchboard.leases" -}}
{{- $leases := list }}
{{- $components := include "switchboard.components" . | fromJsonArray }}
{{- range $m := include "switchboard.managers" . | fromJsonArray }}
{{- $lease := "switchboard.app.example.com" }}
{{- $prefix := "switchboard-" }}
{{- if $m.leases }}
{{- $lease = $m.leases }}
{{- $prefix = printf "%s-" $m.leases }}
{{- end }}
{{- $leases = append $leases $lease }}
{{- range $name := $components }}
{{- $leases = append $leases (printf "%s%s" $prefix $name) }}
{{- end }}
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
Where the configmapwatcher's webhook URL comes from, when a Secret holds it: the container's
environment variable, which the args name as $(SWITCHBOARD_WEBHOOK_URL) for the kubelet to expand.
Empty when the URL is a value, or there is none.
*/}}
{{- define "switchboard.webhookURLVariable" -}}
{{- $cmw := .Values.controllers.configmapwatcher }}
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
