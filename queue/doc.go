// Package queue delivers encoded samples to one Remote-Write endpoint.
//
// An [Endpoint] owns a set of shards. [Endpoint.Append] routes each sample to
// the shard chosen by the hash of its labels, so every series always travels
// in one lane and keeps its order. Each shard batches up to
// max_samples_per_send samples (or what it has at batch_send_deadline),
// encodes them with package encode into one snappy-compressed
// prompb.WriteRequest, and sends it serially through a [go-retryablehttp]
// client:
//
//	Append ──hash % n──► shard ring ──batch──► encode ──► POST (retry 5xx, network, 429
//	                                                     │    until Stop or max_retry_duration)
//	                                                     ├─► 413: split in half, resend each
//	                                                     └─► drop + count other 4xx
//
// The HTTP client is prometheus/common's, built from the endpoint's
// http_config keys (httpclient.go). For the managed receivers, Prometheus'
// own round trippers wrap it in Prometheus' order (managed.go): sigv4
// (github.com/prometheus/sigv4) signs each try as it is sent, azuread and
// google_iam (Prometheus' storage/remote packages) put a cached access
// token in its Authorization header. A 403 is dropped like any other 4xx;
// a failed token request is an error without an answer, retried.
//
// Before each send, and when the retries of a batch reach its oldest
// sample's sample_age_limit, samples past that limit are dropped and
// counted as too_old (sampleage.go), as Prometheus does.
//
// The number of shards follows the load, between min_shards and max_shards
// (reshard.go, after Prometheus' queue manager): every 10 s moving averages
// of the samples in, out and dropped and of the time spent sending give the
// shards needed; changes within 30 % are ignored, and none happens while
// requests are retried or nothing got through. A change starts a new
// generation of shards (lanes.go) for the samples queued from then on; it
// sends nothing until the old one has sent all it holds, so every series
// stays in order.
//
// With disk_buffer (durable.go), the producer first writes every snapshot
// whole to a frame log on disk (package framelog): each as its difference
// from the one before, on a keyframe per segment, fsynced before it counts
// as queued, so an outage of hours at 10k pods costs tens of megabytes.
// It then reads the frames back in order and appends their samples to the
// shards as above; a frame is acknowledged in the log once every shard has
// settled its samples. Past max_retry_duration a batch is kept and tried
// again; past max_bytes the oldest snapshots are dropped whole and counted.
// After a kill the agent resumes where it stopped and sends again only the
// snapshots in flight (counted as resent).
//
// The queue never imports package watch: it only knows encoded samples.
//
// [go-retryablehttp]: https://github.com/hashicorp/go-retryablehttp
package queue
