{{/* The name of every object: the release name, with "schemaops" added unless it is already in it. */}}
{{- define "schemaops.fullname" -}}
{{- if contains "schemaops" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-schemaops" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "schemaops.labels" -}}
app.kubernetes.io/name: schemaops
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "schemaops.selectorLabels" -}}
app.kubernetes.io/name: schemaops
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "schemaops.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "schemaops.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The webhook's Service, also the name its certificate is issued for. */}}
{{- define "schemaops.webhookName" -}}
{{- printf "%s-webhook" (include "schemaops.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "schemaops.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "schemaops.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fails the render on combinations values.schema.json cannot express clearly. */}}
{{- define "schemaops.checks" -}}
{{- if and (gt (int .Values.replicas) 1) (ne .Values.store.type "postgres") -}}
{{- fail "replicas > 1 needs store.type=postgres: one SQLite file cannot be shared by several pods" -}}
{{- end -}}
{{- end -}}
