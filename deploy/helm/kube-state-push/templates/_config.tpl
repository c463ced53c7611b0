{{/*
kube-state-push.remoteWrite: the remoteWrite entries as remote_write, each
without a disk_buffer of its own given one below persistence.mountPath, as a
YAML list.
*/}}
{{- define "kube-state-push.remoteWrite" -}}
{{- if not .Values.remoteWrite -}}
{{- fail "remoteWrite: at least one endpoint is required, e.g. --set 'remoteWrite[0].url=http://prometheus.monitoring.svc:9090/api/v1/write'" -}}
{{- end -}}
{{- $out := list -}}
{{- range $i, $rw := .Values.remoteWrite -}}
{{- if not (kindIs "map" $rw) }}{{ fail (printf "remoteWrite[%d]: an entry of Prometheus' remote_write (url, name, ...), not %v" $i $rw) }}{{ end -}}
{{- if not $rw.url }}{{ fail (printf "remoteWrite[%d]: url is required" $i) }}{{ end -}}
{{- $rw = deepCopy $rw -}}
{{- if not (hasKey $rw "disk_buffer") -}}
{{- $name := $rw.name | default (urlParse $rw.url).host -}}
{{- $_ := set $rw "disk_buffer" (dict "directory" (printf "%s/%s" (trimSuffix "/" $.Values.persistence.mountPath) $name) "max_bytes" (int64 $.Values.persistence.maxBytes)) -}}
{{- end -}}
{{- $out = append $out $rw -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
kube-state-push.bufferSize: the buffer volume's size: persistence.size, or
a quarter above the sum of the endpoints' disk_buffer.max_bytes, in Mi.
*/}}
{{- define "kube-state-push.bufferSize" -}}
{{- if .Values.persistence.size -}}
{{- .Values.persistence.size -}}
{{- else if .Values.existingConfigSecret -}}
{{- fail "persistence.size: required with existingConfigSecret, whose endpoints' max_bytes the chart cannot read" -}}
{{- else -}}
{{- $total := int64 0 -}}
{{- range include "kube-state-push.remoteWrite" . | fromYamlArray -}}
{{- if .disk_buffer.directory -}}
{{- $total = add $total (int64 (.disk_buffer.max_bytes | default 1073741824)) -}}
{{- end -}}
{{- end -}}
{{- $mi := int64 1048576 -}}
{{- printf "%dMi" (div (add (mul $total 5) (sub (mul 4 $mi) 1)) (mul 4 $mi)) -}}
{{- end -}}
{{- end -}}

{{/*
kube-state-push.config: the agent's configuration file. The shapes that
cannot work are refused here, naming the values.
*/}}
{{- define "kube-state-push.config" -}}
{{- if hasKey .Values "podSecurityContext" -}}
{{- fail "podSecurityContext: as in kube-state-metrics' chart, the pod's security context is securityContext, the container's containerSecurityContext" -}}
{{- end -}}
{{- $replicas := int .Values.replicas -}}
{{- if and .Values.autosharding.enabled .Values.leaderElection.enabled -}}
{{- fail "autosharding.enabled and leaderElection.enabled: each shard must push its own part; choose one" -}}
{{- end -}}
{{- if and (gt $replicas 1) (not .Values.autosharding.enabled) (not .Values.leaderElection.enabled) (not (hasKey (.Values.externalLabels | default dict) "__replica__")) -}}
{{- fail (printf "replicas: %d pods would each push every series: set autosharding.enabled, leaderElection.enabled, or externalLabels.__replica__ (e.g. ${POD_NAME}) for a receiver that deduplicates" $replicas) -}}
{{- end -}}
{{- if and .Values.persistence.enabled (gt $replicas 1) (not .Values.autosharding.enabled) -}}
{{- fail "persistence.enabled: a Deployment's replicas cannot share one ReadWriteOnce claim: use replicas 1, or autosharding for a claim per shard" -}}
{{- end -}}
{{- if and .Values.metricAllowlist .Values.metricDenylist -}}
{{- fail "metricAllowlist and metricDenylist exclude each other, as in kube-state-metrics" -}}
{{- end -}}
{{- $cfg := dict -}}
{{- if .Values.customResourceStateOnly -}}
{{- if not .Values.customResourceState.enabled }}{{ fail "customResourceStateOnly: watches custom resources only, and customResourceState.enabled is false: enable it with its config" }}{{ end -}}
{{- if include "kube-state-push.collectors" . | fromYamlArray }}{{ fail "customResourceStateOnly and collectors exclude each other: customResourceStateOnly watches no built-in resource" }}{{ end -}}
{{- if .Values.kubelet.enabled }}{{ fail "customResourceStateOnly: kubelet.enabled finds the kubelets through the nodes watch, and custom resources only watches no built-in resource" }}{{ end -}}
{{- $_ := set $cfg "resources" list -}}
{{- end -}}
{{- with include "kube-state-push.collectors" . | fromYamlArray }}{{ $_ := set $cfg "resources" . }}{{ end -}}
{{- with include "kube-state-push.list" .Values.namespaces | fromYamlArray }}{{ $_ := set $cfg "namespaces" . }}{{ end -}}
{{- with include "kube-state-push.list" .Values.namespacesDenylist | fromYamlArray }}{{ $_ := set $cfg "namespaces_denylist" . }}{{ end -}}
{{- with include "kube-state-push.list" .Values.metricAllowlist | fromYamlArray }}{{ $_ := set $cfg "metric_allowlist" . }}{{ end -}}
{{- with include "kube-state-push.list" .Values.metricDenylist | fromYamlArray }}{{ $_ := set $cfg "metric_denylist" . }}{{ end -}}
{{- with include "kube-state-push.allowlist" (list "metricLabelsAllowlist" .Values.metricLabelsAllowlist) | fromYaml }}{{ $_ := set $cfg "metric_labels_allowlist" . }}{{ end -}}
{{- with include "kube-state-push.allowlist" (list "metricAnnotationsAllowList" .Values.metricAnnotationsAllowList) | fromYaml }}{{ $_ := set $cfg "metric_annotations_allowlist" . }}{{ end -}}
{{- with include "kube-state-push.allowlist" (list "seriesLabelsFromObject" .Values.seriesLabelsFromObject) | fromYaml }}{{ $_ := set $cfg "series_labels_from_object" . }}{{ end -}}
{{- if .Values.autosharding.enabled }}{{ $_ := set $cfg "auto_sharding" true }}{{ end -}}
{{- with .Values.externalLabels }}{{ $_ := set $cfg "external_labels" . }}{{ end -}}
{{- $_ := set $cfg "listen_address" (printf ":%d" (int .Values.service.port)) -}}
{{- if .Values.pull.enabled -}}
{{- $_ := set $cfg "pull" (dict "listen_address" (printf ":%d" (int .Values.pull.port))) -}}
{{- end -}}
{{- $_ := set $cfg "push_self_metrics" (.Values.selfMonitor.enabled | default false) -}}
{{- if .Values.leaderElection.enabled -}}
{{- $le := .Values.leaderElection -}}
{{- $_ := set $cfg "leader_election" (dict "enabled" true "lease_name" ($le.leaseName | default (include "kube-state-push.fullname" .)) "lease_duration" $le.leaseDuration "renew_deadline" $le.renewDeadline "retry_period" $le.retryPeriod) -}}
{{- end -}}
{{- if .Values.customResourceState.enabled -}}
{{- $crs := .Values.customResourceState.config -}}
{{- if kindIs "string" $crs }}{{ $crs = fromYaml $crs }}{{ end -}}
{{- if not $crs }}{{ fail "customResourceState.enabled: customResourceState.config is empty" }}{{ end -}}
{{- $_ := set $cfg "custom_resource_state" $crs -}}
{{- end -}}
{{- if .Values.kubelet.enabled -}}
{{- $mode := include "kube-state-push.kubeletMode" . -}}
{{- if hasKey (.Values.kubelet.config | default dict) "mode" }}{{ fail "kubelet.config.mode: set kubelet.mode, from which the chart also grants the RBAC" }}{{ end -}}
{{- with include "kube-state-push.collectors" . | fromYamlArray -}}
{{- if not (has "nodes" .) }}{{ fail "kubelet.enabled: the kubelets are found through the nodes watch: add nodes to collectors" }}{{ end -}}
{{- end -}}
{{- $kubelet := merge (dict "mode" $mode) (deepCopy (.Values.kubelet.config | default dict)) -}}
{{- if .Values.kubelet.separateIdentity -}}
{{- if ne $mode "direct" }}{{ fail "kubelet.separateIdentity: only mode direct sends a token to the kubelets; mode apiserver reads through the API server with the agent's own" }}{{ end -}}
{{- if hasKey $kubelet "bearer_token_file" }}{{ fail "kubelet.config.bearer_token_file: kubelet.separateIdentity sets it to the second ServiceAccount's token" }}{{ end -}}
{{- $_ := set $kubelet "bearer_token_file" (printf "%s/token" (include "kube-state-push.kubeletTokenDir" .)) -}}
{{- end -}}
{{- $_ := set $cfg "kubelet" $kubelet -}}
{{- end -}}
{{- $_ := set $cfg "remote_write" (include "kube-state-push.remoteWrite" . | fromYamlArray) -}}
{{- range $k, $v := .Values.extraConfig -}}
{{- if hasKey $cfg $k }}{{ fail (printf "extraConfig.%s: the chart sets %s from its own values" $k $k) }}{{ end -}}
{{- $_ := set $cfg $k $v -}}
{{- end -}}
# The agent's configuration, rendered by the kube-state-push chart from its
# values. Every key is documented in the config.yaml at the repository's root.
{{ toYaml $cfg }}
{{- end -}}

{{/* kube-state-push.claimSpec: the buffer claim's spec (ReadWriteOnce: one pod's buffer). */}}
{{- define "kube-state-push.claimSpec" -}}
accessModes: [ReadWriteOnce]
{{- with .Values.persistence.storageClassName }}
storageClassName: {{ . }}
{{- end }}
resources:
  requests:
    storage: {{ include "kube-state-push.bufferSize" . }}
{{- end -}}
