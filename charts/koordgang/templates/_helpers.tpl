{{- define "koordgang.labels" -}}
app.kubernetes.io/name: koordgang
app.kubernetes.io/part-of: koordgang
app.kubernetes.io/component: scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "koordgang.selector" -}}
app.kubernetes.io/name: koordgang
app.kubernetes.io/component: scheduler
{{- end }}
