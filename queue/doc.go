// Package queue delivers snapshots to one Remote-Write endpoint: an
// [Endpoint] takes frames, buffers them in memory or on disk, relabels and
// batches their samples, and sends them with retries.
//
// The agent offers each snapshot as a [Frame], shared by every endpoint,
// through [Endpoint.Offer], which never blocks; whether memory or disk took
// it is the endpoint's business. The endpoint's feed (feed.go) hands each
// frame's samples (expander.go), through the endpoint's
// write_relabel_configs (relabel.go), to its shards; each sample goes to
// the shard chosen by the hash of its labels, so every series travels
// through one shard and keeps its order. A shard holds samples in its ring
// (ring.go), batches up to max_samples_per_send of them (or what it has at
// batch_send_deadline), encodes them with package encode and sends them
// serially through a [go-retryablehttp] client (deliver.go, client.go):
//
//	Offer ─► feed ─► relabel ─hash % n─► shard ring ─batch─► encode ─► POST (retry 5xx, network, 429
//	          │                                                        │    until Stop or max_retry_duration)
//	          └─(disk_buffer) write ─► disk buffer ─► replay ─► relabel ├─► 413: split in half, resend each
//	                                                                   ├─► 400, 409: split until the refused
//	                                                                   │   series are alone (refused.go)
//	                                                                   └─► drop + count other 4xx
//
// The feed keeps a bounded number of frames waiting; when the shards fall
// behind, the oldest frame is dropped whole (queue_full) and its staleness
// markers go with the next one. With disk_buffer (diskbuffer.go) the feed
// writes every frame to the disk buffer instead (package queue/diskbuffer:
// each frame as its difference from the one before, fsynced), and replays
// it to the shards, oldest first or (backfill: newest_first) the newest
// ahead of the backlog; a frame is acknowledged once every shard has
// settled its samples, so a restart sends again only the frames in flight.
// With backfill_resolution the replayer thins an old backlog to a frame in
// full per step plus every change of each series (thin.go).
//
// The HTTP client is prometheus/common's, built from http_config
// (httpclient.go); sigv4, azuread and google_iam wrap it as Prometheus does
// (managed.go). The relabeler also enforces series_limits (limits.go).
// Samples past sample_age_limit are dropped as too_old
// (sampleage.go). The number of shards follows the load between min_shards
// and max_shards (reshard.go, after Prometheus' queue manager); a change
// starts a new generation of shards (shards.go) that sends nothing until
// the old one has sent all it holds.
//
// The queue never imports package watch: it only knows encoded samples.
//
// [go-retryablehttp]: https://github.com/hashicorp/go-retryablehttp
package queue
