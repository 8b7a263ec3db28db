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

{{/* The manager's --controllers: the components on, less the configmapwatcher's kinds off. */}}
{{- define "switchboard.controllersFlag" -}}
{{- $selected := include "switchboard.components" . | fromJsonArray }}
{{- $cmw := .Values.controllers.configmapwatcher }}
{{- if $cmw.enabled }}
{{- $off := list }}
{{- range $kind := list "deployments" "statefulsets" "daemonsets" "cronjobs" }}
{{- if not (index $cmw.kinds $kind) }}
{{- $off = append $off (printf "-configmapwatcher-%s" $kind) }}
{{- end }}
{{- end }}
{{- if eq (len $off) 4 }}
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

{{/* The leader election Leases the manager may hold: the manager's, and one per component. */}}
{{- define "switchboard.leases" -}}
{{- $leases := list "switchboard.app.example.com" }}
{{- range $name := include "switchboard.components" . | fromJsonArray }}
{{- $leases = append $leases (printf "switchboard-%s" $name) }}
{{- end }}
{{- toJson $leases }}
{{- end }}
