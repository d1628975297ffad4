{{- define "gieok.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gieok.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gieok.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gieok.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "gieok.secretName" -}}
{{- if .Values.secrets.create -}}
{{ include "gieok.fullname" . }}
{{- else -}}
{{ required "secrets.existingSecret is required when secrets.create is false" .Values.secrets.existingSecret }}
{{- end -}}
{{- end -}}

{{/* The pod spec parts servers and workers share: non-root, read-only root, secrets as files. */}}
{{- define "gieok.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  fsGroup: 10001
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

{{- define "gieok.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end -}}

{{- define "gieok.volumes" -}}
volumes:
  - name: secrets
    secret:
      secretName: {{ include "gieok.secretName" . }}
  - name: data
    emptyDir: {}
  - name: tmp
    emptyDir: {}
{{- end -}}

{{- define "gieok.volumeMounts" -}}
volumeMounts:
  - name: secrets
    mountPath: /run/secrets
    readOnly: true
  - name: data
    mountPath: /data
  - name: tmp
    mountPath: /tmp
{{- end -}}
