{{- define "ferry.name" -}}
{{- printf "%s-injector" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ferry.labels" -}}
app.kubernetes.io/name: ferry-injector
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ferry.selector" -}}
app.kubernetes.io/name: ferry-injector
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ferry.tlsSecret" -}}
{{- printf "%s-tls" (include "ferry.name" .) -}}
{{- end -}}

{{- define "ferry.injectorImage" -}}
{{- printf "%s:%s" .Values.injector.image.repository (default .Chart.AppVersion .Values.injector.image.tag) -}}
{{- end -}}

{{- define "ferry.initImage" -}}
{{- printf "%s:%s" .Values.sidecar.redirect.initImage.repository (default .Chart.AppVersion .Values.sidecar.redirect.initImage.tag) -}}
{{- end -}}

{{- define "ferry.sidecarImage" -}}
{{- printf "%s:%s" .Values.sidecar.image.repository (default .Chart.AppVersion .Values.sidecar.image.tag) -}}
{{- end -}}

{{- /* Labels of the dashboard ConfigMap and the PrometheusRule: not the injector's objects. */ -}}
{{- define "ferry.monitoringLabels" -}}
app.kubernetes.io/name: ferry-monitoring
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
