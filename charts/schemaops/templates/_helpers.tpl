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

{{/* The Secret holding the registry API's credential files: the user's, or the generated one. */}}
{{- define "schemaops.apiCredentialsSecret" -}}
{{- if .Values.registryApi.auth.existingSecret -}}
{{- .Values.registryApi.auth.existingSecret -}}
{{- else -}}
{{- printf "%s-api-credentials" (include "schemaops.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The registry API's credential files, as YAML "file: key" (file under /etc/schemaops/api, key in
the Secret); empty with an external registry, where the operator serves no REST API.
*/}}
{{- define "schemaops.apiCredentialFiles" -}}
{{- if not .Values.registry.external.url -}}
{{- $auth := .Values.registryApi.auth -}}
{{- $files := dict -}}
{{- if $auth.adminKey -}}{{- $_ := set $files "admin" $auth.adminKey -}}{{- end -}}
{{- if and $auth.existingSecret $auth.writeKey -}}{{- $_ := set $files "write" $auth.writeKey -}}{{- end -}}
{{- if and $auth.existingSecret $auth.readKey -}}{{- $_ := set $files "read" $auth.readKey -}}{{- end -}}
{{- with $files -}}{{- toYaml . -}}{{- end -}}
{{- end -}}
{{- end -}}

{{/* The security context without the fixed IDs that OpenShift's restricted-v2 SCC assigns itself. */}}
{{- define "schemaops.securityContext" -}}
{{- $context := .context -}}
{{- if .openshift -}}
{{- $context = omit $context "runAsUser" "runAsGroup" "fsGroup" -}}
{{- end -}}
{{- toYaml $context -}}
{{- end -}}

{{/* Fails the render on combinations values.schema.json cannot express clearly. */}}
{{- define "schemaops.checks" -}}
{{- if and (gt (int .Values.replicas) 1) (ne .Values.store.type "postgres") -}}
{{- fail "replicas > 1 needs store.type=postgres: one SQLite file cannot be shared by several pods" -}}
{{- end -}}
{{- $api := .Values.registryApi -}}
{{- if and (eq $api.writes "open") (not .Values.registry.external.url) (not (and $api.auth.existingSecret $api.auth.writeKey)) -}}
{{- fail "registryApi.writes=open needs registryApi.auth.existingSecret and registryApi.auth.writeKey (a Secret key holding write credentials): no install may serve unauthenticated writes" -}}
{{- end -}}
{{- if and (or $api.auth.writeKey $api.auth.readKey) (not $api.auth.existingSecret) -}}
{{- fail "registryApi.auth.writeKey and registryApi.auth.readKey name keys of registryApi.auth.existingSecret: set registryApi.auth.existingSecret too" -}}
{{- end -}}
{{- end -}}
