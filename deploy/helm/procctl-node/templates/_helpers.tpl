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

{{- /* A Kubernetes memory quantity in bytes (a float), for the rules'
thresholds: a number (a values file's come as floats), or N with a binary
(Ki Mi Gi Ti Pi) or decimal (K M G T P) suffix or none, N a decimal
number; any other form (an exponent, milli) fails the render. */ -}}
{{- define "procctl-node.bytes" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- float64 . -}}
{{- else -}}
{{- $s := toString . -}}
{{- $units := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "Pi" 1125899906842624
  "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "P" 1000000000000000 -}}
{{- $n := regexFind "^[0-9]+(\\.[0-9]+)?" $s -}}
{{- $u := trimPrefix $n $s -}}
{{- if or (not $n) (not (hasKey $units $u)) -}}
{{- fail (printf "resources.limits.memory %q: the rules read a number, or one with Ki, Mi, Gi, Ti, Pi, K, M, G, T or P" $s) -}}
{{- end -}}
{{- mulf (float64 $n) (get $units $u) -}}
{{- end -}}
{{- end }}
