// Package agent wires the stages together and runs them.
//
// New takes a loaded configuration (package config). For each configured
// resource it starts a client-go reflector (package watch) whose store is a
// seriesMap: every event renders the object into encode-ready series, kept
// by object UID; objects themselves are never kept, not even by the
// reflector's own store of a streaming list (watch-list), which the
// seriesMap's transformer renders into as the objects arrive. A ticker
// snapshots all series maps with one timestamp per tick, copying references
// out under each map's lock, into one frame (queue.Frame): the series sets
// plus a staleness marker for every series that ended. It offers that same
// frame to every remote_write endpoint (queue.Endpoint.Offer), which never
// blocks; each endpoint buffers, relabels and sends it on its own (package
// queue).
//
//	reflector ─► seriesMap ─(tick)─► snapshotter ─► frame ─Offer─► queue.Endpoint ─► HTTP
//	                 │                                    └─Offer─► queue.Endpoint ─► HTTP
//	                 └─(scrape)─► pull.Handler
//
// The same maps serve the pull page (package pull) through pull.Source.
// With leader election (package leader) every replica watches but only the
// leader's snapshots reach the endpoints. The agent also serves its own
// metrics, /healthz and /readyz, applies reloads between snapshots, and
// stops in two phases: stop watching and take a final snapshot, then flush
// the endpoints within shutdown_timeout, after which what is left is
// counted as dropped (or stays in the disk buffer).
package agent
