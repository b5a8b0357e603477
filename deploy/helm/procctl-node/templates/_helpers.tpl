{{- /* SPDX-License-Identifier: Apache-2.0 */ -}}
{{/* The chart's name, and the name of everything it makes. */}}
{{- define "procctl-node.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "procctl-node.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "procctl-node.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "procctl-node.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "procctl-node.selectorLabels" -}}
app.kubernetes.io/name: {{ include "procctl-node.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "procctl-node.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "procctl-node.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "procctl-node.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "procctl-node.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "procctl-node.configMapName" -}}
{{- default (include "procctl-node.fullname" .) .Values.existingConfigMap }}
{{- end }}

{{- define "procctl-node.socket" -}}
{{- printf "%s/%s" .Values.hostPaths.socketDir .Values.grpc.socketName }}
{{- end }}
