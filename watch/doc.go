// Package watch turns Kubernetes objects into kube-state-metrics series.
//
// Each resource lives in its own file (pod.go, node.go, ...) as a declarative
// list of [Family] generators, each a small function from one object to the
// series of one metric family. A [Resource] ties a resource's families to its
// list/watch, the identity labels its series carry, and a [Renderer] that
// renders a whole object into an encode-ready encode.SeriesSet.
//
// Data flows one way:
//
//	client-go Reflector ──(object)──► ReflectorStore (supplied by the caller)
//	                                     │ Renderer.Render(object)
//	                                     ▼
//	                       encode.SeriesSet (labels as protobuf bytes)
//
// The package keeps no objects: the store it writes to (the agent's series
// map) keeps only the rendered series, keyed by object UID, the same design as
// kube-state-metrics' metrics store. Reflectors are started by [Start] with no
// informer cache, so each object is held only while it is being rendered.
package watch
