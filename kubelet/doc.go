// Package kubelet reads the kubelets' own endpoints (/metrics/cadvisor by
// default; /metrics/resource and /metrics on request) for node and container
// usage, the part of dashboard 13105 that object state cannot give.
//
// Data moves like this: the agent's node reflector tells a [Source] which
// nodes exist (Upsert, Delete, Replace; with sharding only the nodes this
// replica owns). Every interval the Source reads each node's paths, at most
// Config.Concurrency at once and each within Config.Timeout, either directly
// (https://<node address>:<kubelet port>, the token sent only where the
// kubelet's certificate verifies) or through the API server's node proxy.
// A body is not trusted: it is read up to body_size_limit, parsed with
// Prometheus' own text parser under Prometheus' sample and label limits,
// confined to the kubelet's families (never kube_*) and to a window of
// timestamps around the read, filtered (per-path allowlist or denylist,
// and by default k8s-monitoring's drop of empty container/image
// duplicates), labelled as kube-prometheus-stack's kubelet job labels it
// (the agent's own labels winning over the body's), and handed, with the
// samples' own timestamps, to a
// [Store]: the agent's series map, so that the series travel through the
// same snapshots and queues as the state series, and a series that
// disappears, or a node that goes away, gets a staleness marker.
//
// A read never blocks another node's, nor the snapshot, which only reads
// the store.
package kubelet
