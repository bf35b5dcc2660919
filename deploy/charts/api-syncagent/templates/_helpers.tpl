{{/*
Full name of the release's objects: fullnameOverride, else the release name
when it already contains the chart name, else <release>-<chart name>.
*/}}
{{- define "api-syncagent.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The metrics Service's name, which is also the job of its metrics:
"<fullname>-metrics", the full name cut so that it fits a Service name
(63 characters). */}}
{{- define "api-syncagent.metricsService" -}}
{{- printf "%s-metrics" (include "api-syncagent.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{/* The agent's namespace: namespaceOverride or the release namespace. */}}
{{- define "api-syncagent.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{/* The agent name (--agent-name): agentName or the release name. */}}
{{- define "api-syncagent.agentName" -}}
{{- default .Release.Name .Values.agentName -}}
{{- end -}}

{{/* The image tag: image.tag or the chart's appVersion. */}}
{{- define "api-syncagent.version" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{/*
The agent's image: pinned by image.digest when set (the tag is then left
out: the digest alone names what runs), else repository:tag.
*/}}
{{- define "api-syncagent.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (include "api-syncagent.version" .) -}}
{{- end -}}
{{- end -}}

{{/*
Selector labels. They are those of the reference chart and must not change:
a Deployment's selector is immutable.
*/}}
{{- define "api-syncagent.selectorLabels" -}}
app.kubernetes.io/name: kcp-api-syncagent
app.kubernetes.io/instance: {{ include "api-syncagent.agentName" . | quote }}
{{- with .Values.partition }}
syncagent.kcp.io/partition: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Labels of every object: extraLabels, overridden by the chart's own. */}}
{{- define "api-syncagent.labels" -}}
{{- $own := dict
  "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-")
  "app.kubernetes.io/name" "kcp-api-syncagent"
  "app.kubernetes.io/instance" (include "api-syncagent.agentName" .)
  "app.kubernetes.io/version" (include "api-syncagent.version" . | trunc 63)
  "app.kubernetes.io/managed-by" .Release.Service -}}
{{- with .Values.partition }}
{{- $_ := set $own "syncagent.kcp.io/partition" . }}
{{- end }}
{{- toYaml (merge $own (deepCopy (.Values.extraLabels | default dict))) -}}
{{- end -}}

{{/* Labels of the Pods: selector labels, version and extraLabels. */}}
{{- define "api-syncagent.podLabels" -}}
{{- $own := dict
  "app.kubernetes.io/name" "kcp-api-syncagent"
  "app.kubernetes.io/instance" (include "api-syncagent.agentName" .)
  "app.kubernetes.io/version" (include "api-syncagent.version" . | trunc 63) -}}
{{- with .Values.partition }}
{{- $_ := set $own "syncagent.kcp.io/partition" . }}
{{- end }}
{{- toYaml (merge $own (deepCopy (.Values.extraLabels | default dict))) -}}
{{- end -}}

{{/* Name of the ServiceAccount the agent runs as. */}}
{{- define "api-syncagent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "api-syncagent.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The subject list of every binding: the agent's ServiceAccount. */}}
{{- define "api-syncagent.subjects" -}}
- kind: ServiceAccount
  name: {{ include "api-syncagent.serviceAccountName" . | quote }}
  namespace: {{ include "api-syncagent.namespace" . | quote }}
{{- end -}}

{{/* Metadata lines shared by the RBAC objects: labels and `annotations`. */}}
{{- define "api-syncagent.rbacMeta" -}}
labels:
  {{- include "api-syncagent.labels" . | nindent 2 }}
{{- with .Values.annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Image pull secrets: names or {name: ...} objects. */}}
{{- define "api-syncagent.imagePullSecrets" -}}
{{- range .Values.global.imagePullSecrets }}
{{- if kindIs "map" . }}
- {{ toYaml . | trim }}
{{- else }}
- name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The kcp-side reference flag; one of the two values is required. */}}
{{- define "api-syncagent.refFlag" -}}
{{- if .Values.apiExportEndpointSliceName -}}
--apiexportendpointslice-ref={{ .Values.apiExportEndpointSliceName }}
{{- else if .Values.apiExportName -}}
--apiexport-ref={{ .Values.apiExportName }}
{{- else -}}
{{- fail "either apiExportEndpointSliceName or apiExportName must be set" -}}
{{- end -}}
{{- end -}}

{{/*
The value an extraFlags entry gives a flag (the last one wins, as in the
agent), in both spellings: "--flag=value" and "--flag", "value". Prefixed
with "=" so that an empty value differs from "not set" (the empty string).
Takes (list "--flag" .).
*/}}
{{- define "api-syncagent.extraFlagValue" -}}
{{- $flag := index . 0 -}}
{{- $flags := (index . 1).Values.extraFlags | default list -}}
{{- $found := "" -}}
{{- range $i, $f := $flags -}}
{{- $f = toString $f -}}
{{- if hasPrefix (printf "%s=" $flag) $f -}}
{{- $found = printf "=%s" (trimPrefix (printf "%s=" $flag) $f) -}}
{{- else if and (eq $f $flag) (lt (add1 $i) (len $flags)) -}}
{{- $found = printf "=%s" (toString (index $flags (add1 $i))) -}}
{{- end -}}
{{- end -}}
{{- $found -}}
{{- end -}}

{{/*
The port of a listener (health or metrics) after extraFlags: the chart's
port, the port an extraFlags entry moves it to ("--metrics-address=:9090",
as reference values files set it), "off" when the listener is off (the
chart's switch, or an entry "0" or ""), or "local" when an entry binds it
to a host (such as the reference's default 127.0.0.1:8085) that the
kubelet's probes and a Service cannot reach. Takes (list "--flag" enabled
port .).
*/}}
{{- define "api-syncagent.listenerPort" -}}
{{- $flag := index . 0 -}}
{{- $value := include "api-syncagent.extraFlagValue" (list $flag (index . 3)) -}}
{{- if not $value -}}
{{- ternary (index . 2 | toString) "off" (index . 1) -}}
{{- else -}}
{{- $addr := trimPrefix "=" $value -}}
{{- if or (eq $addr "") (eq $addr "0") -}}
off
{{- else if regexMatch "^(0\\.0\\.0\\.0|\\[::\\])?:[0-9]+$" $addr -}}
{{- regexReplaceAll "^.*:" $addr "" -}}
{{- else -}}
local
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Whether a listener port (from api-syncagent.listenerPort) is reachable from outside the Pod. */}}
{{- define "api-syncagent.exposed" -}}
{{- if not (has . (list "off" "local")) -}}true{{- end -}}
{{- end -}}

{{/* The health listener's port, "off" or "local". */}}
{{- define "api-syncagent.healthPort" -}}
{{- include "api-syncagent.listenerPort" (list "--health-address" true .Values.health.port .) -}}
{{- end -}}

{{/* The metrics listener's port, "off" or "local". */}}
{{- define "api-syncagent.metricsPort" -}}
{{- include "api-syncagent.listenerPort" (list "--metrics-address" .Values.metrics.enabled .Values.metrics.port .) -}}
{{- end -}}
