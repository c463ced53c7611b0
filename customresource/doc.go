// Package customresource renders custom resources as kube-state-metrics'
// Custom Resource State metrics do (--custom-resource-state-config-file):
// the same document, the same series, HELP and types.
//
// A Config holds the CustomResourceStateMetrics document (config.go),
// checked key by key and compiled once (compile.go: paths, labels, metric
// types). Discovery watches the CRDs (discovery.go); Resolve turns the
// configured kinds that CRDs serve into watch.Resources (resolve.go), which
// the agent watches with the dynamic client like any built-in resource:
// each event decodes an object into unstructured form and renders it once
// (render.go, values.go) through the watch package's Emitter into the same
// encode-ready series, series maps and queues. Filters, sharding,
// relabeling, staleness and reloads therefore apply unchanged.
//
// Extensions of kube-state-push's own, which a document written for
// kube-state-metrics never sets (it has no such keys): a resource's
// labelSelector (kube-state-metrics #2348); a gauge's constant value (#1762),
// labelsFromKeys for nested maps (#2589) and valueType: duration (#2625).
package customresource
