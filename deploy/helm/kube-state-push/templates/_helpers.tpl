{{/* Names and labels, as kube-state-metrics' chart makes them. */}}

{{- define "kube-state-push.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the release name alone when it holds the chart's. */}}
{{- define "kube-state-push.fullname" -}}
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

{{- define "kube-state-push.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kube-state-push.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kube-state-push.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kube-state-push.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kube-state-push.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{ include "kube-state-push.selectorLabels" . }}
{{- end -}}

{{- define "kube-state-push.image" -}}
{{- $repo := .Values.image.repository -}}
{{- with .Values.image.registry }}{{ $repo = printf "%s/%s" . $repo }}{{ end -}}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
kube-state-push.list: a list of strings from a YAML list or a comma-separated
string (as kube-state-metrics' chart takes namespaces), trimmed, empty ones
dropped; as a YAML list.
*/}}
{{- define "kube-state-push.list" -}}
{{- $in := . | default list -}}
{{- if kindIs "string" $in }}{{ $in = splitList "," $in }}{{ end -}}
{{- $out := list -}}
{{- range $in }}{{ with trim (toString .) }}{{ $out = append $out . }}{{ end }}{{ end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
kube-state-push.allowlist: metricLabelsAllowlist or
metricAnnotationsAllowList as the configuration's map of resource to keys.
Input: (list key value). The value is kube-state-metrics' shape, a list of
(or one comma-separated string of) "resource=[key,...]" entries, or the map
itself.
*/}}
{{- define "kube-state-push.allowlist" -}}
{{- $key := index . 0 -}}
{{- $in := index . 1 | default list -}}
{{- $out := dict -}}
{{- if kindIs "map" $in -}}
{{- $out = $in -}}
{{- else -}}
{{- if kindIs "string" $in }}{{ $in = list $in }}{{ end -}}
{{- $s := join "," $in -}}
{{- $entry := `\s*([^,=\[\]\s]+)\s*=\s*\[([^\]]*)\]\s*` -}}
{{- if not (regexMatch (printf `^(%s(,%s)*)?$` $entry $entry) $s) -}}
{{- fail (printf "%s: cannot read %q: want entries resource=[key,...], e.g. pods=[app,team]" $key $s) -}}
{{- end -}}
{{- range regexFindAll `[^,=\[\]\s]+\s*=\s*\[[^\]]*\]` $s -1 -}}
{{- $res := regexReplaceAll `^([^=\s]+)\s*=.*$` . "${1}" -}}
{{- $keys := include "kube-state-push.list" (regexReplaceAll `^[^\[]*\[(.*)\]$` . "${1}") | fromYamlArray -}}
{{- $_ := set $out $res (concat (get $out $res | default list) $keys) -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
kube-state-push.monitorEndpoint: one endpoint of the ServiceMonitor, for
port: each key from block (prometheus.monitor.http or .metrics), else from
monitor (prometheus.monitor itself); scheme https with webConfig.tls (tls).
As in kube-state-metrics' chart, a false or empty key is left out.
*/}}
{{- define "kube-state-push.monitorEndpoint" -}}
{{- $block := .block | default dict -}}
{{- $s := dict -}}
{{- range $k := list "interval" "scrapeTimeout" "proxyUrl" "enableHttp2" "honorLabels" "metricRelabelings" "relabelings" "scheme" "bearerTokenFile" "bearerTokenSecret" "tlsConfig" }}
{{- $_ := set $s $k (get $block $k | default (get $.monitor $k)) }}
{{- end }}
{{- if and .tls (not $s.scheme) }}{{ $_ := set $s "scheme" "https" }}{{ end -}}
- port: {{ .port }}
  {{- range $k := list "interval" "scrapeTimeout" "proxyUrl" "scheme" "bearerTokenFile" }}
  {{- with get $s $k }}
  {{ $k }}: {{ . | quote }}
  {{- end }}
  {{- end }}
  {{- if $s.enableHttp2 }}
  enableHttp2: true
  {{- end }}
  {{- if $s.honorLabels }}
  honorLabels: true
  {{- end }}
  {{- range $k := list "bearerTokenSecret" "tlsConfig" "relabelings" "metricRelabelings" }}
  {{- with get $s $k }}
  {{ $k }}:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
{{- end -}}
