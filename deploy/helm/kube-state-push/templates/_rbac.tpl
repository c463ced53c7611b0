{{/*
kube-state-push.resources: every resource the agent can watch, by
kube-state-metrics' name, with its API group and whether it is namespaced.
deploy/chart_test.go checks this table against the agent's own (watch.All).
*/}}
{{- define "kube-state-push.resources" -}}
certificatesigningrequests: {group: certificates.k8s.io, namespaced: false}
clusterrolebindings: {group: rbac.authorization.k8s.io, namespaced: false}
clusterroles: {group: rbac.authorization.k8s.io, namespaced: false}
configmaps: {group: "", namespaced: true}
cronjobs: {group: batch, namespaced: true}
daemonsets: {group: apps, namespaced: true}
deployments: {group: apps, namespaced: true}
endpoints: {group: "", namespaced: true}
endpointslices: {group: discovery.k8s.io, namespaced: true}
horizontalpodautoscalers: {group: autoscaling, namespaced: true}
ingressclasses: {group: networking.k8s.io, namespaced: false}
ingresses: {group: networking.k8s.io, namespaced: true}
jobs: {group: batch, namespaced: true}
leases: {group: coordination.k8s.io, namespaced: true}
limitranges: {group: "", namespaced: true}
mutatingadmissionpolicies: {group: admissionregistration.k8s.io, namespaced: false}
mutatingadmissionpolicybindings: {group: admissionregistration.k8s.io, namespaced: false}
mutatingwebhookconfigurations: {group: admissionregistration.k8s.io, namespaced: false}
namespaces: {group: "", namespaced: false}
networkpolicies: {group: networking.k8s.io, namespaced: true}
nodes: {group: "", namespaced: false}
persistentvolumeclaims: {group: "", namespaced: true}
persistentvolumes: {group: "", namespaced: false}
poddisruptionbudgets: {group: policy, namespaced: true}
pods: {group: "", namespaced: true}
replicasets: {group: apps, namespaced: true}
replicationcontrollers: {group: "", namespaced: true}
resourcequotas: {group: "", namespaced: true}
rolebindings: {group: rbac.authorization.k8s.io, namespaced: true}
roles: {group: rbac.authorization.k8s.io, namespaced: true}
secrets: {group: "", namespaced: true}
serviceaccounts: {group: "", namespaced: true}
services: {group: "", namespaced: true}
statefulsets: {group: apps, namespaced: true}
storageclasses: {group: storage.k8s.io, namespaced: false}
validatingadmissionpolicies: {group: admissionregistration.k8s.io, namespaced: false}
validatingadmissionpolicybindings: {group: admissionregistration.k8s.io, namespaced: false}
validatingwebhookconfigurations: {group: admissionregistration.k8s.io, namespaced: false}
volumeattachments: {group: storage.k8s.io, namespaced: false}
{{- end -}}

{{/* kube-state-push.collectors: the collectors value as a YAML list, each known. */}}
{{- define "kube-state-push.collectors" -}}
{{- $table := include "kube-state-push.resources" . | fromYaml -}}
{{- $names := include "kube-state-push.list" .Values.collectors | fromYamlArray -}}
{{- range $names -}}
{{- if not (hasKey $table .) -}}
{{- fail (printf "collectors: unknown resource %q; known: %s" . (keys $table | sortAlpha | join ", ")) -}}
{{- end -}}
{{- end -}}
{{- toYaml ($names | uniq) -}}
{{- end -}}

{{/*
kube-state-push.rules: list and watch on the collectors (the agent never
gets one object of them), one rule per API group in the order of
deploy/base/clusterrole.yaml (groups and resources sorted); on all the
agent can watch when collectors is empty, as deploy/base grants; on none
with customResourceStateOnly. Then list and watch on CRDs for
customResourceState, get on the kubelet subresource its mode reads (unless
kubelet.separateIdentity gives that grant to a second ServiceAccount), and
rbac.extraRules.
*/}}
{{- define "kube-state-push.rules" -}}
{{- $table := include "kube-state-push.resources" . | fromYaml -}}
{{- $names := include "kube-state-push.collectors" . | fromYamlArray -}}
{{- if and (not $names) (not .Values.customResourceStateOnly) }}{{ $names = keys $table }}{{ end -}}
{{- $groups := dict -}}
{{- range $names -}}
{{- $g := (get $table .).group -}}
{{- $_ := set $groups $g (append (get $groups $g | default list) .) -}}
{{- end -}}
{{- range $g := keys $groups | sortAlpha }}
- apiGroups: [{{ $g | quote }}]
  resources: {{ get $groups $g | sortAlpha | toJson }}
  verbs: [list, watch]
{{- end }}
{{- if .Values.customResourceState.enabled }}
# custom_resource_state: the agent watches the CRDs for the configured kinds
# (as kube-state-metrics does); list and watch on the kinds themselves go in
# rbac.extraRules.
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: [list, watch]
{{- end }}
{{- if .Values.kubelet.enabled }}
{{- if eq (include "kube-state-push.kubeletMode" .) "apiserver" }}
# kubelet, apiserver mode: the agent reads the kubelets' metrics through the
# API server's node proxy. get on nodes/proxy allows running commands in
# every container of every node (exec over a WebSocket is a GET): granted
# only because kubelet.allowNodesProxyWhichAllowsExec says so.
- apiGroups: [""]
  resources: [nodes/proxy]
  verbs: [get]
{{- else if not .Values.kubelet.separateIdentity }}
# kubelet, direct mode: each kubelet asks the API server whether the agent
# may get nodes/metrics, which reaches the metrics endpoints only.
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
{{- end }}
{{- end }}
{{- with .Values.rbac.extraRules }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
kube-state-push.roleNamespaces: with rbac.useClusterRole false, the
namespaces that get a Role, after checking that Roles can grant what is
watched: namespaces set, no cluster-scoped collector, no
customResourceState (which watches CRDs).
*/}}
{{- define "kube-state-push.roleNamespaces" -}}
{{- $table := include "kube-state-push.resources" . | fromYaml -}}
{{- $namespaces := include "kube-state-push.list" .Values.namespaces | fromYamlArray -}}
{{- if not $namespaces -}}
{{- fail "rbac.useClusterRole: false grants Roles in the namespaces listed in namespaces, which is empty" -}}
{{- end -}}
{{- if .Values.customResourceState.enabled -}}
{{- fail "rbac.useClusterRole: false cannot grant customResourceState the list and watch on CustomResourceDefinitions (cluster-scoped) it needs" -}}
{{- end -}}
{{- $names := include "kube-state-push.collectors" . | fromYamlArray -}}
{{- if not $names -}}
{{- fail "rbac.useClusterRole: false cannot grant the default collectors, some of which are cluster-scoped (nodes, namespaces, ...): list namespaced collectors" -}}
{{- end -}}
{{- $cluster := list -}}
{{- range $names }}{{ if not (get $table .).namespaced }}{{ $cluster = append $cluster . }}{{ end }}{{ end -}}
{{- if $cluster -}}
{{- fail (printf "rbac.useClusterRole: false grants Roles in namespaces only, which cannot cover the cluster-scoped collectors %s" (join ", " $cluster)) -}}
{{- end -}}
{{- toYaml $namespaces -}}
{{- end -}}

{{/*
kube-state-push.kubeletMode: kubelet.mode, refused when it is apiserver
without kubelet.allowNodesProxyWhichAllowsExec, whose grant allows exec.
*/}}
{{- define "kube-state-push.kubeletMode" -}}
{{- $mode := .Values.kubelet.mode | default "direct" -}}
{{- if not (has $mode (list "direct" "apiserver")) }}{{ fail (printf "kubelet.mode: direct or apiserver, not %q" $mode) }}{{ end -}}
{{- if and (eq $mode "apiserver") (not .Values.kubelet.allowNodesProxyWhichAllowsExec) -}}
{{- fail "kubelet.mode: apiserver needs get on nodes/proxy, which allows running commands in every container of every node: use mode direct (get on nodes/metrics), or set kubelet.allowNodesProxyWhichAllowsExec: true" -}}
{{- end -}}
{{- $mode -}}
{{- end -}}


{{/*
kube-state-push.kubeletIdentity: with kubelet.separateIdentity, the name of
the second ServiceAccount (also of its token Secret, ClusterRole and
binding, with suffixes), whose token the agent sends to the kubelets.
*/}}
{{- define "kube-state-push.kubeletIdentity" -}}
{{- printf "%s-kubelet" (include "kube-state-push.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* kube-state-push.kubeletTokenDir: where the second ServiceAccount's token Secret is mounted. */}}
{{- define "kube-state-push.kubeletTokenDir" -}}
/var/run/secrets/kubelet-reader
{{- end -}}
