{{/* Object names: fake-driver-kubelet-plugin, ... (fullnameOverride changes the prefix). */}}
{{- define "fakegpu.fullname" -}}
{{- .Values.fullnameOverride | default "fake-driver" | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "fakegpu.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace -}}
{{- end -}}

{{- define "fakegpu.kubeletPlugin" -}}{{ include "fakegpu.fullname" . }}-kubelet-plugin{{- end -}}
{{- define "fakegpu.devicePlugin" -}}{{ include "fakegpu.fullname" . }}-device-plugin{{- end -}}
{{- define "fakegpu.fleet" -}}{{ include "fakegpu.fullname" . }}-fleet{{- end -}}
{{- define "fakegpu.policy" -}}{{ include "fakegpu.fullname" . }}-resourceslices{{- end -}}

{{- define "fakegpu.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
