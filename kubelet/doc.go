// Package kubelet reads the kubelets' own endpoints (/metrics/cadvisor by
// default; /metrics/resource and /metrics on request) for node and container
// usage, the part of dashboard 13105 that object state cannot give.
//
// Data moves like this: the agent's node reflector tells a [Source] which
// nodes exist (Upsert, Delete, Replace; with sharding only the nodes this
// replica owns). Every interval the Source reads each node's paths, at most
// Config.Concurrency at once and each within Config.Timeout, either directly
// (https://<InternalIP>:<kubelet port>) or through the API server's node
// proxy. Each body is parsed with Prometheus' own text parser, filtered
// (per-path allowlist or denylist, and by default k8s-monitoring's drop of
// empty container/image duplicates), labelled as kube-prometheus-stack's
// kubelet job labels it, and handed, with the samples' own timestamps, to a
// [Store]: the agent's series map, so that the series travel through the
// same snapshots and queues as the state series, and a series that
// disappears, or a node that goes away, gets a staleness marker.
//
// A read never blocks another node's, nor the snapshot, which only reads
// the store.
package kubelet
